package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"folio/internal/fixtures"
)

// spmVocab builds a SentencePiece vocabulary from pieces and their scores:
// <unk>, <s>, </s> first, then the given normal pieces, then byteTokens.
func spmVocab(pieces map[string]float32, byteTokens ...byte) *Vocab {
	v := &Vocab{Model: "llama", BOS: 1, EOS: 2, UNK: 0, AddBOS: true, AddSpacePrefix: true,
		EOT: NoToken, EOM: NoToken, PAD: NoToken, SEP: NoToken, CLS: NoToken, MASK: NoToken}
	add := func(piece string, score float32, typ TokenType) {
		v.Tokens = append(v.Tokens, piece)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	add("<unk>", 0, TypeUnknown)
	add("<s>", 0, TypeControl)
	add("</s>", 0, TypeControl)
	keys := make([]string, 0, len(pieces))
	for p := range pieces {
		keys = append(keys, p)
	}
	slices.Sort(keys)
	for _, p := range keys {
		add(p, pieces[p], TypeNormal)
	}
	for _, b := range byteTokens {
		add(fmt.Sprintf("<0x%02X>", b), 0, TypeByte)
	}
	v.ids = make(map[string]int32, len(v.Tokens))
	for i, t := range v.Tokens {
		v.ids[t] = int32(i)
	}
	return v
}

// spmPieces renders ids as their pieces joined by '|'.
func spmPieces(tok *Tokenizer, ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = tok.Piece(id)
	}
	return strings.Join(s, "|")
}

// TestSPMMerges checks the merge order and fallbacks on small vocabularies
// where the expected pieces can be worked out by hand.
func TestSPMMerges(t *testing.T) {
	letters := map[string]float32{"▁": -1, "a": -1, "b": -1, "c": -1}
	with := func(extra map[string]float32) map[string]float32 {
		m := map[string]float32{}
		for k, v := range letters {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name   string
		pieces map[string]float32
		bytes  []byte
		text   string
		want   string
	}{
		{"no merges", letters, nil, "abc", "▁|a|b|c"},
		{"highest score first", with(map[string]float32{"ab": -5, "bc": -2}), nil, "abc", "▁|a|bc"},
		{"ties go to the leftmost", with(map[string]float32{"ab": -2, "bc": -2}), nil, "abc", "▁|ab|c"},
		{"bigger pieces are built from merged ones", with(map[string]float32{"ab": -2, "abc": -3, "▁abc": -4}), nil, "abc", "▁abc"},
		{"a piece unreachable by pairs is not used", with(map[string]float32{"abc": 0}), nil, "abc", "▁|a|b|c"},
		{"score beats length", with(map[string]float32{"▁a": -9, "ab": -1, "▁ab": -3}), nil, "ab", "▁ab"},
		{"spaces are pieces", with(map[string]float32{"▁▁": -1}), nil, "  a", "▁▁|▁|a"},
		{"a piece across a space joins words", with(map[string]float32{"a▁": -1, "a▁b": -1}), nil, "a b", "▁|a▁b"},
		{"byte fallback", letters, []byte{0xC3, 0xA9}, "aé", "▁|a|<0xC3>|<0xA9>"},
		{"UNK without byte tokens", letters, nil, "aé", "▁|a|<unk>|<unk>"},
		{"byte fallback, then UNK", letters, []byte{0xC3}, "é", "▁|<0xC3>|<unk>"},
		{"control text is plain text", with(map[string]float32{"<": -1, "s": -1, ">": -1}), nil, "<s>", "▁|<|s|>"},
		{"one-byte piece stands in for a missing byte token", with(map[string]float32{"\t": -1}), nil, "a\t", "▁|a|\t"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := NewFromVocab(spmVocab(tc.pieces, tc.bytes...))
			if err != nil {
				t.Fatal(err)
			}
			if got := spmPieces(tok, tok.Encode(tc.text, EncodeOptions{})); got != tc.want {
				t.Fatalf("Encode(%q) = %s, want %s", tc.text, got, tc.want)
			}
		})
	}
}

// TestSPMSpacePrefix: the prefix goes only where llama.cpp puts it.
func TestSPMSpacePrefix(t *testing.T) {
	v := spmVocab(map[string]float32{"▁": -1, "a": -1, "▁a": -2})
	tok, err := NewFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	m := tok.model
	if got := spmPieces(tok, m.appendText(nil, "a", true)); got != "▁a" {
		t.Errorf("after special: %s", got)
	}
	if got := spmPieces(tok, m.appendText(nil, "a", false)); got != "a" {
		t.Errorf("mid-text: %s", got)
	}
	if got := spmPieces(tok, tok.Encode("a<s>a", EncodeOptions{ParseSpecial: true})); got != "▁a|<s>|▁a" {
		t.Errorf("around a special token: %s", got)
	}
	v.AddSpacePrefix = false
	tok, err = NewFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	if got := spmPieces(tok, tok.Encode("a a", EncodeOptions{})); got != "a|▁a" {
		t.Errorf("add_space_prefix false: %s", got)
	}
}

