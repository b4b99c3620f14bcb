// Package tokenizer turns text into token ids and back exactly as a model's
// authors' tokenizer does, from the tokenizer.ggml.* metadata of a GGUF file.
//
// The algorithm is chosen by tokenizer.ggml.model:
//   - "llama": SentencePiece BPE (spm.go): score-ordered merges, byte fallback;
//   - "gpt2": byte-level BPE (bpe.go): merges by rank after a pre-tokenizer
//     chosen by tokenizer.ggml.pre (pretokenize.go);
//   - "gemma4": the same merges by rank over SentencePiece-style pieces,
//     with byte fallback (bpe_gemma4.go);
//   - "bert": WordPiece (wpm.go).
//
// Encode first splits the input at special tokens (tokenizer.go), then hands
// each run of plain text to the algorithm. Decoding is byte-exact and
// streaming-safe (detokenizer.go).
package tokenizer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"folio/models/gguf"
)

// TokenType is a token's kind as stored in tokenizer.ggml.token_type.
type TokenType int32

const (
	TypeUndefined   TokenType = 0
	TypeNormal      TokenType = 1
	TypeUnknown     TokenType = 2
	TypeControl     TokenType = 3
	TypeUserDefined TokenType = 4
	TypeUnused      TokenType = 5
	TypeByte        TokenType = 6
)

func (t TokenType) String() string {
	switch t {
	case TypeNormal:
		return "normal"
	case TypeUnknown:
		return "unknown"
	case TypeControl:
		return "control"
	case TypeUserDefined:
		return "user-defined"
	case TypeUnused:
		return "unused"
	case TypeByte:
		return "byte"
	}
	return fmt.Sprintf("type(%d)", int32(t))
}

// NoToken marks a special token id the vocabulary does not have.
const NoToken int32 = -1

// ErrVocab is wrapped by every error about unusable tokenizer metadata.
var ErrVocab = errors.New("tokenizer: invalid vocabulary")

// Vocab is the tokenizer metadata of a model, as read from GGUF.
type Vocab struct {
	Model  string      // tokenizer.ggml.model: "llama", "gpt2", "gemma4", "bert"
	Pre    string      // tokenizer.ggml.pre: the pre-tokenizer of "gpt2" vocabularies; "gemma4" for "gemma4" ones
	Tokens []string    // id -> piece as stored (▁ for spaces in SentencePiece, byte-level runes in gpt2)
	Scores []float32   // id -> score (SentencePiece merge priority); nil when absent
	Types  []TokenType // id -> type; all TypeNormal when absent
	Merges []string    // "left right" pairs by rank (gpt2, gemma4)

	BOS, EOS, EOT, EOM, UNK, PAD, SEP, CLS, MASK int32 // NoToken when absent
	FIMPre, FIMSuf, FIMMid                       int32 // fill in the middle (fim.go); NoToken when absent

	AddBOS, AddEOS         bool // add BOS / EOS when encoding with AddSpecial
	AddSpacePrefix         bool // SentencePiece: prefix plain text with a space
	RemoveExtraWhitespaces bool // SentencePiece normalizer option, kept for completeness
	Lowercase              bool // WordPiece normalizer: lowercase (tokenizer.ggml.normalizer.lowercase)
	StripAccents           bool // WordPiece normalizer: drop marks after NFD (.strip_accents, default Lowercase)

	// EOG are the tokens that end generation: EOS, EOT, EOM and the
	// end-of-turn tokens of known chat formats, as llama.cpp collects them.
	EOG []int32

	// rstrip marks the special tokens that take the whitespace after them
	// when the text is split at special tokens (setStripAttrs).
	rstrip map[int32]bool

	ids map[string]int32
}

// eogTexts are end-of-turn tokens of chat formats whose GGUF files often
// leave them out of eos/eot_token_id; llama.cpp treats them as ends of
// generation, and as control tokens, when the vocabulary has them.
var eogTexts = []string{
	"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
	"<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>",
	"<｜end▁of▁sentence｜>", "<end_of_utterance>",
}

// eogOnlyTexts end generation in llama.cpp as eogTexts do, but are never
// its EOT token: Gemma 4's end of text, end of turn, and the start of a
// tool's response, where the model waits for the caller; Solar Open's
// <|flush|> and <|calls|>; Kimi K2's [EOT] and [EOS]; MiniMax-M2's [e~[.
// llama.cpp also ends generation at any token "</s>" (for PaddleOCR);
// folio does not: in Qwen's vocabularies it is text (an HTML closing
// tag), and a reply writing it would stop and lose it from text.
var eogOnlyTexts = []string{"<eos>", "<turn|>", "<|tool_response>", "<|flush|>", "<|calls|>", "[EOT]", "[EOS]", "[e~["}

// IsEOG reports whether id ends generation.
func (v *Vocab) IsEOG(id int32) bool { return slices.Contains(v.EOG, id) }

// ID returns the id of a piece.
func (v *Vocab) ID(piece string) (int32, bool) {
	id, ok := v.ids[piece]
	return id, ok
}

