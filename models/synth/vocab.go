package synth

import (
	"fmt"
	"strings"

	"folio/models/gguf"
)

// Token types of tokenizer.ggml.token_type (llama.cpp's llama_token_type).
const (
	tokenNormal  int32 = 1
	tokenUnknown int32 = 2
	tokenControl int32 = 3
	tokenByte    int32 = 6
)

// padScore is the score of padding tokens: far below any real piece.
const padScore float32 = -1e6

// Vocab is a tokenizer: the tokenizer.* metadata of a model file.
type Vocab struct {
	kv     []gguf.KV // tokenizer.* keys, in file order
	tokens int
}

// Len returns the number of tokens.
func (v *Vocab) Len() int { return v.tokens }

// ByteVocab returns the fallback vocabulary: SentencePiece-style ("llama")
// with <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF> and "▁", the
// escaped space. Text tokenizes to "▁" for each space and one byte token
// per other UTF-8 byte (llama.cpp's byte fallback); without "▁" a space
// would come back from detokenization as the three bytes of "▁".
func ByteVocab() *Vocab {
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{tokenUnknown, tokenControl, tokenControl}
	for b := range 256 {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, tokenByte)
	}
	tokens = append(tokens, "\u2581")
	types = append(types, tokenNormal)
	scores := make([]float32, len(tokens))
	return &Vocab{tokens: len(tokens), kv: []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "llama"},
		{Key: "tokenizer.ggml.pre", Value: "default"},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array{Elem: gguf.ValueString, Values: tokens}},
		{Key: "tokenizer.ggml.scores", Value: gguf.Array{Elem: gguf.ValueFloat32, Values: scores}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array{Elem: gguf.ValueInt32, Values: types}},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.eos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(0)},
		{Key: "tokenizer.ggml.add_bos_token", Value: true},
		{Key: "tokenizer.ggml.add_eos_token", Value: false},
	}}
}

// LoadVocab reads every tokenizer.* key of a GGUF file, such as the
// ggml-vocab-*.gguf files of llama.cpp's tests.
func LoadVocab(path string) (*Vocab, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	v := &Vocab{}
	for _, kv := range f.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			v.kv = append(v.kv, kv) // the reader's values live on the heap, not in the mapping
		}
	}
	a, ok := vocabArray(v.kv, "tokenizer.ggml.tokens")
	if !ok || a.Elem != gguf.ValueString || a.Len() == 0 {
		return nil, fmt.Errorf("synth: %s has no tokenizer.ggml.tokens string array; pick a GGUF file with a vocabulary", path)
	}
	v.tokens = a.Len()
	return v, nil
}

func vocabArray(kv []gguf.KV, key string) (gguf.Array, bool) {
	for _, e := range kv {
		if e.Key == key {
			a, ok := e.Value.(gguf.Array)
			return a, ok
		}
	}
	return gguf.Array{}, false
}

// padded returns the vocabulary's keys with the per-token arrays (tokens,
// token types, scores) extended to n entries by NORMAL tokens "[PAD<i>]".
// No merge or piece leads to them, so text never tokenizes to them.
func (v *Vocab) padded(n int) ([]gguf.KV, error) {
	out := make([]gguf.KV, len(v.kv))
	copy(out, v.kv)
	extra := n - v.tokens
	if extra == 0 {
		return out, nil
	}
	for i, kv := range out {
		a, isArray := kv.Value.(gguf.Array)
		if !isArray || a.Len() != v.tokens {
			continue
		}
		var err error
		switch kv.Key {
		case "tokenizer.ggml.tokens":
			out[i].Value, err = padArray(a, extra, func(k int) string { return fmt.Sprintf("[PAD%d]", k) })
		case "tokenizer.ggml.token_type":
			out[i].Value, err = padArray(a, extra, func(int) int32 { return tokenNormal })
		case "tokenizer.ggml.scores":
			out[i].Value, err = padArray(a, extra, func(int) float32 { return padScore })
		}
		if err != nil {
			return nil, fmt.Errorf("synth: pad %s: %w", kv.Key, err)
		}
	}
	return out, nil
}

// padArray returns a copy of a with extra values fill(0), fill(1), ...
// appended; a must hold a []T.
func padArray[T any](a gguf.Array, extra int, fill func(int) T) (gguf.Array, error) {
	vs, ok := a.Values.([]T)
	if !ok {
		var zero T
		return a, fmt.Errorf("holds %T, want []%T", a.Values, zero)
	}
	grown := make([]T, len(vs), len(vs)+extra)
	copy(grown, vs)
	for k := range extra {
		grown = append(grown, fill(k))
	}
	return gguf.Array{Elem: a.Elem, Values: grown}, nil
}
