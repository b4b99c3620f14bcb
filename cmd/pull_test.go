package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
	"folio/models/synth"
)

func tinyModel(t *testing.T, seed uint64) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(p, "llama", gguf.TypeQ8_0, seed); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPullCommand: folio pull (no terminal: plain lines) registers the
// model in FOLIO_HOME, and run finds it there.
func TestPullCommand(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := tinyModel(t, 1)
	hub.Publish("library", "tiny", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: weights})
	t.Setenv("FOLIO_HOME", t.TempDir())
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	name := hub.Host() + "/library/tiny"
	out, err := execute(t, "pull", "--insecure", name)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	layer := "pulling " + fakehub.Digest(weights)[7:19]
	size := humanBytes(int64(len(weights)))
	for _, want := range []string{"pulling manifest\n", layer + ": 0% of " + size + "\n", layer + ": 100% of " + size + "\n",
		"verifying sha256 digest\n", "writing manifest\n", "success\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("pull printed\n%s\nwithout %q", out, want)
		}
	}
	out, err = execute(t, "run", name, "--num-predict", "3", "--temperature", "0", "hi")
	if err != nil || out == "\n" {
		t.Errorf("run the pulled model: %q, %v", out, err)
	}
	if _, err := execute(t, "pull", "--insecure", hub.Host()+"/library/nosuch"); err == nil || !strings.Contains(err.Error(), "no such model") {
		t.Errorf("pull a missing model: %v", err)
	}
}

// TestRunPullsMissing: run pulls a model neither FOLIO_MODELS_PATH nor the
// registry has, then runs it.
func TestRunPullsMissing(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	hub.AddRepoFile("org/tiny-GGUF", "tiny-Q4_K_M.gguf", tinyModel(t, 2), "")
	t.Setenv("FOLIO_HF_ENDPOINT", hub.URL)
	t.Setenv("FOLIO_HOME", t.TempDir())
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	out, err := execute(t, "run", "hf.co/org/tiny-GGUF", "--num-predict", "3", "--temperature", "0", "hi")
	if err != nil || out == "\n" {
		t.Fatalf("run: %q, %v", out, err)
	}
	if hub.Requests.Load() == 0 {
		t.Error("nothing was pulled")
	}
}

// TestCreateCommand: folio create from a Modelfile (copied and --link),
// and a Modelfile error names the file and the line.
func TestCreateCommand(t *testing.T) {
	dir := t.TempDir()
	home := t.TempDir()
	t.Setenv("FOLIO_HOME", home)
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	if err := os.WriteFile(filepath.Join(dir, "tiny.gguf"), tinyModel(t, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, "Modelfile")
	os.WriteFile(mf, []byte("FROM ./tiny.gguf\nPARAMETER temperature 0\nSYSTEM \"\"\"Be\nbrief.\"\"\"\n"), 0o644)
	for _, args := range [][]string{{"create", "copied", "-f", mf}, {"create", "linked", "--link", "-f", mf}} {
		out, err := execute(t, args...)
		if err != nil || !strings.HasSuffix(out, "success\n") {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		out, err = execute(t, "run", args[1], "--num-predict", "3", "hi")
		if err != nil || out == "\n" {
			t.Errorf("run %s: %q, %v", args[1], out, err)
		}
	}
	bad := filepath.Join(dir, "Bad")
	os.WriteFile(bad, []byte("FROM ./tiny.gguf\n\nPARAMETR temperature 0\n"), 0o644)
	if _, err := execute(t, "create", "x", "-f", bad); err == nil || err.Error() != bad+` line 3: unknown instruction "PARAMETR": use FROM, PARAMETER, TEMPLATE, SYSTEM, MESSAGE or LICENSE` {
		t.Errorf("a bad Modelfile: %v", err)
	}
}

// TestRunPullsWithConfig: folio run --insecure pulls a missing model from
// a local registry, then runs it with its manifest's template and system
// prompt: the same output and prompt size as the rendered text sent to
// the bare weights file.
func TestRunPullsWithConfig(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := tinyModel(t, 2)
	hub.Publish("library", "tiny", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: weights},
		fakehub.Layer{MediaType: installer.MediaTemplate, Data: []byte("{{ .System }}|{{ .Prompt }}|")},
		fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("be brief")})
	t.Setenv("FOLIO_HOME", t.TempDir())
	t.Setenv("FOLIO_MODELS_PATH", t.TempDir())
	t.Setenv("FOLIO_HOST", "127.0.0.1:1") // no server: run serves in-process
	file := filepath.Join(t.TempDir(), "bare.gguf")
	if err := os.WriteFile(file, weights, 0o644); err != nil {
		t.Fatal(err)
	}
	name := hub.Host() + "/library/tiny"
	if _, err := execute(t, "run", name, "--num-predict", "8", "--temperature", "0", "hi"); err == nil {
		t.Fatal("run pulled from a plain-HTTP registry without --insecure")
	}
	got, err := execute(t, "run", "--insecure", name, "--num-predict", "8", "--temperature", "0", "--verbose", "hi")
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	want, err := execute(t, "run", file, "--num-predict", "8", "--temperature", "0", "--verbose", "be brief|hi|")
	if err != nil {
		t.Fatal(err)
	}
	cut := func(s string) string { // the answer and the prompt's size, without pull lines and speeds
		var keep []string
		for _, line := range strings.Split(s, "\n") {
			if i := strings.Index(line, " tokens,"); i >= 0 {
				line = line[:i]
			}
			if !strings.HasPrefix(line, "pulling") && !strings.HasPrefix(line, "verifying") && !strings.HasPrefix(line, "writing") &&
				!strings.HasPrefix(line, "success") && !strings.HasPrefix(line, "removing") {
				keep = append(keep, line)
			}
		}
		return strings.Join(keep, "\n")
	}
	if cut(got) != cut(want) {
		t.Errorf("run of the pulled model:\n%s\nthe rendered prompt on the bare file:\n%s", cut(got), cut(want))
	}
}
