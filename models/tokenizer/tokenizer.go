package tokenizer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"folio/models/gguf"
)

// model is one tokenization algorithm over a vocabulary.
type model interface {
	// appendText appends the ids of a run of plain text, one that holds no
	// special token, to ids. afterSpecial is true when the run starts the
	// input or follows a special token (SentencePiece adds its space prefix
	// only then).
	appendText(ids []int32, text string, afterSpecial bool) []int32
	// tokenBytes returns the bytes a normal or byte token stands for in
	// decoded text (▁ back to a space, <0x0A> back to a newline, byte-level
	// runes back to their bytes).
	tokenBytes(id int32) []byte
}

// Tokenizer encodes and decodes text for one vocabulary. It is safe for
// concurrent use: it holds no mutable state after New.
type Tokenizer struct {
	vocab *Vocab
	model model

	// special lists the tokens Encode splits the input at, longest text first
	// (as llama.cpp matches them): control, user-defined and unknown tokens.
	special []int32
	// marks are the control tokens of toolCallMarks that the vocabulary
	// has: decoded as their text even without DecodeOptions.Special.
	marks []int32
}

// toolCallMarks are the texts of the control tokens with which models
// mark their tool calls and their thinking: Mistral's ([TOOL_CALLS], then
// a JSON array, or the name, [CALL_ID] and [ARGS] of Mistral Small 3.2
// and Devstral; [THINK] and [/THINK] of Magistral and Ministral 3
// Reasoning), Granite's and Phi-4-mini's <|tool_call|> (with Phi-4-mini's
// closing <|/tool_call|>), Hermes' <tool_call>, GLM-4.5's keys and
// values, MiniMax-M2's block, and <think> … </think> where a vocabulary
// makes them control tokens. A reply keeps them as text, as llama.cpp
// keeps the tokens of a chat format ("preserved tokens") and Ollama keeps
// every special token: the parsers read the calls and the thought by
// them, and a reply that turns out not to be a call keeps what the model
// wrote.
var toolCallMarks = []string{
	"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "<|tool_call|>", "<|/tool_call|>", "<tool_call>", "</tool_call>",
	"[THINK]", "[/THINK]", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
	"<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>",
}

// EncodeOptions say how Encode treats special tokens.
type EncodeOptions struct {
	// AddSpecial adds BOS and EOS as the vocabulary asks (add_bos_token,
	// add_eos_token); WordPiece always gets BOS ([CLS]) and [SEP], as in
	// llama.cpp.
	AddSpecial bool
	// ParseSpecial turns the text of control tokens ("<|eot_id|>", "<s>") in
	// the input into those tokens: right for rendered chat templates, wrong
	// for user content, where such text must stay plain text.
	// User-defined tokens are matched either way, as llama.cpp does.
	ParseSpecial bool
}

// New builds the tokenizer described by the metadata of f.
func New(f *gguf.File) (*Tokenizer, error) {
	v, err := LoadVocab(f)
	if err != nil {
		return nil, err
	}
	return NewFromVocab(v)
}

// NewFromVocab builds the tokenizer for a loaded vocabulary.
func NewFromVocab(v *Vocab) (*Tokenizer, error) {
	var m model
	var err error
	switch v.Model {
	case "llama":
		m, err = newSPM(v)
	case "gpt2", "gemma4":
		m, err = newBPE(v)
	case "bert":
		m, err = newWPM(v)
	default:
		err = fmt.Errorf("%w: tokenizer.ggml.model %q is not supported (folio reads llama, gpt2, gemma4 and bert)", ErrVocab, v.Model)
	}
	if err != nil {
		return nil, err
	}
	return newTokenizer(v, m), nil
}

// newTokenizer pairs a vocabulary with its algorithm.
func newTokenizer(v *Vocab, m model) *Tokenizer {
	t := &Tokenizer{vocab: v, model: m}
	for id, typ := range v.Types {
		if (typ == TypeControl || typ == TypeUserDefined || typ == TypeUnknown) && v.Tokens[id] != "" {
			t.special = append(t.special, int32(id))
		}
	}
	slices.SortStableFunc(t.special, func(a, b int32) int {
		return cmp.Compare(len(v.Tokens[b]), len(v.Tokens[a]))
	})
	for _, text := range toolCallMarks {
		if id, ok := v.ID(text); ok && int(id) < len(v.Types) && v.Types[id] == TypeControl && !v.IsEOG(id) {
			t.marks = append(t.marks, id)
		}
	}
	return t
}

