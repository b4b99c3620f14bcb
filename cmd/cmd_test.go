package cmd

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// execute runs a new folio command tree with args and an empty stdin, and
// returns what it printed.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return executeIn(t, strings.NewReader(""), args...)
}

// executeIn is execute with stdin.
func executeIn(t *testing.T, stdin io.Reader, args ...string) (string, error) {
	t.Helper()
	root := NewRoot()
	var out bytes.Buffer
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestVersion(t *testing.T) {
	out, err := execute(t, "version")
	if err != nil || !strings.HasPrefix(out, "folio version ") {
		t.Fatalf("%q, %v", out, err)
	}
}

func TestShowByName(t *testing.T) {
	models := fixtures.Models(t)
	t.Setenv("FOLIO_MODELS_PATH", models)
	out, err := execute(t, "show", "stories260k")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "show-stories260k.txt", strings.ReplaceAll(out, models, "<models>"))

	out, err = execute(t, "show", "--verbose", "--max-array", "3", "stories260k")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "show-stories260k-verbose.txt", strings.ReplaceAll(out, models, "<models>"))
}

func TestShowJSON(t *testing.T) {
	out, err := execute(t, "show", "--json", fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata map[string]any `json:"metadata"`
		Tensors  []struct {
			Name   string   `json:"name"`
			Type   string   `json:"type"`
			Shape  []uint64 `json:"shape"`
			Offset uint64   `json:"offset"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("--json printed invalid JSON: %v\n%.300s", err, out)
	}
	tokens := got.Metadata["tokenizer.ggml.tokens"].(map[string]any)
	if tokens["length"] != float64(512) || len(tokens["head"].([]any)) != 16 || tokens["head"].([]any)[1] != "<s>" {
		t.Errorf("tokens shown as %v", tokens)
	}
	if got.Metadata["llama.block_count"] != float64(5) || got.Metadata["llama.attention.layer_norm_rms_epsilon"] != 1e-5 {
		t.Errorf("metadata: block_count %v, eps %v", got.Metadata["llama.block_count"],
			got.Metadata["llama.attention.layer_norm_rms_epsilon"])
	}
	if len(got.Tensors) != 48 {
		t.Fatalf("%d tensors", len(got.Tensors))
	}
	first := got.Tensors[0]
	if first.Name != "token_embd.weight" || first.Type != "F32" || first.Offset != 0 ||
		len(first.Shape) != 2 || first.Shape[0] != 64 || first.Shape[1] != 512 {
		t.Errorf("first tensor %+v", first)
	}
}

func TestShowErrors(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "notes.gguf")
	os.WriteFile(notGGUF, []byte("hello, this is text"), 0o644)
	t.Setenv("FOLIO_MODELS_PATH", dir)
	for _, tc := range []struct{ arg, msg string }{
		{"nosuchmodel", "no nosuchmodel.gguf is in FOLIO_MODELS_PATH"},
		{notGGUF, "not a GGUF file"},
		{"notes", "not a GGUF file"},
	} {
		if _, err := execute(t, "show", tc.arg); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("show %s: error %v, want one containing %q", tc.arg, err, tc.msg)
		}
	}
}
