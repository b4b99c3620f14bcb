package tokenizer

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

const bgeVocab = "ggml-vocab-bert-bge.gguf"

// wpmTokenizer is a WordPiece tokenizer over pieces, with [UNK] as id 0.
func wpmTokenizer(t *testing.T, pieces ...string) *Tokenizer {
	t.Helper()
	v := &Vocab{Model: "bert", Tokens: append([]string{"[UNK]"}, pieces...), ids: map[string]int32{},
		Lowercase: true, StripAccents: true}
	v.BOS, v.EOS, v.EOT, v.EOM, v.PAD, v.SEP, v.CLS, v.MASK =
		NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken
	v.UNK = 0
	for i, p := range v.Tokens {
		v.Types = append(v.Types, TypeNormal)
		v.ids[p] = int32(i)
	}
	v.Types[0] = TypeUnknown
	tok, err := NewFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// wpmPieces shows ids as their pieces, space-separated.
func wpmPieces(tok *Tokenizer, ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = tok.Piece(id)
	}
	return strings.Join(s, " ")
}

func TestWPMGreedyLongestMatch(t *testing.T) {
	tok := wpmTokenizer(t, "▁un", "▁una", "ff", "able", "▁a", "▁ab", "bcd",
		"▁,", "▁!", "▁hello", "▁caf", "e", "▁x", "▁▁", "▁ᄒ", "▁中")
	tests := []struct{ name, text, want string }{
		{"longest first", "unaffable", "▁una ff able"},
		{"lowercased, punctuation alone", "UNAFFABLE!", "▁una ff able ▁!"},
		{"greedy, no backtracking", "abcd", "[UNK]"}, // ▁ab then "cd" fails, though ▁a bcd would fit
		{"punctuation splits words", "a,hello", "▁a ▁, ▁hello"},
		{"accent stripped", "CAFÉ", "▁caf e"},
		{"unknown word alone", "zzz hello", "[UNK] ▁hello"},
		{"empty", "", ""},
		{"whitespace only", "  \t\n\u3000\u00a0 ", ""},
		{"format characters dropped", "\u200bhel\u00adlo\ufeff", "▁hello"},
		{"combining marks dropped", "cafe\u0301", "▁caf e"},
		{"hangul keeps its leading jamo", "한", "▁ᄒ"},
		{"CJK ideographs alone", "中中", "▁中 ▁中"},
		{"a literal ▁ starts a word piece", "▁", "▁▁"},
		{"ASCII symbols alone", "x$x", "▁x [UNK] ▁x"}, // "$" has no piece
		{"other symbols join the word", "x€x", "[UNK]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := wpmPieces(tok, tok.Encode(tc.text, EncodeOptions{})); got != tc.want {
				t.Fatalf("Encode(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestWPMNeedsUnknownToken(t *testing.T) {
	v := &Vocab{Model: "bert", Tokens: []string{"▁a"}, Types: []TokenType{TypeNormal}, UNK: NoToken}
	if _, err := NewFromVocab(v); !errors.Is(err, ErrVocab) {
		t.Fatalf("err = %v, want ErrVocab", err)
	}
}

func TestWPMDecodeRune(t *testing.T) {
	tests := []struct {
		in   string
		r    rune
		size int
	}{
		{"a", 'a', 1},
		{"é", 'é', 2},
		{"中", '中', 3},
		{"😀", '😀', 4},
		{"\x80", 0xFFFD, 1},         // stray continuation byte
		{"\xC3", 0xFFFD, 1},         // cut short
		{"\xE4\xB8", 0xFFFD, 1},     // cut short
		{"\xC3A", 0xFFFD, 1},        // not a continuation
		{"\xC1\x81", 'A', 2},        // overlong, accepted as llama.cpp does
		{"\xED\xA0\x80", 0xD800, 3}, // surrogate, accepted (and then dropped as Cs)
		{"\xF8\x80", 0xFFFD, 1},     // no such lead byte
		{"\xF5\x80\x80\x80", 0xFFFD, 4},
	}
	for _, tc := range tests {
		if r, size := decodeLenient(tc.in); r != tc.r || size != tc.size {
			t.Errorf("decodeLenient(%q) = %U, %d; want %U, %d", tc.in, r, size, tc.r, tc.size)
		}
	}
}

// TestWPMInvalidUTF8: bytes llama.cpp decodes leniently give what their
// decoding stands for; bytes it cannot decode are dropped.
func TestWPMInvalidUTF8(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, bgeVocab))
	for _, tc := range []struct{ in, same string }{
		{"h\xC1\xA5llo", "hello"},          // overlong 'e'
		{"hel\xED\xA0\x80lo", "hello"},     // surrogate: category Cs, dropped
		{"hel\x80lo caf\xC3", "hello caf"}, // stray and cut-short bytes
		{"\xC0\xAE", "."},                  // overlong '.', punctuation
	} {
		got, want := tok.Encode(tc.in, EncodeOptions{}), tok.Encode(tc.same, EncodeOptions{})
		if !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want %v as for %q", tc.in, got, want, tc.same)
		}
	}
}

