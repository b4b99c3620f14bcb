package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

// specialTokenizer extends byteTokenizer with special tokens of each kind.
func specialTokenizer() *Tokenizer {
	t := byteTokenizer("gpt2")
	m := t.model.(bytesModel)
	add := func(text string, typ TokenType) {
		t.vocab.Tokens = append(t.vocab.Tokens, text)
		t.vocab.Types = append(t.vocab.Types, typ)
		m.pieces = append(m.pieces, nil)
	}
	add("<|im|>", TypeControl)     // 257
	add("<|im|>x", TypeControl)    // 258: longer, so it wins where both match
	add("[USER]", TypeUserDefined) // 259
	add("<unk>", TypeUnknown)      // 260
	add("<|unused|>", TypeUnused)  // 261: never matched
	t.vocab.BOS, t.vocab.EOS, t.vocab.AddBOS, t.vocab.AddEOS = 256, 256, true, true
	return newTokenizer(t.vocab, m)
}

// render shows ids compactly: printable bytes as themselves, others as <id>.
func render(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id >= 32 && id < 127 {
			b.WriteByte(byte(id))
		} else {
			fmt.Fprintf(&b, "<%d>", id)
		}
	}
	return b.String()
}

func TestEncodeSpecialTokens(t *testing.T) {
	tok := specialTokenizer()
	tests := []struct {
		name string
		text string
		opt  EncodeOptions
		want string
	}{
		{"plain", "ab", EncodeOptions{}, "^ab"},
		{"empty", "", EncodeOptions{}, ""},
		{"empty with BOS and EOS", "", EncodeOptions{AddSpecial: true}, "<256><256>"},
		{"BOS and EOS", "ab", EncodeOptions{AddSpecial: true}, "<256>^ab<256>"},
		{"control text stays text", "a<|im|>b", EncodeOptions{}, "^a<|im|>b"},
		{"control parsed", "a<|im|>b", EncodeOptions{ParseSpecial: true}, "^a<257>^b"},
		{"longest first", "<|im|>x<|im|>", EncodeOptions{ParseSpecial: true}, "<258><257>"},
		{"user-defined always", "a[USER]b", EncodeOptions{}, "^a<259>^b"},
		{"unknown only when parsing", "<unk>", EncodeOptions{}, "^<unk>"},
		{"unknown parsed", "<unk>", EncodeOptions{ParseSpecial: true}, "<260>"},
		{"unused never", "<|unused|>", EncodeOptions{ParseSpecial: true}, "^<|unused|>"},
		{"adjacent", "[USER][USER]", EncodeOptions{}, "<259><259>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(tok.Encode(tc.text, tc.opt)); got != tc.want {
				t.Fatalf("Encode(%q) = %s, want %s", tc.text, got, tc.want)
			}
		})
	}
}

// TestEOG: end-of-turn tokens count as ends of generation, as llama.cpp
// has it, and are control tokens even where the file calls them text.
func TestEOG(t *testing.T) {
	tok := openTokenizer(t, fixtures.Model(t, "ggml-vocab-phi-3.gguf"))
	v := tok.Vocab()
	end, ok := v.ID("<|end|>")
	if !ok {
		t.Fatal("phi-3 has no <|end|> token")
	}
	if !v.IsEOG(end) || !v.IsEOG(v.EOS) {
		t.Errorf("EOG = %v: want <|end|> (%d) and EOS (%d) in it", v.EOG, end, v.EOS)
	}
	if v.Type(end) != TypeControl {
		t.Errorf("<|end|> has type %v, want control", v.Type(end))
	}
	if got := tok.Decode([]int32{end}, DecodeOptions{}); got != "" {
		t.Errorf("Decode(<|end|>) = %q without Special, want nothing", got)
	}
	if v.IsEOG(v.BOS) {
		t.Errorf("BOS %d is in EOG %v", v.BOS, v.EOG)
	}
}

