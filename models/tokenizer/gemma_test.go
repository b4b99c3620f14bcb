package tokenizer

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// writeGemmaStyleVocab writes a vocabulary-only GGUF with Gemma's
// tokenizer settings over Llama 2's SentencePiece pieces (real scores, byte
// fallback; ggml-vocab-llama-spm.gguf): no space prefix
// (tokenizer.ggml.add_space_prefix false, as llama.cpp's converter writes
// for Gemma), Gemma's control tokens (<start_of_turn>, <end_of_turn>,
// <pad>, <mask>, [@BOS@]), unused ones (<unused0>…), and the user-defined
// tokens of Gemma's tokenizer_config: runs of newlines, tabs and spaces
// (the converter writes Gemma's ▁ runs with real spaces) and HTML tags,
// which split plain text before SentencePiece sees it.
func writeGemmaStyleVocab(t *testing.T) string {
	t.Helper()
	src, err := gguf.Open(fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	tokens, _ := arrayOf[string](src, "tokenizer.ggml.tokens")
	scores, _ := arrayOf[float32](src, "tokenizer.ggml.scores")
	types, _ := arrayOf[int32](src, "tokenizer.ggml.token_type")
	tokens, scores, types = slices.Clone(tokens), slices.Clone(scores), slices.Clone(types)
	add := func(text string, typ TokenType) {
		tokens, scores, types = append(tokens, text), append(scores, -1000), append(types, int32(typ))
	}
	for _, s := range []string{"<pad>", "<mask>", "[@BOS@]", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"} {
		add(s, TypeControl)
	}
	for i := range 6 {
		add(fmt.Sprintf("<unused%d>", i), TypeUnused)
	}
	for n := 1; n <= 31; n++ {
		add(strings.Repeat("\n", n), TypeUserDefined)
		if n >= 2 {
			add(strings.Repeat(" ", n), TypeUserDefined)
		}
		add(strings.Repeat("\t", n), TypeUserDefined)
	}
	for _, tag := range []string{"table", "tr", "td", "h1", "h2", "strong", "em", "code", "pre", "br", "li", "ul"} {
		add("<"+tag+">", TypeUserDefined)
		add("</"+tag+">", TypeUserDefined)
	}
	w := gguf.NewWriter()
	for _, kv := range src.KV {
		switch kv.Key {
		case "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.add_space_prefix":
		default:
			w.Set(kv.Key, kv.Value)
		}
	}
	w.Set("general.name", "gemma-style")
	w.Set("tokenizer.ggml.tokens", gguf.Array{Elem: gguf.ValueString, Values: tokens})
	w.Set("tokenizer.ggml.scores", gguf.Array{Elem: gguf.ValueFloat32, Values: scores})
	w.Set("tokenizer.ggml.token_type", gguf.Array{Elem: gguf.ValueInt32, Values: types})
	w.Set("tokenizer.ggml.add_space_prefix", false)
	path := filepath.Join(t.TempDir(), "gemma-style.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// gemmaTexts are strings where Gemma's settings matter: leading and inner
// whitespace runs (user-defined tokens), no space prefix, text around
// user-defined and control tokens, byte fallback, code.
var gemmaTexts = []string{
	"Hello world",
	" Hello world",
	"  two leading spaces",
	"a  b   c    d\t\te\n\nf\n\n\ng",
	"trailing   ",
	"\n",
	"\n\n\n\n",
	strings.Repeat(" ", 40) + "forty spaces",
	strings.Repeat("\n", 33),
	"<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
	"<start_of_turn>model\n  indented reply<end_of_turn>",
	"<table><tr><td>cell</td></tr></table> and <h1>Title</h1>",
	"<strong>bold</strong><em> spaced </em>",
	"<unused0> is never matched, <mask> and <pad> are",
	"日本語のテキストと中文混合。",
	"emoji 🦙🚀 family 👨‍👩‍👧‍👦 flag 🇫🇷 ❤️",
	"Ελληνικά και русский текст, مرحبا بالعالم",
	"café naïve résumé, and decomposed cafe\u0301",
	"\u00a0no-break\u2003em space\u200bzero width",
	"func main() {\n\tfmt.Println(\"hi\")\n\t\treturn\n}\n",
	"def f(x):\n    return x  # four spaces\n        pass\n",
	"a literal ▁ mark and ▁▁ two",
	"<0x0A> and <s> and </s> as text",
	"1234567890 3.14159 -2.5e-10 0x1F 1,000,000",
	"\u0001\u007f control characters \r\n\r\n",
}

// TestGemmaStyleVocabMatchesLlamaCpp: a Gemma-style SentencePiece vocabulary
// tokenizes every gemmaTexts string as llama.cpp does, with special-token
// parsing (a chat prompt) and without (user text, where <start_of_turn>
// stays text but user-defined tokens still split it). The strings go to
// llama.cpp in one call per mode, joined by the user-defined token <br>,
// which splits the text in both modes and is in none of them.
func TestGemmaStyleVocabMatchesLlamaCpp(t *testing.T) {
	path := writeGemmaStyleVocab(t)
	tok := openTokenizer(t, path)
	if tok.Vocab().AddSpacePrefix {
		t.Fatal("add_space_prefix false was not read")
	}
	const sep = "<br>"
	sepID, _ := tok.Vocab().ID(sep)
	for _, special := range []bool{true, false} {
		ref := llamaCppIDs(t, path, strings.Join(gemmaTexts, sep), special)
		segments := spmSplitIDs(ref, sepID)
		if len(segments) != len(gemmaTexts) {
			t.Fatalf("parse special %v: llama.cpp gave %d segments for %d texts", special, len(segments), len(gemmaTexts))
		}
		for i, text := range gemmaTexts {
			got := tok.Encode(text, EncodeOptions{ParseSpecial: special})
			if !slices.Equal(got, segments[i]) {
				t.Errorf("case %d, parse special %v, %q:\n folio     %s\n llama.cpp %s", i, special, text,
					spmPieces(tok, got), spmPieces(tok, segments[i]))
			}
		}
	}
}

// TestGemmaStyleVocabRoundTrip: decoding gives the text back (no space
// prefix to drop), control tokens aside; a literal ▁ is SentencePiece's
// space and comes back as one, in llama.cpp too.
func TestGemmaStyleVocabRoundTrip(t *testing.T) {
	tok := openTokenizer(t, writeGemmaStyleVocab(t))
	for _, text := range gemmaTexts {
		if strings.Contains(text, "\u2581") {
			continue
		}
		ids := tok.Encode(text, EncodeOptions{})
		if got := tok.Decode(ids, DecodeOptions{Special: true}); got != text {
			got, _ := json.Marshal(got)
			t.Errorf("%q decodes to %s", text, got)
		}
	}
}