func TestWPMTokenBytes(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, bgeVocab))
	for _, tc := range []struct {
		piece, want string
	}{
		{"▁hello", " hello"}, // word start
		{"ffa", "ffa"},       // continuation
		{"▁,", " ,"},
		{"[CLS]", ""}, // control: nothing unless DecodeOptions.Special
	} {
		id, ok := tok.vocab.ID(tc.piece)
		if !ok {
			t.Fatalf("%q is not in the vocabulary", tc.piece)
		}
		if got := string(tok.TokenBytes(id, DecodeOptions{})); got != tc.want {
			t.Errorf("TokenBytes(%q) = %q, want %q", tc.piece, got, tc.want)
		}
	}
}

func TestWPMAddSpecial(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, bgeVocab))
	got := wpmPieces(tok, tok.Encode("Hi", EncodeOptions{AddSpecial: true}))
	if want := "[CLS] ▁hi [SEP]"; got != want {
		t.Fatalf("Encode with AddSpecial = %q, want %q", got, want)
	}
}

// wpmTricky are strings where BERT normalization and splitting have corners.
var wpmTricky = []string{
	"Héllo WORLD, Ça va? naïve café résumé Ångström",
	"北京大学 and 東京 — 漢字かな交じり文。",
	"한국어 텍스트입니다",
	"!!!...???,,, ((nested)) [brackets] {braces} <tags> a--b ----",
	"$100.00 + 5% = ^caret `tick` |pipe| ~tilde @at #hash &amp; *star* _under_ \\slash",
	"3.14159 1,000,000 2024-01-01 0xDEADBEEF 1e-9 ¼ ½ ² ³ Ⅻ",
	"emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ❤️ ✓ ★ ℃ ™ © ®",
	"ΑΒΓ Ελληνικά ΣΊΣΥΦΟΣ ὈΔΥΣΣΕΎΣ",
	"Привет, мир! ЁЖИК йод Україна",
	"tab\tnew\nline\r\nnbsp\u00a0thin\u2009ideo\u3000space zero\u200bwidth soft\u00adhyphen",
	"İstanbul ß ẞ ﬁ ǅ Ω K Å",
	"don't won't it's rock'n'roll “quoted” ‘single’ «guillemets» …",
	"supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis unaffable",
	"[cls] ##ing ▁word a▁b [unk]",
	"مَرْحَبًا שָׁלוֹם नमस्ते สวัสดี",
	"ABCdef123GHI_jkl-mno.pqr/stu vwx:yz",
}

// TestWPMMatchesLlamaCpp tokenizes every tricky string with one llamaref
// call: joined by "[SEP]" and parsed with special tokens, each string comes
// back as its own run of ids between [SEP] tokens.
func TestWPMMatchesLlamaCpp(t *testing.T) {
	path := fixtures.Model(t, bgeVocab)
	tok := openTokenizer(t, path)
	const sep = "[SEP]"
	out := fixtures.RunLlamaref(t, "tokenize", path, "--prompt", strings.Join(wpmTricky, sep), "--special", "--compact")
	var ref struct {
		Tokenization struct {
			NoSpecial struct {
				IDs []int32 `json:"ids"`
			} `json:"no_special"`
		} `json:"tokenization"`
	}
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("llamaref output: %v", err)
	}
	runs := [][]int32{nil}
	for _, id := range ref.Tokenization.NoSpecial.IDs {
		if id == tok.vocab.SEP {
			runs = append(runs, nil)
		} else {
			runs[len(runs)-1] = append(runs[len(runs)-1], id)
		}
	}
	if len(runs) != len(wpmTricky) {
		t.Fatalf("llama.cpp gave %d runs for %d strings: %v", len(runs), len(wpmTricky), ref.Tokenization.NoSpecial.IDs)
	}
	for i, s := range wpmTricky {
		if got := tok.Encode(s, EncodeOptions{}); !slices.Equal(got, runs[i]) {
			t.Errorf("%q:\n folio     %s\n llama.cpp %s", s, wpmPieces(tok, got), wpmPieces(tok, runs[i]))
		}
	}
}

// FuzzWPMWordLocal: words are tokenized on their own, so joining two texts
// with a space joins their ids, and every id is a token.
func FuzzWPMWordLocal(f *testing.F) {
	tok := openTokenizer(f, fixtures.Model(f, bgeVocab))
	for _, s := range wpmTricky {
		f.Add(s, "x")
	}
	f.Add("\xC1\x81", "\xED\xA0\x80")
	f.Fuzz(func(t *testing.T, a, b string) {
		ab := tok.Encode(a+" "+b, EncodeOptions{})
		want := append(tok.Encode(a, EncodeOptions{}), tok.Encode(b, EncodeOptions{})...)
		if !slices.Equal(ab, want) {
			t.Fatalf("Encode(%q + \" \" + %q) = %v, want %v", a, b, ab, want)
		}
		for _, id := range ab {
			if id < 0 || int(id) >= tok.vocab.Size() {
				t.Fatalf("id %d out of range", id)
			}
		}
	})
}

func BenchmarkEncodeWPM(b *testing.B) {
	tok := openTokenizer(b, fixtures.Model(b, bgeVocab))
	text := fixtures.MixedText(1<<20, 1)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(text, EncodeOptions{})
	}
}
