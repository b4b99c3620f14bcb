package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

// TestRunStories260KGreedy: `folio run stories260k --temperature 0
// --num-predict N ""` prints llama2.c's published greedy text byte for
// byte, for both published step counts.
func TestRunStories260KGreedy(t *testing.T) {
	t.Setenv("FOLIO_MODELS_PATH", fixtures.Models(t))
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.llama2c-greedy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name         string `json:"name"`
			Steps        int    `json:"steps"`
			ExpectedText string `json:"expected_text"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no cases in stories260K.llama2c-greedy.json")
	}
	for _, c := range ref.Cases {
		for _, kv := range []string{"f16", "f32"} {
			out, err := execute(t, "run", "stories260k", "--temperature", "0", "--kv-type", kv,
				"--num-predict", fmt.Sprint(c.Steps), "")
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			if got := strings.TrimSuffix(out, "\n"); got != c.ExpectedText {
				t.Errorf("%s, %s KV cache: output differs from llama2.c's:\n--- got\n%s\n--- want\n%s", c.Name, kv, got, c.ExpectedText)
			}
		}
	}
}

func TestRunSeededSampling(t *testing.T) {
	t.Setenv("FOLIO_MODELS_PATH", fixtures.Models(t))
	args := []string{"run", "stories260k", "--seed", "7", "--num-predict", "40", "--temperature", "0.9", "Once upon a time"}
	a, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if a != b || len(a) < 40 {
		t.Errorf("seed 7 gave different or short texts:\n%q\n%q", a, b)
	}
}

func TestRunErrors(t *testing.T) {
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "stories260k"}, "fetch https://huggingface.co/ggml-org/models"},
		{[]string{"run", "no-such-model"}, "no no-such-model.gguf is in FOLIO_MODELS_PATH"},
	} {
		t.Run(c.want, func(t *testing.T) {
			_, err := execute(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
			}
		})
	}
	t.Setenv("FOLIO_MODELS_PATH", fixtures.Models(t))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "stories260k", "--temperature", "-1", "hi"}, "temperature -1"},
		{[]string{"run", "stories260k", "--kv-type", "q4_0", "hi"}, "use f16, q8_0"},
		{[]string{"run", "stories260k", "--kv-type", "q8_0", "hi"}, "multiple of 32"},
		{[]string{"run", "stories260k", "--num-ctx", "1000000000", "hi"}, "lower num_ctx"},
	} {
		t.Run(c.want, func(t *testing.T) {
			_, err := execute(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
			}
		})
	}
	// a prompt longer than the context is truncated, as ollama run's is
	if out, err := execute(t, "run", "stories260k", "--num-ctx", "8", strings.Repeat("word ", 20)); err != nil {
		t.Errorf("a prompt over --num-ctx 8: %v (%q), want a truncated answer", err, out)
	}
}

func TestDevLogitsJSON(t *testing.T) {
	t.Setenv("FOLIO_MODELS_PATH", fixtures.Models(t))
	out, err := execute(t, "dev", "logits", "stories260k", "--tokens", "[1,403,407]", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		IDs    []int32   `json:"ids"`
		Logits []float32 `json:"logits"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %.200s", err, out)
	}
	if len(got.IDs) != 3 || len(got.Logits) != 512 {
		t.Errorf("ids %v and %d logits, want 3 ids and 512 logits", got.IDs, len(got.Logits))
	}
	if _, err := execute(t, "dev", "logits", "stories260k", "--tokens", "[1,99999]"); err == nil || !strings.Contains(err.Error(), "outside the vocabulary") {
		t.Errorf("token outside the vocabulary: got %v", err)
	}
}

// TestRunThroughServer: with a server at FOLIO_HOST, run uses it (the
// model is not in FOLIO_MODELS_PATH here) and prints what it prints in
// process: llama2.c's greedy text from BOS, the same continuation of a
// prompt given as an argument or piped in.
func TestRunThroughServer(t *testing.T) {
	t.Setenv("FOLIO_MODELS_PATH", fixtures.Models(t))
	args := []string{"run", "stories260k", "--seed", "3", "--temperature", "0.7", "--num-predict", "60", "Lily and Tom"}
	local, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.llama2c-greedy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Steps        int    `json:"steps"`
			ExpectedText string `json:"expected_text"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil || len(ref.Cases) == 0 {
		t.Fatalf("stories260K.llama2c-greedy.json: %v", err)
	}

	startServer(t)
	out, err := execute(t, "run", "stories260k", "--temperature", "0", "--num-predict", fmt.Sprint(ref.Cases[0].Steps), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSuffix(out, "\n"); got != ref.Cases[0].ExpectedText {
		t.Errorf("greedy from BOS through the server:\n--- got\n%s\n--- want\n%s", got, ref.Cases[0].ExpectedText)
	}
	remote, err := execute(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if remote != local {
		t.Errorf("seeded sampling through the server:\n%q\nin process:\n%q", remote, local)
	}
	piped, err := executeIn(t, strings.NewReader("Lily and Tom"), args[:len(args)-1]...)
	if err != nil {
		t.Fatal(err)
	}
	if piped != local {
		t.Errorf("prompt piped in:\n%q\nas an argument:\n%q", piped, local)
	}
	if _, err := execute(t, "run", "nosuch", "hi"); err == nil || !strings.Contains(err.Error(), "no nosuch.gguf") {
		t.Errorf("an unknown model through the server: %v", err)
	}
}
