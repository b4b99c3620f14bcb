package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// bytesModel is a model whose token i stands for pieces[i], raw bytes.
type bytesModel struct{ pieces [][]byte }

func (m bytesModel) tokenBytes(id int32) []byte { return m.pieces[id] }

// appendText encodes one token per byte; a run that starts the input or
// follows a special token is marked with a leading '^' token.
func (m bytesModel) appendText(ids []int32, text string, afterSpecial bool) []int32 {
	if afterSpecial {
		ids = append(ids, '^')
	}
	for i := range len(text) {
		ids = append(ids, int32(text[i]))
	}
	return ids
}

// byteTokenizer has one token per byte value, plus a control token 256
// "<ctl>" and, as model "llama", SentencePiece's space prefix.
func byteTokenizer(model string) *Tokenizer {
	v := &Vocab{Model: model, AddSpacePrefix: true}
	m := bytesModel{}
	for i := range 256 {
		v.Tokens = append(v.Tokens, string(rune(0x100+i)))
		v.Types = append(v.Types, TypeByte)
		m.pieces = append(m.pieces, []byte{byte(i)})
	}
	v.Tokens = append(v.Tokens, "<ctl>")
	v.Types = append(v.Types, TypeControl)
	m.pieces = append(m.pieces, nil)
	return newTokenizer(v, m)
}

func idsOf(s string) []int32 {
	ids := make([]int32, len(s))
	for i := range len(s) {
		ids[i] = int32(s[i])
	}
	return ids
}

func TestDetokenizerHoldsPartialCharacters(t *testing.T) {
	tok := byteTokenizer("gpt2")
	d := tok.NewDetokenizer(DecodeOptions{})
	var got []string
	for _, id := range idsOf("a🦙é") { // 1 + 4 + 2 bytes, one token each
		got = append(got, d.Add(id))
	}
	want := []string{"a", "", "", "", "🦙", "", "é"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("emitted %q, want %q", got, want)
	}
	if rest := d.Flush(); rest != "" {
		t.Fatalf("flush %q", rest)
	}
}

func TestDetokenizerInvalidBytes(t *testing.T) {
	tok := byteTokenizer("gpt2")
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"stray continuation", []byte{'a', 0x80, 'b'}, "a\uFFFDb"},
		{"invalid byte", []byte{0xFF, 'x'}, "\uFFFDx"},
		{"cut at the end", []byte{'o', 'k', 0xF0, 0x9F}, "ok\uFFFD"},
		{"lead then ASCII", []byte{0xE2, 'x'}, "\uFFFDx"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tok.Decode(idsOf(string(tc.in)), DecodeOptions{})
			if got != tc.want {
				t.Fatalf("Decode = %q, want %q", got, tc.want)
			}
			d := tok.NewDetokenizer(DecodeOptions{})
			for _, id := range idsOf(string(tc.in)) {
				if s := d.Add(id); !utf8.ValidString(s) {
					t.Fatalf("Add emitted invalid UTF-8 %q", s)
				}
			}
		})
	}
}

func TestDetokenizerSpacePrefix(t *testing.T) {
	spm := byteTokenizer("llama")
	ids := append([]int32{256}, idsOf(" Hello  world")...) // <ctl> then text
	if got := spm.Decode(ids, DecodeOptions{}); got != "Hello  world" {
		t.Fatalf("SentencePiece decode %q: the first space is the added prefix and must go", got)
	}
	if got := spm.Decode(ids, DecodeOptions{Special: true}); got != "<ctl> Hello  world" {
		t.Fatalf("with special tokens shown: %q", got)
	}
	bpe := byteTokenizer("gpt2")
	if got := bpe.Decode(idsOf(" Hello"), DecodeOptions{}); got != " Hello" {
		t.Fatalf("byte-level decode %q keeps every byte", got)
	}
}