// Vocab returns the tokenizer's vocabulary. Callers must not modify it.
func (t *Tokenizer) Vocab() *Vocab { return t.vocab }

// Piece returns the stored text of token id ("▁Hello", "<0x0A>", "Ġworld").
func (t *Tokenizer) Piece(id int32) string {
	if id < 0 || int(id) >= len(t.vocab.Tokens) {
		return ""
	}
	return t.vocab.Tokens[id]
}

// fragment is a piece of the input: plain text, or one special token.
type fragment struct {
	text  string
	token int32 // NoToken for text
}

// Encode returns the token ids of text.
func (t *Tokenizer) Encode(text string, opt EncodeOptions) []int32 {
	v := t.vocab
	ids := make([]int32, 0, len(text)/3+2)
	wpm := v.Model == "bert"
	if opt.AddSpecial && (v.AddBOS || wpm) && v.BOS != NoToken {
		ids = append(ids, v.BOS)
	}
	afterSpecial := true
	for _, fr := range t.partition(text, opt.ParseSpecial) {
		if fr.token != NoToken {
			ids = append(ids, fr.token)
			afterSpecial = true
			continue
		}
		ids = t.model.appendText(ids, fr.text, afterSpecial)
		afterSpecial = false
	}
	switch {
	case opt.AddSpecial && wpm && v.SEP != NoToken:
		ids = append(ids, v.SEP)
	case opt.AddSpecial && !wpm && v.AddEOS && v.EOS != NoToken:
		ids = append(ids, v.EOS)
	}
	return ids
}

// partition splits text at special tokens, longest token first, as
// llama.cpp's tokenizer_st_partition does: each special token in turn claims
// its occurrences in the text that earlier (longer) tokens left. A token
// marked rstrip (Vocab.rstrip) also takes the whitespace after it, up to
// the end of that text.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{text: text, token: NoToken}}
	for _, id := range t.special {
		typ := t.vocab.Types[id]
		if !parseSpecial && (typ == TypeControl || typ == TypeUnknown) {
			continue
		}
		tok := t.vocab.Tokens[id]
		var out []fragment
		for i, fr := range frags {
			if fr.token != NoToken || !strings.Contains(fr.text, tok) {
				if out != nil {
					out = append(out, fr)
				}
				continue
			}
			if out == nil {
				out = append(make([]fragment, 0, len(frags)+2), frags[:i]...)
			}
			rest := fr.text
			for {
				k := strings.Index(rest, tok)
				if k < 0 {
					break
				}
				if k > 0 {
					out = append(out, fragment{text: rest[:k], token: NoToken})
				}
				out = append(out, fragment{token: id})
				rest = rest[k+len(tok):]
				if t.vocab.rstrip[id] {
					rest = strings.TrimLeft(rest, asciiSpace)
				}
			}
			if rest != "" {
				out = append(out, fragment{text: rest, token: NoToken})
			}
		}
		if out != nil {
			frags = out
		}
	}
	return frags
}

// asciiSpace is what C's isspace calls whitespace, which llama.cpp strips
// next to special tokens.
const asciiSpace = " \t\n\v\f\r"

// DecodeOptions say how Decode renders tokens that are not plain text.
type DecodeOptions struct {
	// Special renders control tokens as their text ("<|eot_id|>"); by default
	// they produce nothing, as in llama.cpp's detokenizer, except the
	// tool-call marks (toolCallMarks).
	Special bool
}

// Decode returns the text of ids. Bytes that do not form valid UTF-8 (a
// sequence cut short) come out as U+FFFD.
func (t *Tokenizer) Decode(ids []int32, opt DecodeOptions) string {
	d := t.NewDetokenizer(opt)
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Add(id))
	}
	b.WriteString(d.Flush())
	return b.String()
}

// TokenBytes returns the bytes token id adds to decoded text.
func (t *Tokenizer) TokenBytes(id int32, opt DecodeOptions) []byte {
	v := t.vocab
	if id < 0 || int(id) >= len(v.Tokens) {
		return nil
	}
	switch v.Types[id] {
	case TypeNormal, TypeByte:
		return t.model.tokenBytes(id)
	case TypeUserDefined:
		return []byte(v.Tokens[id])
	case TypeControl, TypeUnknown:
		if opt.Special || slices.Contains(t.marks, id) {
			return []byte(v.Tokens[id])
		}
	}
	return nil // unused and undefined tokens: nothing, special or not, as in llama.cpp
}
