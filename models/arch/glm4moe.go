package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// glm4moe: GLM-4.5, GLM-4.5-Air and GLM-4.6. llama's layer with biases on
// Q, K and V, Q and K normed per head where a file has the norms (the
// 355B's), rope over split halves of the first rope.dimension_count
// elements of each head, and the feed-forward's norm named
// post_attention_norm. The first leading_dense_block_count layers have a
// dense feed-forward; the others route each token to experts by the
// sigmoid of the router's logits, chosen with a per-expert bias
// (exp_probs_b) that does not weight them (GatingSigmoid), plus an
// ungated shared expert expert_shared_count experts wide. The files end
// with nextn_predict_layers multi-token-prediction layers, which
// llama.cpp keeps for speculative decoding and does not run to produce
// the next token's logits: folio leaves them unread. ERNIE 4.5's MoE
// models (newErnieMoEBlock) run the same layer.
type denseLeadBlock struct {
	*llamaBlock             // gate, up and down nil in the layers with experts
	qkvBias                 // where the file has them
	qNorm, kNorm gpu.Tensor // [1, HeadDim] each; nil: none
	moe          *moeFFN    // nil in the dense layers
}

func newGlm4moeBlock(ld *loader, c *Config, i int) block {
	return newDenseLeadBlock(ld, c, i, "post_attention_norm", ld.weight)
}

// newErnieMoEBlock is block i of ernie4_5-moe (ERNIE-4.5-21B-A3B,
// ERNIE-4.5-300B-A47B): glm4moe's layer without the Q/K norms, its
// feed-forward norm named ffn_norm, the experts weighted by softmax, the
// selection bias where the file has it, the shared expert where
// expert_shared_feed_forward_length says; llama.cpp loads an
// output-projection bias and leaves it out of its graph, as folio does.
func newErnieMoEBlock(ld *loader, c *Config, i int) block {
	return newDenseLeadBlock(ld, c, i, "ffn_norm", ld.optional)
}

// newDenseLeadBlock loads block i of glm4moe or ernie4_5-moe: its
// feed-forward norm named ffnNorm, the selection bias loaded by
// loadBias (ld.weight: required, ld.optional: where the file has it).
func newDenseLeadBlock(ld *loader, c *Config, i int, ffnNorm string, loadBias func(name string, rows, cols int) gpu.Tensor) block {
	p := fmt.Sprintf("blk.%d.", i)
	l := &denseLeadBlock{
		qkvBias: loadQKVBias(c, p, ld.optional),
		qNorm:   ld.optional(p+"attn_q_norm.weight", 1, c.HeadDim),
		kNorm:   ld.optional(p+"attn_k_norm.weight", 1, c.HeadDim),
	}
	l.loadLayer(ld, c, i, ffnNorm, loadBias)
	return l
}

// loadLayer loads block i's attention and feed-forward into l: llama's
// layer in the first DenseLead layers, else llama's attention and the
// experts with their selection bias through loadBias (loadLeadMoE); its
// feed-forward norm named ffnNorm.
func (l *denseLeadBlock) loadLayer(ld *loader, c *Config, i int, ffnNorm string, loadBias func(name string, rows, cols int) gpu.Tensor) {
	if i < c.DenseLead {
		l.llamaBlock = loadLlamaLayer(ld, c, i, ffnNorm)
		return
	}
	l.llamaBlock = loadLlamaAttention(ld, c, i, ffnNorm)
	l.moe = loadLeadMoE(ld, c, i, loadBias)
}

// loadLeadMoE loads block i's experts with their selection bias
// (exp_probs_b, through loadBias) and, where c has one, the shared
// expert: the feed-forward of glm4moe's layers with experts, and of
// deepseek2's and bailingmoe2's.
func loadLeadMoE(ld *loader, c *Config, i int, loadBias func(name string, rows, cols int) gpu.Tensor) *moeFFN {
	f := newMoEFFN(ld, c, i)
	f.probsB = loadBias(fmt.Sprintf("blk.%d.exp_probs_b.bias", i), 1, c.Experts)
	if c.SharedFFN > 0 {
		f.shared = loadShared(ld, c, i, false)
	}
	return &f
}

// countKey is a count readCounts reads into dst: absent, 0; else 0 to max.
type countKey struct {
	key string
	max int
	dst *int
}

// readCounts reads each count key (p its prefix), refusing one out of
// range.
func readCounts(f *gguf.File, p string, keys ...countKey) error {
	for _, k := range keys {
		v, ok := f.Int(p + k.key)
		if ok && (v < 0 || v > int64(k.max)) {
			return fmt.Errorf("%s%s = %d is out of range (0 to %d)", p, k.key, v, k.max)
		}
		*k.dst = int(v)
	}
	return nil
}

func (l *denseLeadBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	l.qkvBias.add(m, s)
	if l.qNorm != nil {
		be.RMSNorm(s.q, s.q, l.qNorm, m.Eps) // each head normed
	}
	if l.kNorm != nil {
		be.RMSNorm(s.k, s.k, l.kNorm, m.Eps)
	}
	m.attend(s, l.wo) // x += wo · attention(q, K, V)
	m.ffnOrExperts(s, l.moe, l.ffnNorm, l.gate, l.up, l.down)
}