// TestSPMBrokenUTF8: symbols follow lead bytes as llama.cpp's
// unicode_len_utf8 does; every byte still comes out as a byte token.
func TestSPMBrokenUTF8(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	for _, text := range []string{"\xff", "a\x80b", "\xe2\x96", "\xf0\x9f\xa6", "\xe2ab", "\xc3"} {
		ids := tok.Encode(text, EncodeOptions{})
		var raw []byte
		for _, id := range ids {
			raw = append(raw, tok.TokenBytes(id, DecodeOptions{})...)
		}
		if string(raw) != " "+text {
			t.Errorf("Encode(%q) = %s: bytes %q", text, spmPieces(tok, ids), raw)
		}
	}
}

// TestSPMLlama2c: Llama 2 encode vectors published with llama2.c (BOS added).
func TestSPMLlama2c(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	data, err := os.ReadFile(fixtures.Model(t, "llama2-spm.llama2c-encode.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"expected_ids_with_bos"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) != 5 {
		t.Fatalf("%d cases, want 5", len(file.Cases))
	}
	for i, c := range file.Cases {
		if got := tok.Encode(c.Text, EncodeOptions{AddSpecial: true}); !slices.Equal(got, c.IDs) {
			t.Errorf("case %d %q:\n got %v\nwant %v", i, c.Text, got, c.IDs)
		}
	}
}

// llamaCppIDs returns llama.cpp's ids for text (no BOS), special tokens
// parsed or not.
func llamaCppIDs(t *testing.T, path, text string, parseSpecial bool) []int32 {
	t.Helper()
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"tokenize", path, "--prompt-file", prompt, "--compact"}
	if parseSpecial {
		args = append(args, "--special")
	}
	var out struct {
		Tokenization struct {
			NoSpecial struct {
				IDs []int32 `json:"ids"`
			} `json:"no_special"`
		} `json:"tokenization"`
	}
	if err := json.Unmarshal(fixtures.RunLlamaref(t, args...), &out); err != nil {
		t.Fatalf("llamaref output: %v", err)
	}
	return out.Tokenization.NoSpecial.IDs
}

// spmCompareWithLlamaCpp encodes each text with folio and all of them with one
// llamaref call: the texts are joined by the EOS token's text and parsed with
// special tokens, so each one is tokenized on its own after a special token,
// with the space prefix, as Encode tokenizes it alone.
func spmCompareWithLlamaCpp(t *testing.T, path string, texts []string) {
	tok := openTokenizer(t, path)
	sep := tok.Piece(tok.vocab.EOS)
	for _, s := range texts {
		if s == "" || strings.Contains(s, sep) || len(tok.partition(s, true)) != 1 {
			t.Fatalf("%q cannot go in a batch: it is empty or holds special-token text", s)
		}
	}
	ref := llamaCppIDs(t, path, strings.Join(texts, sep), true)
	segments := spmSplitIDs(ref, tok.vocab.EOS)
	if len(segments) != len(texts) {
		t.Fatalf("llama.cpp gave %d segments for %d texts: %v", len(segments), len(texts), ref)
	}
	for i, s := range texts {
		if got := tok.Encode(s, EncodeOptions{}); !slices.Equal(got, segments[i]) {
			t.Errorf("%q:\n folio     %s\n llama.cpp %s", s, spmPieces(tok, got), spmPieces(tok, segments[i]))
		}
	}
}

// spmSplitIDs splits ids at every sep.
func spmSplitIDs(ids []int32, sep int32) [][]int32 {
	var out [][]int32
	start := 0
	for i, id := range ids {
		if id == sep {
			out = append(out, ids[start:i])
			start = i + 1
		}
	}
	return append(out, ids[start:])
}

// spmTricky are strings where SentencePiece tokenizers tend to differ.
var spmTricky = []string{
	" ",
	"   ",
	"\n",
	"  two leading spaces",
	"trailing spaces   ",
	"multiple    inner     spaces",
	"\ttabs\tbetween\t\twords\t",
	"line one\nline two\r\nline three\n\n\n",
	"日本語のテキストと中文混合。",
	"한국어 텍스트입니다",
	"emoji 🦙🚀 family 👨‍👩‍👧‍👦 flag 🇫🇷 ❤️",
	"Ελληνικά και русский текст, مرحبا بالعالم",
	"1234567890 3.14159 -2.5e-10 0x1F 1,000,000",
	"pneumonoultramicroscopicsilicovolcanoconiosis supercalifragilisticexpialidocious",
	strings.Repeat("abc", 300),
	"café naïve résumé, and decomposed cafe\u0301",
	"func main() { fmt.Println(\"hi\") } // x := a[i+1:j]",
	"a literal ▁ mark and ▁▁ two",
	"<0x0A> and <unk and s> and </s",
	"\u00a0no-break\u2003em space\u200bzero width",
	"\u0001\u007f control characters",
	"ǅ ﬁ ligatures and Ⅻ numerals",
}

