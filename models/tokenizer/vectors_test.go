package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// vectorCase is one test string with the ids its authors' tokenizer gives
// (Hugging Face encode(text, add_special_tokens=False)).
type vectorCase struct {
	text string
	ids  []int32
}

// readVectors reads llama.cpp's NAME.gguf.inp / NAME.gguf.out pair: the
// strings separated by "\n__ggml_vocab_test__\n", one line of ids per string.
func readVectors(t testing.TB, ggufPath string) []vectorCase {
	t.Helper()
	inp, err := os.ReadFile(ggufPath + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(ggufPath + ".out")
	if err != nil {
		t.Fatal(err)
	}
	const sep = "\n__ggml_vocab_test__\n"
	texts := strings.Split(strings.TrimSuffix(string(inp), sep), sep)
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(texts) != len(lines) {
		t.Fatalf("%s: %d strings but %d lines of ids", ggufPath, len(texts), len(lines))
	}
	cases := make([]vectorCase, len(texts))
	for i, text := range texts {
		cases[i].text = text
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.ParseInt(f, 10, 32)
			if err != nil {
				t.Fatalf("%s.out line %d: %v", ggufPath, i+1, err)
			}
			cases[i].ids = append(cases[i].ids, int32(id))
		}
	}
	return cases
}

// openTokenizer loads the tokenizer of a GGUF file.
func openTokenizer(t testing.TB, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vocabsWithVectors lists the vocabularies in ../shared/models that have
// both a .gguf and test vectors.
func vocabsWithVectors(t *testing.T) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(fixtures.Models(t), "ggml-vocab-*.gguf"))
	var names []string
	for _, p := range paths {
		if _, err := os.Stat(p + ".inp"); err == nil {
			names = append(names, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "ggml-vocab-"), ".gguf"))
		}
	}
	if len(names) == 0 {
		t.Fatal("no vocab with test vectors in ../shared/models")
	}
	return names
}

// TestVectors: every case of every vocabulary with vectors, no BOS, special
// text not parsed, as llama.cpp's test-tokenizer-0 runs them.
func TestVectors(t *testing.T) {
	for _, name := range vocabsWithVectors(t) {
		t.Run(name, func(t *testing.T) {
			path := fixtures.Model(t, "ggml-vocab-"+name+".gguf")
			tok := openTokenizer(t, path)
			cases := readVectors(t, path)
			failed := 0
			for i, c := range cases {
				got := tok.Encode(c.text, EncodeOptions{})
				if !slices.Equal(got, c.ids) {
					failed++
					t.Errorf("case %d %q:\n got %v\nwant %v", i, c.text, got, c.ids)
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d cases differ", failed, len(cases))
			}
		})
	}
}