// TestEOGNames: the other end tokens llama.cpp names end generation as
// control tokens, never as EOT; "</s>" where it is not EOS stays text.
func TestEOGNames(t *testing.T) {
	names := []string{"hello", "[e~[", "[EOT]", "[EOS]", "<|flush|>", "<|calls|>", "</s>"}
	v := &Vocab{Tokens: names, Types: make([]TokenType, len(names)), ids: map[string]int32{},
		EOS: NoToken, EOT: NoToken, EOM: NoToken}
	for i, n := range names {
		v.ids[n] = int32(i)
	}
	v.collectEOG()
	for i, n := range names {
		want := i > 0 && n != "</s>"
		if v.IsEOG(int32(i)) != want || want && v.Types[i] != TypeControl {
			t.Errorf("%s: EOG %v type %v, want EOG %v", n, v.IsEOG(int32(i)), v.Types[i], want)
		}
	}
	if v.EOT != NoToken {
		t.Errorf("EOT %d, want none", v.EOT)
	}
}

// TestToolCallMarksDecoded: the control tokens that mark tool calls
// ([TOOL_CALLS], [ARGS], <|tool_call|>) decode as their text, so that a
// chat's tool-call parser sees them; other control tokens still decode to
// nothing without Special, and user text spelling a mark stays text.
func TestToolCallMarksDecoded(t *testing.T) {
	v := spmVocab(nil, 'g', 'e', 't', 'x')
	v.AddSpacePrefix = false
	for _, mark := range []string{"[TOOL_CALLS]", "[ARGS]", "<|tool_call|>", "<|/tool_call|>", "[INST]", "[THINK]", "[/THINK]"} {
		v.Tokens = append(v.Tokens, mark)
		v.Scores = append(v.Scores, 0)
		v.Types = append(v.Types, TypeControl)
		v.ids[mark] = int32(len(v.Tokens) - 1)
	}
	tok, err := NewFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode("[INST][THINK]x[/THINK][TOOL_CALLS]get[ARGS]<|tool_call|>x<|/tool_call|>", EncodeOptions{ParseSpecial: true})
	if got, want := tok.Decode(ids, DecodeOptions{}), "[THINK]x[/THINK][TOOL_CALLS]get[ARGS]<|tool_call|>x<|/tool_call|>"; got != want {
		t.Errorf("Decode = %q, want %q (marks kept, [INST] dropped)", got, want)
	}
	if got := tok.Decode(ids, DecodeOptions{Special: true}); got != "[INST][THINK]x[/THINK][TOOL_CALLS]get[ARGS]<|tool_call|>x<|/tool_call|>" {
		t.Errorf("Decode with Special = %q", got)
	}
	plain := tok.Encode("[TOOL_CALLS]", EncodeOptions{})
	if id, _ := v.ID("[TOOL_CALLS]"); slices.Contains(plain, id) {
		t.Errorf("user text [TOOL_CALLS] became the control token: %v", plain)
	}
}

// TestHarmonyMarks: in a harmony vocabulary (gpt-oss: <|return|> and
// <|call|> end generation) <|end|> ends a message, not the reply, and it
// and harmony's other marks decode as text, as llama.cpp renders them, so
// that the server reads the reply's channels; <|return|> and <|call|> still
// end generation and decode to nothing.
func TestHarmonyMarks(t *testing.T) {
	v := spmVocab(nil, 'h', 'i')
	v.AddSpacePrefix = false
	marks := []string{"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|return|>", "<|call|>"}
	for _, mark := range marks {
		v.Tokens = append(v.Tokens, mark)
		v.Scores = append(v.Scores, 0)
		v.Types = append(v.Types, TypeControl)
		v.ids[mark] = int32(len(v.Tokens) - 1)
	}
	v.collectEOG()
	for _, mark := range marks {
		id, _ := v.ID(mark)
		if want := mark == "<|return|>" || mark == "<|call|>"; v.IsEOG(id) != want {
			t.Errorf("%s: IsEOG %v, want %v", mark, v.IsEOG(id), want)
		}
	}
	tok, err := NewFromVocab(v)
	if err != nil {
		t.Fatal(err)
	}
	text := "<|channel|>hi<|message|>h<|end|><|start|>i<|constrain|>h<|call|>"
	ids := tok.Encode(text, EncodeOptions{ParseSpecial: true})
	if got, want := tok.Decode(ids, DecodeOptions{}), strings.TrimSuffix(text, "<|call|>"); got != want {
		t.Errorf("Decode = %q, want %q", got, want)
	}
}
