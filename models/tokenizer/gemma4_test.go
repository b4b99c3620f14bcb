package tokenizer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

var update = flag.Bool("update", false, "rewrite testdata/gemma4/llamacpp.json with llama.cpp's output (needs llamaref's install and a C compiler)")

// gemma4RefPath holds llama.cpp's tokenization of the synthetic gemma4
// vocabulary (gemma4Vocab) for gemma4Texts, written by
//
//	go test ./models/tokenizer -run TestGemma4MatchesLlamaCpp -update
//
// which runs testdata/gemma4/llamatok.sh (see there).
const gemma4RefPath = "testdata/gemma4/llamacpp.json"

// gemma4Specials are the synthetic vocabulary's first tokens, Gemma 4's
// special ones with the types its converter writes: its chat-format marks
// that a reply must show (<|channel>, <|tool_call>, <|tool_response>, …)
// are user-defined, so they are matched in text even when special tokens are
// not parsed. </s> is stored as control; llama.cpp makes it normal text.
var gemma4Specials = []struct {
	text string
	typ  TokenType
}{
	{"<pad>", TypeControl}, {"<eos>", TypeControl}, {"<bos>", TypeControl}, {"<unk>", TypeUnknown},
	{"<mask>", TypeControl}, {"<|turn>", TypeControl}, {"<turn|>", TypeControl},
	{"<|channel>", TypeUserDefined}, {"<channel|>", TypeUserDefined},
	{"<|tool_call>", TypeUserDefined}, {"<tool_call|>", TypeUserDefined},
	{"<|tool_response>", TypeUserDefined}, {"<tool_response|>", TypeUserDefined},
	{`<|"|>`, TypeUserDefined}, {"</s>", TypeControl}, {"<unused0>", TypeControl}, {"<unused1>", TypeUnused},
}

// gemma4Corpus is what the synthetic vocabulary's merges are learnt from.
// 日 and 語 are left out of its characters, so they reach the vocabulary
// only inside merges (日本, 語の).
var gemma4Corpus = []string{
	"Hello world, hello world. The model is tiny!",
	"the quick brown fox jumps over the lazy dog, the end.",
	"Gemma reads text: Gemma writes text.",
	"    return x    return y",
	"hello   hello    world   world",
	"日本語のテキスト 日本語のテキスト",
	"café café naïve naïve",
	"tab\ttab\tseparated",
}

// trainMerges learns at most n merges from corpus as BPE training does:
// spaces as ▁, words cut before a ▁ that follows another character, then
// again and again the most frequent adjacent pair (ties: the smallest
// "left right") is merged, while some pair occurs twice.
func trainMerges(corpus []string, n int) []string {
	counts := map[string]int{}
	for _, line := range corpus {
		word := ""
		for _, c := range strings.ReplaceAll(line, " ", spaceMark) {
			if string(c) == spaceMark && word != "" && !strings.HasSuffix(word, spaceMark) {
				counts[word]++
				word = ""
			}
			word += string(c)
		}
		counts[word]++
	}
	type entry struct {
		syms  []string
		count int
	}
	var words []entry
	for _, w := range slices.Sorted(maps.Keys(counts)) {
		var syms []string
		for _, c := range w {
			syms = append(syms, string(c))
		}
		words = append(words, entry{syms, counts[w]})
	}
	var merges []string
	for len(merges) < n {
		pairs := map[string]int{}
		for _, w := range words {
			for i := 1; i < len(w.syms); i++ {
				pairs[w.syms[i-1]+" "+w.syms[i]] += w.count
			}
		}
		best := ""
		for p, c := range pairs {
			if c > pairs[best] || (c == pairs[best] && p < best) {
				best = p
			}
		}
		if pairs[best] < 2 {
			break
		}
		merges = append(merges, best)
		l, r, _ := strings.Cut(best, " ")
		for k := range words {
			s := words[k].syms
			for i := 1; i < len(s); i++ {
				if s[i-1] == l && s[i] == r {
					s = slices.Replace(s, i-1, i+1, l+r)
				}
			}
			words[k].syms = s
		}
	}
	return merges
}