func TestSPMMatchesLlamaCpp(t *testing.T) {
	t.Run("llama-spm", func(t *testing.T) {
		spmCompareWithLlamaCpp(t, fixtures.Model(t, "ggml-vocab-llama-spm.gguf"), spmTricky)
	})
	t.Run("stories260K", func(t *testing.T) {
		spmCompareWithLlamaCpp(t, fixtures.Model(t, "stories260K.gguf"), []string{
			"Once upon a time, there was a little girl named Lily.",
			"Hello wörld 🦙\n\n  x",
			"日本語",
			"  two spaces\tand a tab\n",
			"Zebra quixotic jumps!",
		})
	})
	// Special-token text as plain text cannot be batched: one call each.
	for _, c := range []struct{ vocab, text string }{
		{"ggml-vocab-llama-spm.gguf", "Text with <s> and </s> and <unk> inside"},
		{"stories260K.gguf", "<s>Once</s> <s>"},
	} {
		t.Run("plain special text "+c.vocab, func(t *testing.T) {
			path := fixtures.Model(t, c.vocab)
			tok := openTokenizer(t, path)
			want := llamaCppIDs(t, path, c.text, false)
			if got := tok.Encode(c.text, EncodeOptions{}); !slices.Equal(got, want) {
				t.Errorf("%q:\n folio     %s\n llama.cpp %s", c.text, spmPieces(tok, got), spmPieces(tok, want))
			}
		})
	}
}

// spmRoundTrip are strings Decode(Encode(s)) must give back unchanged.
var spmRoundTrip = append([]string{
	"Hello world",
	" leading space",
	"two  spaces and a trailing one ",
	"🦙 llama",
	"mixed 中文 and русский and ελληνικά",
	"<s> and </s> as plain text",
}, spmTricky[:17]...) // the rest hold ▁, which decodes as a space

func TestSPMDecodeRoundTrip(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	for _, s := range spmRoundTrip {
		for _, opt := range []EncodeOptions{{}, {AddSpecial: true}} {
			ids := tok.Encode(s, opt)
			if got := tok.Decode(ids, DecodeOptions{}); got != s {
				t.Errorf("Decode(Encode(%q, %+v)) = %q (%s)", s, opt, got, spmPieces(tok, ids))
			}
			// Streaming: every chunk is whole UTF-8 and the chunks add up.
			d := tok.NewDetokenizer(DecodeOptions{})
			var b strings.Builder
			for _, id := range ids {
				chunk := d.Add(id)
				if !utf8.ValidString(chunk) {
					t.Errorf("%q: Add(%s) emitted %q", s, tok.Piece(id), chunk)
				}
				b.WriteString(chunk)
			}
			b.WriteString(d.Flush())
			if b.String() != s {
				t.Errorf("streamed %q, want %q", b.String(), s)
			}
		}
	}
}

// TestSPMStreamByteFallback: an emoji the vocabulary lacks is four byte
// tokens, and the detokenizer holds its first three bytes back.
func TestSPMStreamByteFallback(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	ids := tok.Encode("a🦙", EncodeOptions{})
	if got, want := spmPieces(tok, ids), "▁a|<0xF0>|<0x9F>|<0xA6>|<0x99>"; got != want {
		t.Fatalf("Encode = %s, want %s", got, want)
	}
	d := tok.NewDetokenizer(DecodeOptions{})
	var got []string
	for _, id := range ids {
		got = append(got, d.Add(id))
	}
	if want := []string{"a", "", "", "", "🦙"}; !slices.Equal(got, want) {
		t.Fatalf("emitted %q, want %q", got, want)
	}
}

// TestSPMLongRun: a megabyte without spaces or special tokens is one merge
// problem of a million symbols; it must stay O(n log n).
func TestSPMLongRun(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	s := strings.Repeat("abcdefghij日本🦙", 1<<16) // 1.1 MB
	ids := tok.Encode(s, EncodeOptions{})
	if got := tok.Decode(ids, DecodeOptions{}); got != s {
		t.Fatalf("round trip of a long run differs (%d tokens)", len(ids))
	}
}

func FuzzSPMRoundTrip(f *testing.F) {
	for _, s := range spmRoundTrip {
		f.Add(s)
	}
	tok := openTokenizer(f, fixtures.Model(f, "ggml-vocab-llama-spm.gguf"))
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s, EncodeOptions{})
		if !utf8.ValidString(s) || strings.Contains(s, spaceMark) {
			return // invalid UTF-8 decodes as U+FFFD, ▁ as a space
		}
		if got := tok.Decode(ids, DecodeOptions{}); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q (%s)", s, got, spmPieces(tok, ids))
		}
	})
}

