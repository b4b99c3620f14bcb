package arch

import (
	"fmt"

	"folio/models/gguf"
)

// minimax-m2: MiniMax-M2 and M2.1 (230B-A10B). llama's attention without
// biases, Q and K each normed over the whole projection (all heads at
// once, as OLMoE's), NEOX rope over the first rope.dimension_count
// elements of each head (64 of 128), the feed-forward norm named
// ffn_norm; every layer a mixture of experts chosen by the sigmoid of
// the router's logits plus a selection bias (exp_probs_b) and weighted
// by the sigmoids alone, divided by their sum (llama.cpp's graph passes
// norm_w true and reads no expert_weights_scale for this family), no
// shared expert and no dense layers.
func newMinimaxM2Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	return &denseLeadBlock{
		llamaBlock: loadLlamaAttention(ld, c, i, "ffn_norm"),
		qNorm:      ld.weight(p+"attn_q_norm.weight", 1, c.QDim()),
		kNorm:      ld.weight(p+"attn_k_norm.weight", 1, c.KVDim()),
		moe:        loadLeadMoE(ld, c, i, ld.weight),
	}
}

// readMinimaxM2 reads the experts (feed_forward_length wide, as
// llama.cpp's loader sizes them, whatever expert_feed_forward_length says;
// MiniMax-M2's converter writes the same width to both), weighted as
// expert_gating_func says (which llama.cpp requires of these files), and
// their groups where a file has them; the keys of other
// families' experts (shared experts, dense layers, a weight scale) are
// left unread, as llama.cpp leaves them.
func readMinimaxM2(f *gguf.File, p string, c *Config) error {
	g, ok := f.Int(p + "expert_gating_func")
	if !ok {
		return fmt.Errorf("no %sexpert_gating_func key: llama.cpp requires it of minimax-m2 files (MiniMax-M2's is 2, sigmoid)", p)
	}
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	c.ExpertFFN = c.FFN
	switch g {
	case 1:
		c.Gating = GatingSoftmax
	case 2:
		c.Gating = GatingSigmoid
	default:
		return fmt.Errorf("%sexpert_gating_func = %d: minimax-m2's experts are weighted by sigmoid (2) or softmax (1)", p, g)
	}
	return readExpertGroups(f, p, c)
}