// gemma4Vocab writes the synthetic Gemma 4 vocabulary, and returns its
// path: gemma4Specials, the 256 byte tokens, the printable ASCII
// characters, ▁, \t, \n and the corpus's other characters, the pieces of
// trainMerges(gemma4Corpus), and the newline runs \n\n and \n\n\n, which no
// merge builds but "\n \n" (as in Gemma 4's vocabulary). Two merges are
// no use: "Z Z" makes ZZ, no token, and a repeat of the first merge (a
// later rank of a pair is ignored); "nospace" is no pair. The file says
// pre-tokenizer "default" and add_bos_token false, which llama.cpp
// overrides for gemma4, and carries a llama model's hyperparameters so
// that llama.cpp loads it as a vocabulary.
func gemma4Vocab(t testing.TB) string {
	t.Helper()
	var tokens []string
	var types []int32
	add := func(text string, typ TokenType) {
		if !slices.Contains(tokens, text) {
			tokens, types = append(tokens, text), append(types, int32(typ))
		}
	}
	for _, s := range gemma4Specials {
		add(s.text, s.typ)
	}
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), TypeByte)
	}
	for c := byte('!'); c <= '~'; c++ {
		add(string(c), TypeNormal)
	}
	add(spaceMark, TypeNormal)
	add("\t", TypeNormal)
	add("\n", TypeNormal)
	for _, line := range gemma4Corpus {
		for _, c := range line {
			if c != ' ' && c != '日' && c != '語' {
				add(string(c), TypeNormal)
			}
		}
	}
	merges := trainMerges(gemma4Corpus, 200)
	for _, m := range merges {
		add(strings.Replace(m, " ", "", 1), TypeNormal)
	}
	add("\n\n", TypeNormal)
	add("\n\n\n", TypeNormal)
	merges = append(merges, "\n \n", "Z Z", merges[0], "nospace")
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}

	w := gguf.NewWriter()
	w.Set("general.architecture", "llama")
	w.Set("general.name", "gemma4-synthetic")
	for _, kv := range []struct {
		key string
		val uint32
	}{
		{"block_count", 1}, {"context_length", 256}, {"embedding_length", 64}, {"feed_forward_length", 128},
		{"attention.head_count", 4}, {"attention.head_count_kv", 4}, {"rope.dimension_count", 16},
	} {
		w.Set("llama."+kv.key, kv.val)
	}
	w.Set("llama.attention.layer_norm_rms_epsilon", float32(1e-6))
	w.Set("tokenizer.ggml.model", "gemma4")
	w.Set("tokenizer.ggml.pre", "default")
	w.Set("tokenizer.ggml.tokens", tokens)
	w.Set("tokenizer.ggml.scores", scores)
	w.Set("tokenizer.ggml.token_type", types)
	w.Set("tokenizer.ggml.merges", merges)
	for i, key := range []string{"padding", "eos", "bos", "unknown", "mask"} { // gemma4Specials' first
		w.Set("tokenizer.ggml."+key+"_token_id", uint32(i))
	}
	w.Set("tokenizer.ggml.add_bos_token", false)
	w.Set("tokenizer.ggml.add_eos_token", false)
	w.Set("tokenizer.ggml.add_space_prefix", false)
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// gemma4Texts are tokenized by llama.cpp and folio alike: spaces leading,
// trailing and in runs, runs of newlines (tokens or not), tabs, CJK with
// and without pieces, emoji and other characters the vocabulary lacks
// (byte fallback), a merge that makes no token, special-token text with and
// without parsing, spaces before punctuation (which llama_detokenize cleans
// up), words longer than mergeLinear's, and invalid UTF-8.
var gemma4Texts = []string{
	"",
	"Hello world",
	" Hello world",
	"  two leading spaces",
	"trailing   ",
	"a  b   c    d     e",
	"hello   hello    world",
	" ",
	"    ",
	"\n",
	"\n\n",
	"\n\n\n",
	"\n\n\n\n",
	"\n\n\n\n\n",
	"a\nb",
	"a\n\nb\n\n\nc\n\n\n\nd",
	"\n leading newline",
	"line one\n  line two\n\n\tline three\n",
	"\r\n\r\n",
	"\t",
	"\ttab\tseparated\t",
	"    return x\n    return y\n",
	"the quick brown fox jumps over the lazy dog, the end.",
	"The Model Is Tiny!",
	"日本語のテキスト",
	"日本",
	"日",
	"語の",
	"中文",
	"emoji 🦙🚀 family 👨‍👩‍👧‍👦",
	"café naïve résumé",
	"\u00a0no-break\u3000ideographic space",
	"ZZZ top ZZ",
	"a literal ▁ mark",
	"<0x41> as text",
	"<bos>hello<eos>",
	"<|turn>user\nHi there<turn|>\n<|turn>model\n",
	"<|channel>thought<channel|>the answer",
	"<|tool_call>call:f{}<tool_call|><|tool_response>",
	`<|"|>quoted<|"|>`,
	"</s> is plain text",
	"<unused0> and <unused1>",
	"<mask><pad><unk>",
	"Hello , world . ok ? yes ! it 's",
	"\x00 nul and \x7f del",
	strings.Repeat("hello world ", 12),
	strings.Repeat(" ", 60) + "sixty spaces",
	strings.Repeat(" ", 61),
	strings.Repeat("\n", 51),
	strings.Repeat("ab", 40),
	"\xff",
	"a\xc3b",
	"\xe2\x96 cut",
	"x\x80y",
	"\xed\xa0\x80 surrogate",
	"\xc0\x80 overlong",
	"end \xf0\x9f\xa6",
}

