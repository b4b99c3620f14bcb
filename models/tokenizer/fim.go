package tokenizer

import (
	"fmt"

	"folio/models/gguf"
)

// fimTokens are the three tokens of fill-in-the-middle prompts, as
// llama.cpp finds them: the tokenizer.ggml.fim_*_token_id key, else its
// older name, else the first token whose text is one of the known
// spellings (such a token becomes a control token, as in llama.cpp, so
// that user text never turns into it).
var fimTokens = []struct {
	key, old string
	texts    []string
}{
	{"fim_pre", "prefix", []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>"}},
	{"fim_suf", "suffix", []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>"}},
	{"fim_mid", "middle", []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>"}},
}

// loadFIM fills v.FIMPre, v.FIMSuf and v.FIMMid from f (NoToken when the
// vocabulary has none).
func (v *Vocab) loadFIM(f *gguf.File) error {
	dst := []*int32{&v.FIMPre, &v.FIMSuf, &v.FIMMid}
	for i, t := range fimTokens {
		*dst[i] = NoToken
		for _, key := range []string{t.key, t.old} {
			id, ok := f.Int("tokenizer.ggml." + key + "_token_id")
			if !ok {
				continue
			}
			if id >= int64(len(v.Tokens)) {
				return fmt.Errorf("%w: %s: tokenizer.ggml.%s_token_id %d is outside the %d tokens", ErrVocab, f.Path, key, id, len(v.Tokens))
			}
			if id >= 0 && id != 0xFFFFFFFF {
				*dst[i] = int32(id)
			}
			break
		}
		if *dst[i] != NoToken {
			continue
		}
		for _, text := range t.texts {
			if id, ok := v.ids[text]; ok {
				*dst[i] = id
				v.Types[id] = TypeControl
				break
			}
		}
	}
	return nil
}

// HasFIM reports whether the vocabulary has the three fill-in-the-middle
// tokens.
func (v *Vocab) HasFIM() bool {
	return v.FIMPre != NoToken && v.FIMSuf != NoToken && v.FIMMid != NoToken
}

// FIMPrompt returns the prompt that asks a model trained on fill in the
// middle for the text between prefix and suffix (their token ids, encoded
// as plain text): BOS when bos is set and the vocabulary adds one, then
// FIM_PRE prefix FIM_SUF suffix FIM_MID, the prefix-suffix-middle order of
// llama.cpp's infill. The model generates the middle after FIM_MID. The
// vocabulary must have the tokens (HasFIM).
func (v *Vocab) FIMPrompt(prefix, suffix []int32, bos bool) []int32 {
	ids := make([]int32, 0, len(prefix)+len(suffix)+4)
	if bos && v.AddBOS && v.BOS != NoToken {
		ids = append(ids, v.BOS)
	}
	ids = append(append(ids, v.FIMPre), prefix...)
	ids = append(append(ids, v.FIMSuf), suffix...)
	return append(ids, v.FIMMid)
}