// naiveSPM is the merge loop at its plainest, for the whole run at once: scan
// every adjacent pair, merge the best (highest score, then leftmost), repeat.
// O(n²), for short texts.
func naiveSPM(v *Vocab, text string) []int32 {
	text = strings.ReplaceAll(" "+text, " ", spaceMark)
	var syms []string
	for len(text) > 0 {
		n := min(utf8SeqLen(text[0]), len(text))
		syms, text = append(syms, text[:n]), text[n:]
	}
	for {
		best, bestScore := -1, float32(0)
		for i := 0; i+1 < len(syms); i++ {
			if id, ok := v.ids[syms[i]+syms[i+1]]; ok && (best < 0 || v.Scores[id] > bestScore) {
				best, bestScore = i, v.Scores[id]
			}
		}
		if best < 0 {
			break
		}
		syms[best] += syms[best+1]
		syms = slices.Delete(syms, best+1, best+2)
	}
	var ids []int32
	for _, s := range syms {
		if id, ok := v.ids[s]; ok {
			ids = append(ids, id)
			continue
		}
		for _, c := range []byte(s) {
			ids = append(ids, v.ids[fmt.Sprintf("<0x%02X>", c)])
		}
	}
	return ids
}

// FuzzSPMNaive checks Encode, which merges word by word with a heap, against
// naiveSPM, which merges the whole run by scanning.
func FuzzSPMNaive(f *testing.F) {
	for _, s := range append(spmTricky[:len(spmTricky):len(spmTricky)], spmRoundTrip...) {
		f.Add(s)
	}
	mixed := fixtures.MixedText(1<<14, 7)
	for i := 0; i+256 <= len(mixed); i += 256 {
		f.Add(mixed[i : i+256])
	}
	f.Add("\xe2\x96\x81\x81 \x81\xe2 \xe2\x96 \xf0")
	tok := openTokenizer(f, fixtures.Model(f, "ggml-vocab-llama-spm.gguf"))
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || len(s) > 4096 || len(tok.partition(s, false)) > 1 {
			return // too slow for the naive loop, or holds a special token
		}
		if got, want := tok.Encode(s, EncodeOptions{}), naiveSPM(tok.vocab, s); !slices.Equal(got, want) {
			t.Fatalf("%q:\n Encode %s\n naive  %s", s, spmPieces(tok, got), spmPieces(tok, want))
		}
	})
}

// BenchmarkEncodeSPM encodes 1 MiB of mixed text, the text bench/tokenize.sh
// gives llama.cpp.
func BenchmarkEncodeSPM(b *testing.B) {
	tok := openTokenizer(b, fixtures.Model(b, "ggml-vocab-llama-spm.gguf"))
	text := fixtures.MixedText(1<<20, 1)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, EncodeOptions{})
	}
}

// TestPhi3SpecialRStrip: in a model named Phi-3, special tokens take the
// whitespace after them (all but <unk>, <s> and <|endoftext|>), as in
// llama.cpp, so a rendered Phi-3 chat tokenizes as llama.cpp tokenizes it.
func TestPhi3SpecialRStrip(t *testing.T) {
	path := fixtures.Model(t, "ggml-vocab-phi-3.gguf") // general.name "Phi3"
	tok := openTokenizer(t, path)
	for _, text := range []string{
		"<|user|>\nhi there<|end|>\n<|assistant|>\n",
		"<|system|>\nYou are helpful.<|end|>\n<|user|>\n  indented\n\ntext <|end|>\n<|assistant|>\n",
		"<|user|> \t\r\n x<|end|><|end|>\n\n<|assistant|>",
		"a </s>  b <s>  c <|endoftext|>  d <unk>  e",
		"<|assistant|>\n\n\n",
		"\n<|user|>\n",
		"<|user|>\u00a0no-break space stays<|end|>\v\f",
	} {
		want := llamaCppIDs(t, path, text, true)
		if got := tok.Encode(text, EncodeOptions{ParseSpecial: true}); !slices.Equal(got, want) {
			t.Errorf("%q:\n folio     %s\n llama.cpp %s", text, spmPieces(tok, got), spmPieces(tok, want))
		}
	}
	// Without the name, nothing is stripped.
	v := *tok.Vocab()
	v.rstrip = nil
	plain, err := NewFromVocab(&v)
	if err != nil {
		t.Fatal(err)
	}
	if got := spmPieces(plain, plain.Encode("<|user|>\nhi", EncodeOptions{ParseSpecial: true})); got != "<|user|>|▁|<0x0A>|hi" {
		t.Errorf("without rstrip: %s", got)
	}
}