// hexBytes is a byte string written in JSON as hex, so that any bytes fit.
type hexBytes []byte

func (h hexBytes) MarshalJSON() ([]byte, error) { return json.Marshal(hex.EncodeToString(h)) }

func (h *hexBytes) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	var err error
	*h, err = hex.DecodeString(s)
	return err
}

// gemma4Ref is llama.cpp's view of the synthetic vocabulary (llamatok.c).
type gemma4Ref struct {
	VocabSHA256 string     `json:"vocab_sha256"` // of the GGUF file it was made from
	BOS         int32      `json:"bos"`
	EOS         int32      `json:"eos"`
	AddBOS      bool       `json:"add_bos"`
	AddEOS      bool       `json:"add_eos"`
	EOG         []int32    `json:"eog"`
	Pieces      []hexBytes `json:"pieces"`       // llama_token_to_piece of each id, special tokens rendered
	PlainPieces []hexBytes `json:"plain_pieces"` // the same, special tokens not rendered
	Cases       []struct {
		Text           hexBytes `json:"text"`
		IDs            []int32  `json:"ids"`             // llama_tokenize, no special tokens added or parsed
		Decoded        hexBytes `json:"decoded"`         // llama_detokenize of IDs
		SpecialIDs     []int32  `json:"special_ids"`     // special-token text parsed
		SpecialDecoded hexBytes `json:"special_decoded"` // llama_detokenize of SpecialIDs, special tokens rendered
		AddedIDs       []int32  `json:"added_ids"`       // special-token text parsed, BOS and EOS added
	} `json:"cases,omitempty"`
}

// loadGemma4Ref returns llama.cpp's output for the vocabulary at path and
// gemma4Texts, from gemma4RefPath; with -update, it first rewrites that
// file by running llama.cpp.
func loadGemma4Ref(t *testing.T, path string) *gemma4Ref {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if *update {
		writeGemma4Ref(t, path, hex.EncodeToString(sum[:]))
	}
	data, err = os.ReadFile(gemma4RefPath)
	if err != nil {
		t.Fatal(err)
	}
	var ref gemma4Ref
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatalf("%s: %v", gemma4RefPath, err)
	}
	if ref.VocabSHA256 != hex.EncodeToString(sum[:]) || len(ref.Cases) != len(gemma4Texts) {
		t.Fatalf("%s was made from another vocabulary or other texts: rerun with -update", gemma4RefPath)
	}
	for i, c := range ref.Cases {
		if string(c.Text) != gemma4Texts[i] {
			t.Fatalf("%s case %d is %q, gemma4Texts has %q: rerun with -update", gemma4RefPath, i, c.Text, gemma4Texts[i])
		}
	}
	return &ref
}