// ffnOrExperts adds a layer's feed-forward of norm(x) to x: its experts
// where it has them (moe not nil), else the dense gate, up and down.
func (m *Model) ffnOrExperts(s *step, moe *moeFFN, norm, gate, up, down gpu.Tensor) {
	if moe != nil {
		moe.forward(m, s, norm)
		return
	}
	m.ffn(s, norm, gate, up, down)
}

// readGlm4moe reads the experts (expert_feed_forward_length wide, weighted
// as expert_gating_func says, sigmoid when it is absent or 0, divided by
// their sum when expert_weights_norm, times expert_weights_scale), the
// shared experts (expert_shared_count), the dense layers before the
// first with experts (leading_dense_block_count) and the
// multi-token-prediction layers after the last (nextn_predict_layers),
// which block_count counts and folio does not run. M-RoPE sections, where
// a file has them, turn a text position's pairs as the split halves do.
func readGlm4moe(f *gguf.File, p string, c *Config) error {
	return readLeadMoE(f, p, c, GatingSigmoid)
}

// readLeadMoE is readGlm4moe with gating the experts' weighting when
// expert_gating_func is absent or 0 (deepseek2's is softmax), and the
// experts' groups where the file has them.
func readLeadMoE(f *gguf.File, p string, c *Config, gating Gating) error {
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	count := func(key string, max int) (int, error) {
		v, ok := f.Int(p + key)
		if ok && (v < 0 || v > int64(max)) {
			return 0, fmt.Errorf("%s%s = %d is out of range (0 to %d)", p, key, v, max)
		}
		return int(v), nil
	}
	nextn, err := count("nextn_predict_layers", c.Layers-1)
	if err != nil {
		return err
	}
	c.Layers -= nextn
	if c.DenseLead, err = count("leading_dense_block_count", c.Layers); err != nil {
		return err
	}
	shared, err := count("expert_shared_count", 64)
	if err != nil {
		return err
	}
	c.SharedFFN = shared * c.ExpertFFN
	c.ExpertWeightsNorm = false // llama.cpp's default without the key
	if v, ok := f.Get(p + "expert_weights_norm"); ok {
		b, isBool := v.(bool)
		if !isBool {
			return fmt.Errorf("%sexpert_weights_norm holds a %T, not true or false", p, v)
		}
		c.ExpertWeightsNorm = b
	}
	if err := readExpertScale(f, p, c); err != nil {
		return err
	}
	if err := readExpertGroups(f, p, c); err != nil {
		return err
	}
	c.Gating = gating
	switch g, _ := f.Int(p + "expert_gating_func"); g {
	case 0:
	case 1:
		c.Gating = GatingSoftmax
	case 2:
		c.Gating = GatingSigmoid
	default:
		return fmt.Errorf("%sexpert_gating_func = %d: %s's experts are weighted by sigmoid (2) or softmax (1)", p, g, c.Arch)
	}
	return nil
}

// readErnieMoE reads ERNIE 4.5's experts (expert_feed_forward_length wide,
// softmax weights renormalized, as llama.cpp's graph passes norm_w, times
// expert_weights_scale where the file has it), its shared expert's width
// (expert_shared_feed_forward_length; absent: none) and the dense layers
// before the first with experts. interleave_moe_layer_step must be 1: for
// the layers between the steps llama.cpp loads no dense feed-forward and
// cannot run them either.
func readErnieMoE(f *gguf.File, p string, c *Config) error {
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	if step, ok := f.Int(p + "interleave_moe_layer_step"); !ok || step != 1 {
		return fmt.Errorf("%sinterleave_moe_layer_step is %d (present: %v): folio runs ERNIE 4.5 files with experts in every layer after the dense ones (1), as llama.cpp does", p, step, ok)
	}
	if err := readCounts(f, p, countKey{"leading_dense_block_count", c.Layers, &c.DenseLead},
		countKey{"expert_shared_feed_forward_length", 1 << 24, &c.SharedFFN}); err != nil {
		return err
	}
	return readExpertScale(f, p, c)
}

// readExpertScale reads expert_weights_scale, the factor on the chosen
// experts' weights (absent: none).
func readExpertScale(f *gguf.File, p string, c *Config) error {
	scale, err := hyper(f, p+"expert_weights_scale", 0, "a number of 0 or more (GLM-4.5's is 2.5)", func(v float64) bool { return v >= 0 })
	c.ExpertWeightsScale = float32(scale)
	return err
}

// readExpertGroups reads expert_group_count and expert_group_used_count
// (DeepSeek-V3's and Ling 2.0's group-limited routing), which llama.cpp
// reads for every family: absent, 0 or 1, no groups.
func readExpertGroups(f *gguf.File, p string, c *Config) error {
	if err := readCounts(f, p, countKey{"expert_group_count", 1 << 16, &c.ExpertGroups},
		countKey{"expert_group_used_count", 1 << 16, &c.GroupsUsed}); err != nil {
		return err
	}
	if c.ExpertGroups > 1 && (c.Experts%c.ExpertGroups != 0 || c.Experts/c.ExpertGroups < 2 || c.GroupsUsed <= 0 || c.GroupsUsed >= c.ExpertGroups) {
		return fmt.Errorf("%d experts in %d groups with %d searched: the groups must divide the experts, two or more each, and fewer than all be searched",
			c.Experts, c.ExpertGroups, c.GroupsUsed)
	}
	return nil
}
