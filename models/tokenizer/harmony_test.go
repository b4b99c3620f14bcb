package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// gpt-oss's harmony tokens (their ids in o200k_harmony are 200005 …; here
// they follow the gpt-2 vocabulary), as control tokens, which is how
// gpt-oss files type them.
var harmonyVocab = []string{"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|return|>", "<|call|>"}

// TestHarmonyTokensMatchLlamaCpp: with the gpt-4o (o200k) pre-tokenizer
// that gpt-oss files name and harmony's tokens stored as control tokens,
// rendered harmony text tokenizes as llama.cpp tokenizes it with and
// without special-token parsing: <|channel|>, <|message|>, <|start|> and
// <|constrain|> are user-defined there (matched even when special text is
// not parsed), and so is <|end|>, which beside <|return|> and <|call|> no
// longer ends generation; <|return|> and <|call|> stay control. Decoding
// shows the five and hides the others, as llama.cpp's detokenizer.
func TestHarmonyTokensMatchLlamaCpp(t *testing.T) {
	fixtures.Llamaref(t) // skips when llama.cpp is not available
	path := withHarmonyTokens(t, fixtures.Model(t, "ggml-vocab-gpt-2.gguf"))
	tok := openTokenizer(t, path)
	texts := []string{
		"<|start|>assistant<|channel|>analysis<|message|>The user asks 2+2. Simple.<|end|>",
		"<|start|>assistant<|channel|>final<|message|>4<|return|>",
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
		"<|start|>system<|message|>You are ChatGPT.\nReasoning: high\n\n# Valid channels: analysis, commentary, final.<|end|><|start|>user<|message|>Hi  there<|end|>",
		"text that mentions <|channel|> and <|end|> inline, <|message|>x",
		"<|channel|><|channel|>  <|start|>\n<|constrain|>",
	}
	for _, text := range texts {
		for _, special := range []bool{false, true} {
			got := tok.Encode(text, EncodeOptions{ParseSpecial: special})
			if want := llamaCppIDs(t, path, text, special); !slices.Equal(got, want) {
				t.Errorf("%q, special %v:\n folio     %v\n llama.cpp %v", text, special, got, want)
			}
		}
	}
	for _, text := range harmonyVocab {
		id, _ := tok.vocab.ID(text)
		want := text
		if text == "<|return|>" || text == "<|call|>" {
			want = ""
		}
		if got := string(tok.TokenBytes(id, DecodeOptions{})); got != want {
			t.Errorf("%s decodes as %q, want %q", text, got, want)
		}
	}
	for _, text := range []string{"<|return|>", "<|call|>", "<|end|>"} {
		id, _ := tok.vocab.ID(text)
		if got, want := tok.vocab.IsEOG(id), text != "<|end|>"; got != want {
			t.Errorf("%s ends generation: %v, want %v", text, got, want)
		}
	}
}

// withHarmonyTokens writes a copy of the GGUF file at path with the
// gpt-4o pre-tokenizer and harmonyVocab appended as control tokens.
func withHarmonyTokens(t *testing.T, path string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tokens, ok := arrayOf[string](f, "tokenizer.ggml.tokens")
	types, ok2 := arrayOf[int32](f, "tokenizer.ggml.token_type")
	if !ok || !ok2 {
		t.Fatal("the vocabulary has no tokens or token types")
	}
	tokens, types = slices.Clone(tokens), slices.Clone(types)
	for _, text := range harmonyVocab {
		tokens = append(tokens, text)
		types = append(types, int32(TypeControl))
	}
	w := gguf.NewWriterFrom(f)
	w.Set("tokenizer.ggml.pre", "gpt-4o")
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.token_type", types)
	out := filepath.Join(t.TempDir(), "vocab-harmony.gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}