// writeGemma4Ref runs llamatok.sh over the vocabulary and gemma4Texts and
// writes its output, with the vocabulary's digest, to gemma4RefPath: one
// line for the vocabulary, one for each text.
func writeGemma4Ref(t *testing.T, vocab, sum string) {
	fixtures.RunLlamaref(t, "version") // installs llama.cpp's libraries on first use
	texts := filepath.Join(t.TempDir(), "texts.hex")
	var lines strings.Builder
	for _, s := range gemma4Texts {
		lines.WriteString(hex.EncodeToString([]byte(s)) + "\n")
	}
	if err := os.WriteFile(texts, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "testdata/gemma4/llamatok.sh", vocab, texts)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llamatok.sh: %v\n%s", err, stderr.String())
	}
	var ref gemma4Ref
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("llamatok.sh output: %v", err)
	}
	ref.VocabSHA256 = sum
	cases := ref.Cases
	ref.Cases = nil
	head, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-1])
	b.WriteString(`,"cases":[`)
	for i, c := range cases {
		line, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(map[bool]string{true: "\n", false: ",\n"}[i == 0])
		b.Write(line)
	}
	b.WriteString("]}\n")
	if err := os.WriteFile(gemma4RefPath, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestGemma4MatchesLlamaCpp: the synthetic Gemma 4 vocabulary tokenizes
// every gemma4Texts string as llama.cpp does, without special-token
// parsing (user text), with it (a rendered chat), and with BOS added.
func TestGemma4MatchesLlamaCpp(t *testing.T) {
	path := gemma4Vocab(t)
	ref := loadGemma4Ref(t, path)
	tok := openTokenizer(t, path)
	for i, c := range ref.Cases {
		for _, m := range []struct {
			opt  EncodeOptions
			want []int32
		}{
			{EncodeOptions{}, c.IDs},
			{EncodeOptions{ParseSpecial: true}, c.SpecialIDs},
			{EncodeOptions{ParseSpecial: true, AddSpecial: true}, c.AddedIDs},
		} {
			if got := tok.Encode(string(c.Text), m.opt); !slices.Equal(got, m.want) {
				t.Errorf("case %d %q, %+v:\n folio     %s\n llama.cpp %s", i, c.Text, m.opt,
					gemma4Pieces(tok, got), gemma4Pieces(tok, m.want))
			}
		}
	}
}

// gemma4Pieces shows ids with their pieces.
func gemma4Pieces(tok *Tokenizer, ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprintf("%d:%q", id, tok.Piece(id))
	}
	return strings.Join(s, " ")
}

// TestGemma4DecodeMatchesLlamaCpp: every token decodes to the bytes
// llama.cpp's token_to_piece gives it (▁ as a space, <0xNN> as its byte,
// special tokens as their text or nothing), and so every recorded
// tokenization decodes to llama_detokenize's text, except where that
// cleaned up spaces before punctuation, which Decode, as streamed replies,
// does not. Where llama.cpp gives the text back, folio does.
func TestGemma4DecodeMatchesLlamaCpp(t *testing.T) {
	path := gemma4Vocab(t)
	ref := loadGemma4Ref(t, path)
	tok := openTokenizer(t, path)
	if len(ref.Pieces) != tok.Vocab().Size() || len(ref.PlainPieces) != tok.Vocab().Size() {
		t.Fatalf("llama.cpp has %d and %d pieces for %d tokens", len(ref.Pieces), len(ref.PlainPieces), tok.Vocab().Size())
	}
	for id := range int32(tok.Vocab().Size()) {
		for _, m := range []struct {
			opt  DecodeOptions
			want []byte
		}{{DecodeOptions{Special: true}, ref.Pieces[id]}, {DecodeOptions{}, ref.PlainPieces[id]}} {
			if got := tok.TokenBytes(id, m.opt); !bytes.Equal(got, m.want) {
				t.Errorf("token %d %q, %+v: folio %q, llama.cpp %q", id, tok.Piece(id), m.opt, got, m.want)
			}
		}
	}
	cleaned := 0
	for i, c := range ref.Cases {
		for _, m := range []struct {
			ids  []int32
			opt  DecodeOptions
			want []byte
		}{{c.IDs, DecodeOptions{}, c.Decoded}, {c.SpecialIDs, DecodeOptions{Special: true}, c.SpecialDecoded}} {
			var pieces []byte // llama.cpp's token_to_piece, one token after another
			for _, id := range m.ids {
				pieces = append(pieces, tok.TokenBytes(id, m.opt)...)
			}
			if !bytes.Equal(pieces, m.want) {
				cleaned++
				if !bytes.Contains(pieces, []byte(" ")) || len(m.want) >= len(pieces) {
					t.Errorf("case %d %q: llama_detokenize gives %q, not its pieces %q, and not by removing spaces",
						i, c.Text, m.want, pieces)
				}
			}
			// Decode gives valid UTF-8 (detokenizer_test.go checks how it
			// replaces the rest); the texts that are not, llama.cpp gives back
			// as they are.
			got := tok.Decode(m.ids, m.opt)
			if utf8.Valid(pieces) && got != string(pieces) {
				t.Errorf("case %d %q, %+v: Decode gives %q, want %q", i, c.Text, m.opt, got, pieces)
			}
			if utf8.Valid(c.Text) && bytes.Equal(m.want, c.Text) && got != string(c.Text) {
				t.Errorf("case %d %q, %+v: llama.cpp gives the text back, folio %q", i, c.Text, m.opt, got)
			}
		}
	}
	if cleaned == 0 {
		t.Error("no case shows llama_detokenize's clean-up of spaces: the test no longer checks that Decode leaves it out")
	}
}

