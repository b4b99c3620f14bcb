package arch

import (
	"fmt"

	"folio/models/gguf"
)

// dots1: rednote's dots.llm1 (142B-A14B). glm4moe's layer without biases
// or multi-token-prediction layers: Q and K normed per head before NEOX
// rope, the feed-forward norm named ffn_norm; the first
// leading_dense_block_count layers dense, then experts weighted as
// expert_gating_func says (which llama.cpp's graph needs: a file without
// it is refused), chosen with the selection bias where the file has one,
// normalized and scaled as expert_weights_norm and expert_weights_scale
// say, beside expert_shared_count shared experts (a count llama.cpp
// requires).
func newDots1Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	l := &denseLeadBlock{
		qNorm: ld.weight(p+"attn_q_norm.weight", 1, c.HeadDim),
		kNorm: ld.weight(p+"attn_k_norm.weight", 1, c.HeadDim),
	}
	l.loadLayer(ld, c, i, "ffn_norm", ld.optional)
	return l
}

// readDots1 reads glm4moe's expert keys with expert_gating_func and
// expert_shared_count required, as llama.cpp requires them of dots1
// files; its loader sizes K and V by the query heads, so a file with
// fewer KV heads is refused as llama.cpp refuses it.
func readDots1(f *gguf.File, p string, c *Config) error {
	if c.KVHeads != c.Heads {
		return fmt.Errorf("%d KV heads of %d: llama.cpp loads dots1's K and V with as many heads as Q", c.KVHeads, c.Heads)
	}
	for _, key := range []string{"expert_gating_func", "expert_shared_count"} {
		if _, ok := f.Int(p + key); !ok {
			return fmt.Errorf("no %s%s key: llama.cpp requires it of dots1 files", p, key)
		}
	}
	return readLeadMoE(f, p, c, GatingSoftmax)
}