// Size is the number of tokens.
func (v *Vocab) Size() int { return len(v.Tokens) }

// Type returns the type of token id.
func (v *Vocab) Type(id int32) TokenType { return v.Types[id] }

// LoadVocab reads the tokenizer.ggml.* keys of f.
func LoadVocab(f *gguf.File) (*Vocab, error) {
	v := &Vocab{Model: f.String("tokenizer.ggml.model"), Pre: f.String("tokenizer.ggml.pre")}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrVocab, f.Path, fmt.Sprintf(format, args...))
	}
	if v.Model == "" {
		return nil, fail("no tokenizer.ggml.model key: the file has no tokenizer")
	}
	tokens, ok := arrayOf[string](f, "tokenizer.ggml.tokens")
	if !ok || len(tokens) == 0 {
		return nil, fail("tokenizer.ggml.tokens is missing or not an array of strings")
	}
	if len(tokens) > 1<<30 {
		return nil, fail("%d tokens is more than folio supports", len(tokens))
	}
	v.Tokens = tokens
	if scores, ok := arrayOf[float32](f, "tokenizer.ggml.scores"); ok {
		if len(scores) != len(tokens) {
			return nil, fail("%d scores for %d tokens", len(scores), len(tokens))
		}
		v.Scores = scores
	}
	v.Types = make([]TokenType, len(tokens))
	if types, ok := arrayOf[int32](f, "tokenizer.ggml.token_type"); ok {
		if len(types) != len(tokens) {
			return nil, fail("%d token types for %d tokens", len(types), len(tokens))
		}
		for i, t := range types {
			v.Types[i] = TokenType(t)
		}
	} else {
		for i := range v.Types {
			v.Types[i] = TypeNormal
		}
	}
	if merges, ok := arrayOf[string](f, "tokenizer.ggml.merges"); ok {
		v.Merges = merges
	}
	v.ids = make(map[string]int32, len(tokens))
	for i, t := range tokens {
		// The first of duplicate pieces wins (llama.cpp refuses such a
		// vocabulary; folio keeps it usable).
		if _, dup := v.ids[t]; !dup {
			v.ids[t] = int32(i)
		}
	}

	// Defaults per algorithm, as llama.cpp assumes them when keys are absent.
	v.BOS, v.EOS, v.EOT, v.EOM, v.UNK, v.PAD, v.SEP, v.CLS, v.MASK =
		NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken, NoToken
	switch v.Model {
	case "llama":
		v.BOS, v.EOS, v.UNK = 1, 2, 0
		v.AddBOS, v.AddSpacePrefix = true, true
	case "gpt2":
		v.BOS, v.EOS = 11, 11
	case "gemma4":
		// llama.cpp's BPE with merges under the "gemma4" pre-tokenizer,
		// whatever tokenizer.ggml.pre says; no default special ids.
		v.Pre = "gemma4"
	case "bert":
		v.BOS, v.UNK, v.CLS, v.SEP, v.PAD, v.MASK = 101, 100, 101, 102, 0, 103
		v.Lowercase = true
	default:
		return nil, fail("tokenizer.ggml.model %q is not supported (folio reads llama, gpt2, gemma4 and bert)", v.Model)
	}
	for key, dst := range map[string]*int32{
		"bos": &v.BOS, "eos": &v.EOS, "eot": &v.EOT, "eom": &v.EOM, "unknown": &v.UNK,
		"padding": &v.PAD, "seperator": &v.SEP, "cls": &v.CLS, "mask": &v.MASK,
	} {
		id, ok := f.Int("tokenizer.ggml." + key + "_token_id")
		if !ok {
			continue
		}
		switch {
		case id == 0xFFFFFFFF || id < 0:
			*dst = NoToken
		case id >= int64(len(tokens)):
			return nil, fail("tokenizer.ggml.%s_token_id %d is outside the %d tokens", key, id, len(tokens))
		default:
			*dst = int32(id)
		}
	}
	for key, dst := range map[string]*bool{
		"add_bos_token": &v.AddBOS, "add_eos_token": &v.AddEOS,
		"add_space_prefix": &v.AddSpacePrefix, "remove_extra_whitespaces": &v.RemoveExtraWhitespaces,
		"normalizer.lowercase": &v.Lowercase,
	} {
		if b, ok := boolOf(f, "tokenizer.ggml."+key); ok {
			*dst = b
		}
	}
	if p := preTokenizers[v.Pre]; p != nil && p.spmStyle && (v.Model == "gpt2" || v.Model == "gemma4") {
		// llama.cpp adds BOS for its GEMMA4 pre-type even where the file
		// says add_bos_token false (with a warning): Gemma 4 needs it.
		v.AddBOS = true
	}
	v.StripAccents = v.Lowercase
	if b, ok := boolOf(f, "tokenizer.ggml.normalizer.strip_accents"); ok {
		v.StripAccents = b
	}
	for _, id := range []*int32{&v.BOS, &v.EOS, &v.UNK, &v.CLS, &v.SEP, &v.PAD, &v.MASK} {
		if *id >= int32(len(tokens)) { // a default that this small vocabulary lacks
			*id = NoToken
		}
	}
	if err := v.loadFIM(f); err != nil {
		return nil, err
	}
	v.collectEOG()
	v.setStripAttrs(f.String("general.name"))
	return v, nil
}