// TestGemma4Vocab: the special tokens, add_bos and ends of generation are
// llama.cpp's: BOS added although the file says add_bos_token false; <eos>,
// <turn|> and <|tool_response> end generation; </s> does not and becomes
// normal text; none is taken for EOT. The pre-tokenizer is gemma4's,
// although the file says "default".
func TestGemma4Vocab(t *testing.T) {
	path := gemma4Vocab(t)
	ref := loadGemma4Ref(t, path)
	v := openTokenizer(t, path).Vocab()
	if v.BOS != ref.BOS || v.EOS != ref.EOS || v.AddBOS != ref.AddBOS || v.AddEOS != ref.AddEOS {
		t.Errorf("BOS %d EOS %d add %v %v; llama.cpp: BOS %d EOS %d add %v %v",
			v.BOS, v.EOS, v.AddBOS, v.AddEOS, ref.BOS, ref.EOS, ref.AddBOS, ref.AddEOS)
	}
	if eog := slices.Sorted(slices.Values(v.EOG)); !slices.Equal(eog, ref.EOG) {
		t.Errorf("EOG %v, llama.cpp %v", eog, ref.EOG)
	}
	var eogTexts []string
	for _, id := range ref.EOG {
		eogTexts = append(eogTexts, v.Tokens[id])
	}
	if want := []string{"<eos>", "<turn|>", "<|tool_response>"}; !slices.Equal(eogTexts, want) {
		t.Errorf("llama.cpp's EOG is %q, want %q (the vocabulary's order)", eogTexts, want)
	}
	if s, _ := v.ID("</s>"); v.Type(s) != TypeNormal || v.EOT != NoToken || v.Pre != "gemma4" {
		t.Errorf("</s> is %v, EOT %d, pre %q", v.Type(s), v.EOT, v.Pre)
	}
}

// TestGemma4GranitePre: a gpt2 vocabulary whose pre-tokenizer is
// granite-embed-multi-311m is llama.cpp's gemma4 pre-type too, and
// tokenizes as the gemma4 vocabulary does.
func TestGemma4GranitePre(t *testing.T) {
	path := gemma4Vocab(t)
	gemma := openTokenizer(t, path)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	w := gguf.NewWriterFrom(f)
	w.Set("tokenizer.ggml.model", "gpt2")
	w.Set("tokenizer.ggml.pre", "granite-embed-multi-311m")
	granitePath := filepath.Join(t.TempDir(), "granite.gguf")
	err = w.WriteFile(granitePath)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	granite := openTokenizer(t, granitePath)
	if !granite.Vocab().AddBOS {
		t.Error("add_bos is not forced")
	}
	for _, text := range gemma4Texts {
		opt := EncodeOptions{ParseSpecial: true, AddSpecial: true}
		if got, want := granite.Encode(text, opt), gemma.Encode(text, opt); !slices.Equal(got, want) {
			t.Errorf("%q: granite %v, gemma4 %v", text, got, want)
		}
	}
}

// FuzzGemma4RoundTrip: any valid UTF-8 without "▁" (which decodes as a
// space) and without parsing special-token text decodes back to itself:
// the synthetic vocabulary has a byte token for every byte, and
// user-defined tokens decode as their text.
func FuzzGemma4RoundTrip(f *testing.F) {
	for _, s := range gemma4Texts {
		f.Add(s)
	}
	tok := openTokenizer(f, gemma4Vocab(f))
	f.Fuzz(func(t *testing.T, text string) {
		ids := tok.Encode(text, EncodeOptions{})
		if !utf8.ValidString(text) || strings.Contains(text, spaceMark) {
			return
		}
		if got := tok.Decode(ids, DecodeOptions{}); got != text {
			t.Fatalf("%+q decodes to %+q (%s)", text, got, gemma4Pieces(tok, ids))
		}
	})
}
