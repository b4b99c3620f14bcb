package tokenizer

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// bpeVocab is a byte-level vocabulary for unit tests: the 256 byte
// characters as ids 0..255, then extra tokens, with the given merges.
func bpeVocab(pre string, extra []string, merges ...string) *Vocab {
	v := &Vocab{Model: "gpt2", Pre: pre, Merges: merges, ids: map[string]int32{}}
	for b := range 256 {
		v.Tokens = append(v.Tokens, string(byteRune[b]))
	}
	v.Tokens = append(v.Tokens, extra...)
	for i, t := range v.Tokens {
		v.Types = append(v.Types, TypeNormal)
		if _, dup := v.ids[t]; !dup {
			v.ids[t] = int32(i)
		}
	}
	v.BOS, v.EOS, v.EOT, v.EOM, v.UNK, v.PAD, v.SEP, v.CLS, v.MASK =
		NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken
	return v
}

func mustTokenizer(t testing.TB, v *Vocab) *Tokenizer {
	t.Helper()
	tok, err := NewFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestBPEByteTable(t *testing.T) {
	for _, tc := range []struct {
		b byte
		r rune
	}{{'!', '!'}, {'~', '~'}, {0xA1, 0xA1}, {0xAE, 0xAE}, {0xFF, 0xFF}, {0, 0x100}, {' ', 0x120}, {'\n', 0x10A}, {0x7F, 0x121}, {0xA0, 0x142}, {0xAD, 0x143}} {
		if byteRune[tc.b] != tc.r {
			t.Errorf("byteRune[%#x] = %U, want %U", tc.b, byteRune[tc.b], tc.r)
		}
		if runeByte[tc.r] != int16(tc.b) {
			t.Errorf("runeByte[%U] = %d, want %#x", tc.r, runeByte[tc.r], tc.b)
		}
	}
}

func TestBPEMerges(t *testing.T) {
	tests := []struct {
		name   string
		pre    string
		extra  []string
		merges []string
		text   string
		want   []string
	}{
		{"no merges", "gpt-2", nil, []string{"x y"}, "abc", []string{"a", "b", "c"}},
		{"lowest rank first", "gpt-2", []string{"bc", "ab"}, []string{"b c", "a b"}, "abc", []string{"a", "bc"}},
		{"leftmost of equal ranks", "gpt-2", []string{"aa"}, []string{"a a"}, "aaa", []string{"aa", "a"}},
		{"chain", "gpt-2", []string{"aa", "aaaa"}, []string{"a a", "aa aa"}, "aaaaa", []string{"aaaa", "a"}},
		{"space is Ġ", "gpt-2", []string{"Ġa"}, []string{"Ġ a"}, "b a", []string{"b", "Ġa"}},
		{"merge result not a token: its bytes", "gpt-2", nil, []string{"a b"}, "ab", []string{"a", "b"}},
		{"ignore_merges: a word that is a token", "llama3", []string{"ab", "abc"}, []string{"a b"}, "abc", []string{"abc"}},
		{"merges without ignore_merges", "qwen2", []string{"ab", "abc"}, []string{"a b"}, "abc", []string{"ab", "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tok := mustTokenizer(t, bpeVocab(tc.pre, tc.extra, tc.merges...))
			var got []string
			for _, id := range tok.Encode(tc.text, EncodeOptions{}) {
				got = append(got, tok.Piece(id))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Encode(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// TestBPEMissingByteToken: a byte the vocabulary has no token for is UNK,
// or nothing without UNK (falcon lacks tokens for some control bytes).
func TestBPEMissingByteToken(t *testing.T) {
	v := bpeVocab("gpt-2", []string{"<unk>"}, "x y")
	v.Tokens[3] = "<not a byte>" // byte 0x03's character is no token now
	delete(v.ids, string(byteRune[3]))
	v.ids[v.Tokens[3]] = 3
	if got := mustTokenizer(t, v).Encode("a\x03b", EncodeOptions{}); !slices.Equal(got, []int32{'a', 'b'}) {
		t.Errorf("without UNK: %v", got)
	}
	v.UNK = 256
	if got := mustTokenizer(t, v).Encode("a\x03b", EncodeOptions{}); !slices.Equal(got, []int32{'a', 256, 'b'}) {
		t.Errorf("with UNK: %v", got)
	}
}

func TestBPETokenBytes(t *testing.T) {
	tok := mustTokenizer(t, bpeVocab("gpt-2", []string{"Ġhello", "ĊĊ", "日本", "Ã©"}, "x y"))
	for id, want := range map[int32]string{' ': " ", 256: " hello", 257: "\n\n", 258: "日本", 259: "é", 0x80: "\x80"} {
		if got := string(tok.TokenBytes(id, DecodeOptions{})); got != want {
			t.Errorf("TokenBytes(%d) = %q, want %q", id, got, want)
		}
	}
}

func TestBPENeedsMerges(t *testing.T) {
	if _, err := NewFromVocab(bpeVocab("gpt-2", nil)); err == nil {
		t.Fatal("a gpt2 vocabulary without merges was accepted")
	}
}

// TestBPEUnknownPre: an unknown tokenizer.ggml.pre falls back to gpt-2, once
// logged.
func TestBPEUnknownPre(t *testing.T) {
	var logs bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	m, err := newBPE(bpeVocab("no-such-pre", nil, "a b"))
	if err != nil {
		t.Fatal(err)
	}
	if m.(*bpe).pre != &preGPT2 {
		t.Errorf("pre-tokenizer %s, want gpt-2", m.(*bpe).pre.name)
	}
	if n := strings.Count(logs.String(), "no-such-pre"); n != 1 {
		t.Errorf("%d warnings naming the pre-tokenizer, want 1:\n%s", n, logs.String())
	}
}

// TestBPEMergeHeapMatchesLinear: both merge loops give the same symbols, on
// words of a few letters that merge a lot.
func TestBPEMergeHeapMatchesLinear(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-gpt-2.gguf"))
	m := tok.model.(*bpe)
	r := rand.New(rand.NewPCG(3, 3))
	alphabet := []byte("aeinrst th  \n\x00\xe4\xbd\xa0")
	var w1, w2 bpeScratch
	for range 5000 {
		word := make([]int32, 1+r.IntN(120))
		for i := range word {
			word[i] = m.byteSym[alphabet[r.IntN(len(alphabet))]]
		}
		lin := m.mergeLinear(slices.Clone(word), &w1)
		hp := m.mergeHeap(slices.Clone(word), &w2)
		if !slices.Equal(lin, hp) {
			t.Fatalf("word %v: linear %v, heap %v", word, lin, hp)
		}
	}
}

// TestBPEConcurrentEncode: one Tokenizer encodes from many goroutines at
// once (run with -race).
func TestBPEConcurrentEncode(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-gpt-2.gguf"))
	texts := make([]string, 8)
	want := make([][]int32, len(texts))
	for i := range texts {
		texts[i] = fixtures.MixedText(4096, uint64(i))
		want[i] = tok.Encode(texts[i], EncodeOptions{})
	}
	var wg sync.WaitGroup
	for i := range texts {
		wg.Go(func() {
			for range 20 {
				if got := tok.Encode(texts[i], EncodeOptions{}); !slices.Equal(got, want[i]) {
					t.Errorf("text %d differs when encoded concurrently", i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// bpeRoundTripVocabs have a token for every byte, so any text round-trips.
var bpeRoundTripVocabs = []string{"gpt-2", "deepseek-coder", "deepseek-llm"}

// byteTokensNormal reports whether every byte's token is a normal token,
// so that the tokens of any bytes decode to those bytes. (deepseek's
// characters of the bytes that never occur in UTF-8, such as "ÿ" for 0xFF,
// are user-defined tokens, which decode to their own text, as in llama.cpp
// and Hugging Face.)
func byteTokensNormal(tok *Tokenizer) bool {
	m := tok.model.(*bpe)
	for _, s := range m.byteSym {
		if s >= m.nTokens || tok.vocab.Types[s] != TypeNormal {
			return false
		}
	}
	return true
}

// FuzzBPERoundTrip: Decode(Encode(s)) == s for valid UTF-8, special-token
// text included (it stays text without ParseSpecial); any bytes encode
// without panic, and where every byte has a normal token the tokens' bytes
// add up to the input.
func FuzzBPERoundTrip(f *testing.F) {
	for _, s := range []string{"", "Hello world", "<|endoftext|>", "a<|endoftext|>b", "  \n\t\u3000x", "你好, 世界! 123456",
		"<｜end▁of▁sentence｜>", "[PAD32022]", "don't 'LL", "🦙👍🏽", "\xff\xfe", "\xe4\xbd"} {
		f.Add(s)
	}
	var toks []*Tokenizer
	var anyBytes []bool
	for _, name := range bpeRoundTripVocabs {
		tok := openTokenizer(f, fixtures.Model(f, "ggml-vocab-"+name+".gguf"))
		toks, anyBytes = append(toks, tok), append(anyBytes, byteTokensNormal(tok))
	}
	if !anyBytes[0] {
		f.Fatal("gpt-2 lacks a normal token for some byte")
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tok := range toks {
			ids := tok.Encode(s, EncodeOptions{})
			var raw []byte
			for _, id := range ids {
				raw = append(raw, tok.TokenBytes(id, DecodeOptions{})...)
			}
			if anyBytes[i] && string(raw) != s {
				t.Fatalf("%s: token bytes of %+q are %+q (ids %v)", bpeRoundTripVocabs[i], s, raw, ids)
			}
			if utf8.ValidString(s) {
				if got := tok.Decode(ids, DecodeOptions{}); got != s {
					t.Fatalf("%s: Decode(Encode(%+q)) = %+q (ids %v)", bpeRoundTripVocabs[i], s, got, ids)
				}
			}
		}
	})
}

// bpeTrickyTexts are the strings compared with llama.cpp, besides a slice of
// the benchmark text.
var bpeTrickyTexts = []string{
	"Hello world", " leading space", "trailing space ", "  two  spaces  between  ",
	"\t\ttabs\tand\vvertical\ftabs", "\n\n\nnewlines\r\n\r\nCRLF\n", "I'm you're we've they'll she'd IT'S 'tis",
	"numbers 1 12 123 1234 12345 3.14159 1,000,000 -42", "emoji 🦙😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷",
	"CJK 你好世界。こんにちは、世界！안녕하세요 ｆｕｌｌｗｉｄｔｈ　ｓｐａｃｅ",
	"Привет мир, café naïve Ångström façade", "func main() {\n\tfmt.Println(\"hi\") // ok\n}\n",
	"symbols $+<=>^~|` @#%&* ()[]{}", "quotes 'single' \"double\" «guillemets» „low“ ‘curly’",
	"unicode spaces a\u00a0b\u3000c\u2009d\u200be", "combining e\u0301 a\u0300 \u0915\u093f",
	"digits ٣٤٥ Ⅻ ① ² 𝟙𝟚", "control \x01\x7f\u0085 done", "x" + strings.Repeat(" ", 100) + "y",
	strings.Repeat("ab", 80), "   \n  \n", "𝐀𝐁𝐂 𐐀𐐁 𞤀",
}

// TestBPEMatchesLlamaCpp compares Encode with llama.cpp (llamaref) on the
// tricky strings and 32 KiB of mixed text, with a vocabulary of each
// pre-tokenizer family in ../shared/models (gpt-neox has no pre: llama.cpp's
// default list), and with the gpt-2 vocabulary relabelled llama-bpe (llama3,
// with ignore_merges), qwen2, tekken (Mistral Nemo and Small 3, with
// ignore_merges) and gpt-4o (Phi-4-mini), for which ../shared has no
// vocabulary. One
// llamaref call each: the texts joined by the EOS token's text and parsed as
// special, so each is tokenized on its own.
func TestBPEMatchesLlamaCpp(t *testing.T) {
	fixtures.Llamaref(t) // skips when llama.cpp is not available
	texts := append(slices.Clone(bpeTrickyTexts), fixtures.MixedText(32<<10, 7))
	for _, name := range []string{"gpt-2", "deepseek-coder", "deepseek-llm", "falcon", "starcoder", "gpt-neox", "gpt-2:llama-bpe", "gpt-2:qwen2",
		"gpt-2:tekken", "gpt-2:gpt-4o"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			vocab, pre, relabel := strings.Cut(name, ":")
			path := fixtures.Model(t, "ggml-vocab-"+vocab+".gguf")
			if relabel {
				path = withPre(t, path, pre)
			}
			tok := openTokenizer(t, path)
			texts := texts
			if tok.model.(*bpe).pre.nfc {
				// llama.cpp does not normalize; the model's tokenizer does.
				texts = slices.Clone(texts)
				for i := range texts {
					texts[i] = norm.NFC.String(texts[i])
				}
			}
			sep := tok.Piece(tok.vocab.EOS)
			ref := bpeSplitAt(bpeLlamaTokenize(t, path, strings.Join(texts, sep)), tok.vocab.EOS)
			if len(ref) != len(texts) {
				t.Fatalf("llama.cpp gave %d segments for %d texts", len(ref), len(texts))
			}
			for i, s := range texts {
				if strings.Contains(s, sep) {
					t.Fatalf("text %q holds the separator %q", s, sep)
				}
				if got := tok.Encode(s, EncodeOptions{}); !slices.Equal(got, ref[i]) {
					t.Errorf("%+q:\n folio     %v\n llama.cpp %v", s, got, ref[i])
				}
			}
		})
	}
}

// withPre writes a copy of the GGUF file at path with tokenizer.ggml.pre set
// to pre and returns its path.
func withPre(t *testing.T, path, pre string) string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := gguf.NewWriterFrom(f)
	w.Set("tokenizer.ggml.pre", pre)
	out := filepath.Join(t.TempDir(), "vocab-"+pre+".gguf")
	if err := w.WriteFile(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// bpeLlamaTokenize returns llama.cpp's ids for text, special tokens parsed.
func bpeLlamaTokenize(t *testing.T, path, text string) []int32 {
	t.Helper()
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out struct {
		Tokenization struct {
			NoSpecial struct {
				IDs []int32 `json:"ids"`
			} `json:"no_special"`
		} `json:"tokenization"`
	}
	if err := json.Unmarshal(fixtures.RunLlamaref(t, "tokenize", path, "--prompt-file", prompt, "--special", "--compact"), &out); err != nil {
		t.Fatalf("llamaref output: %v", err)
	}
	return out.Tokenization.NoSpecial.IDs
}

// bpeSplitAt splits ids at every sep.
func bpeSplitAt(ids []int32, sep int32) [][]int32 {
	var out [][]int32
	for {
		i := slices.Index(ids, sep)
		if i < 0 {
			return append(out, ids)
		}
		out = append(out, ids[:i])
		ids = ids[i+1:]
	}
}

// BenchmarkEncodeBPE tokenizes 1 MiB of mixed text (fixtures.MixedText, the
// text bench/tokenize.sh gives llama.cpp): with the gpt-2 vocabulary under
// each pre-tokenizer family, then with each real vocabulary in ../shared.
func BenchmarkEncodeBPE(b *testing.B) {
	text := fixtures.MixedText(1<<20, 1)
	run := func(b *testing.B, tok *Tokenizer) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			n = len(tok.Encode(text, EncodeOptions{}))
		}
		b.ReportMetric(float64(n), "tokens")
	}
	gpt2 := openTokenizer(b, fixtures.Model(b, "ggml-vocab-gpt-2.gguf")).vocab
	for _, p := range allPreTokenizers {
		b.Run("gpt-2/pre="+p.name, func(b *testing.B) {
			v := *gpt2
			v.Pre = p.name
			run(b, mustTokenizer(b, &v))
		})
	}
	quiet := slog.New(slog.DiscardHandler) // gpt-neox has no pre: a warning
	old := slog.Default()
	slog.SetDefault(quiet)
	b.Cleanup(func() { slog.SetDefault(old) })
	for _, name := range []string{"deepseek-coder", "deepseek-llm", "falcon", "mpt", "refact", "starcoder", "gpt-neox"} {
		b.Run(name, func(b *testing.B) {
			run(b, openTokenizer(b, fixtures.Model(b, "ggml-vocab-"+name+".gguf")))
		})
	}
}