// harmonyTokens are gpt-oss's harmony-format tokens that llama.cpp makes
// user-defined in every vocabulary that has them, whatever their type in
// the file (control, in gpt-oss's): they are then matched in text even
// when special tokens are not parsed, and decode as their text, so a
// reply's "<|channel|>analysis<|message|>…" reaches the harmony parser.
var harmonyTokens = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}

// setHarmonyAttrs makes harmonyTokens user-defined, as llama.cpp does
// after it has collected the end-of-generation tokens (collectEOG).
func (v *Vocab) setHarmonyAttrs() {
	for _, text := range harmonyTokens {
		if id, ok := v.ids[text]; ok && int(id) < len(v.Types) {
			v.Types[id] = TypeUserDefined
		}
	}
}

// setStripAttrs gives the special tokens of Phi-3 models the rstrip
// attribute, as llama.cpp does by the model's general.name (containing
// "phi-3" or "phi3", in any case; so not "Phi 3.5 Mini Instruct"): every
// control, user-defined and unknown token, and </s>, swallows the
// whitespace that follows it in text split at special tokens, except
// <unk>, <s> and <|endoftext|>. Hugging Face's Phi-3 tokenizer has these
// tokens rstrip too, so "<|user|>\nhi" is <|user|> ▁hi, not <|user|> ▁ \n hi.
func (v *Vocab) setStripAttrs(name string) {
	name = strings.ToLower(name)
	if !strings.Contains(name, "phi-3") && !strings.Contains(name, "phi3") {
		return
	}
	v.rstrip = map[int32]bool{}
	for id, typ := range v.Types {
		if typ == TypeControl || typ == TypeUserDefined || typ == TypeUnknown {
			v.rstrip[int32(id)] = true
		}
	}
	if id, ok := v.ids["</s>"]; ok {
		v.rstrip[id] = true
	}
	for _, text := range []string{"<unk>", "<s>", "<|endoftext|>"} {
		if id, ok := v.ids[text]; ok {
			delete(v.rstrip, id)
		}
	}
}

// collectEOG fills EOG; an end-of-turn token stored as normal text becomes
// a control token, so that it is never shown as text. Then harmony's
// tokens get llama.cpp's types (setHarmonyAttrs, and <|end|> below).
func (v *Vocab) collectEOG() {
	for _, id := range []int32{v.EOS, v.EOT, v.EOM} {
		if id != NoToken && !slices.Contains(v.EOG, id) {
			v.EOG = append(v.EOG, id)
		}
	}
	for i, text := range slices.Concat(eogTexts, eogOnlyTexts) {
		id, ok := v.ids[text]
		if !ok || slices.Contains(v.EOG, id) {
			continue
		}
		if i < len(eogTexts) && v.EOT == NoToken && (v.Types[id] == TypeControl || v.Types[id] == TypeUserDefined) {
			v.EOT = id
		}
		v.Types[id] = TypeControl
		v.EOG = append(v.EOG, id)
	}
	// Gemma 4 has </s> as a plain token: where <|tool_response> is in the
	// vocabulary, llama.cpp takes </s> out of the ends of generation (even
	// as EOS) and makes it normal text, whatever its type in the file.
	if _, ok := v.ids["<|tool_response>"]; ok {
		if s, ok := v.ids["</s>"]; ok {
			v.EOG = slices.DeleteFunc(v.EOG, func(id int32) bool { return id == s })
			v.Types[s] = TypeNormal
			if v.EOT == s {
				v.EOT = NoToken
			}
		}
	}
	v.setHarmonyAttrs()
	// Harmony (gpt-oss) ends a reply with <|return|> or <|call|>; its <|end|>
	// ends one message of several (the thinking, then the answer), so it
	// does not end generation, as llama.cpp's vocabulary decides, and
	// becomes user-defined there: matched in text whether or not special
	// tokens are parsed, and decoded as its text.
	ret, okR := v.ids["<|return|>"]
	call, okC := v.ids["<|call|>"]
	end, okE := v.ids["<|end|>"]
	if okR && okC && okE && v.IsEOG(ret) && v.IsEOG(call) {
		v.EOG = slices.DeleteFunc(v.EOG, func(id int32) bool { return id == end })
		v.Types[end] = TypeUserDefined
		if v.EOT == end {
			v.EOT = NoToken
		}
	}
}

// arrayOf returns the typed slice of an array metadata value.
func arrayOf[T any](f *gguf.File, key string) ([]T, bool) {
	val, ok := f.Get(key)
	if !ok {
		return nil, false
	}
	a, ok := val.(gguf.Array)
	if !ok {
		return nil, false
	}
	s, ok := a.Values.([]T)
	return s, ok
}

func boolOf(f *gguf.File, key string) (bool, bool) {
	val, ok := f.Get(key)
	if !ok {
		return false, false
	}
	b, ok := val.(bool)
	return b, ok
}
