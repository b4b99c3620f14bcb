package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// bailingmoe2: Ling 2.0 and Ring 2.0 (Ling-mini-2.0, Ling-flash-2.0,
// Ring-mini-2.0, Ring-flash-2.0). glm4moe's layer (denseLeadBlock) with Q,
// K and V fused in attn_qkv (loaded as row ranges, as phi3's are), no
// biases, Q and K normed per head before NEOX rope over
// rope.dimension_count elements of each head, the feed-forward norm named
// ffn_norm; a dense first layer, then experts weighted as
// expert_gating_func says (Ling 2.0: sigmoid with the selection bias,
// within groups) beside shared experts expert_shared_count ×
// (expert_shared_feed_forward_length, else the experts' width) wide. The
// trailing nextn_predict_layers layers are left unread, as llama.cpp skips
// them.
func newBailingMoE2Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	qkv, q, kv := p+"attn_qkv.weight", c.QDim(), c.KVDim()
	l := &denseLeadBlock{
		llamaBlock: &llamaBlock{attnNorm: w("attn_norm", 1, c.Dim),
			wq: ld.weightPart(qkv, 0, q, q+2*kv, c.Dim), wk: ld.weightPart(qkv, q, kv, q+2*kv, c.Dim),
			wv: ld.weightPart(qkv, q+kv, kv, q+2*kv, c.Dim), wo: w("attn_output", c.Dim, q), ffnNorm: w("ffn_norm", 1, c.Dim)},
		qNorm: w("attn_q_norm", 1, c.HeadDim),
		kNorm: w("attn_k_norm", 1, c.HeadDim),
	}
	if i < c.DenseLead {
		l.gate, l.up, l.down = loadFFN(ld, c, i)
		return l
	}
	l.moe = loadLeadMoE(ld, c, i, ld.optional) // readBailingMoE2 refused a file without the shared expert
	return l
}

// readBailingMoE2 reads glm4moe's expert keys (expert_gating_func
// required, as llama.cpp requires it) and the shared experts' width:
// expert_shared_count of expert_shared_feed_forward_length, else of the
// experts' own.
func readBailingMoE2(f *gguf.File, p string, c *Config) error {
	if _, ok := f.Int(p + "expert_gating_func"); !ok {
		return fmt.Errorf("no %sexpert_gating_func key: llama.cpp requires it of bailingmoe2 files", p)
	}
	if err := readLeadMoE(f, p, c, GatingSoftmax); err != nil {
		return err
	}
	shared, _ := f.Int(p + "expert_shared_count")
	if v, ok := f.Int(p + "expert_shared_feed_forward_length"); ok {
		if v <= 0 || v > 1<<24 {
			return fmt.Errorf("%sexpert_shared_feed_forward_length = %d is out of range", p, v)
		}
		c.SharedFFN = int(shared) * int(v)
	}
	if c.SharedFFN == 0 {
		return fmt.Errorf("%sexpert_shared_count is %d: bailingmoe2's layers with experts have a shared expert, which llama.cpp requires", p, shared)
	}
	return nil
}
