package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// llama's layer with a mixture of experts for its feed-forward (moe.go),
// as three families write it:
//   - llama with llama.expert_count > 0: Mixtral 8x7B and 8x22B; experts
//     of feed_forward_length, softmax over all, the chosen weights
//     renormalized.
//   - qwen2moe: Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B. qwen2's biases on Q, K
//     and V, rope over split halves; experts of expert_feed_forward_length
//     whose softmax weights are not renormalized, and a shared expert
//     scaled by sigmoid(ffn_gate_inp_shexp · h).
//   - granitemoe (and granite with experts): Granite 3.0 1B-A400M and
//     3B-A800M, granite's multipliers (granite.go) around llama's layer;
//     experts of feed_forward_length, renormalized; Granite MoE Shared
//     files add an ungated shared expert.
//
// llama.cpp's loader no longer reads the per-expert tensors of the first
// Mixtral files (blk.N.ffn_gate.E.weight); neither does folio (readLlama
// says so).
type moeLlamaBlock struct {
	attnNorm, ffnNorm gpu.Tensor // [1, Dim]
	wq, wk, wv, wo    gpu.Tensor // [QDim, Dim], [KVDim, Dim] ×2, [Dim, QDim]
	bq, bk, bv        gpu.Tensor // [1, QDim], [1, KVDim] ×2: qwen2moe's; nil otherwise
	moe               moeFFN
}

func newMoELlamaBlock(ld *loader, c *Config, i int) block {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	l := &moeLlamaBlock{
		attnNorm: w("attn_norm", 1, c.Dim),
		wq:       w("attn_q", c.QDim(), c.Dim),
		wk:       w("attn_k", c.KVDim(), c.Dim),
		wv:       w("attn_v", c.KVDim(), c.Dim),
		wo:       w("attn_output", c.Dim, c.QDim()),
		ffnNorm:  w("ffn_norm", 1, c.Dim),
		moe:      newMoEFFN(ld, c, i),
	}
	if c.Arch == "qwen2moe" {
		b := func(name string, cols int) gpu.Tensor {
			return ld.weight(fmt.Sprintf("blk.%d.%s.bias", i, name), 1, cols)
		}
		l.bq, l.bk, l.bv = b("attn_q", c.QDim()), b("attn_k", c.KVDim()), b("attn_v", c.KVDim())
	}
	if c.SharedFFN > 0 {
		l.moe.shared = loadShared(ld, c, i, c.Arch == "qwen2moe")
	}
	return l
}

func (l *moeLlamaBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)            // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv) // q [n, QDim], k and v [n, KVDim]
	if l.bq != nil {
		be.Add(s.q, s.q, l.bq) //   + biases
		be.Add(s.k, s.k, l.bk)
		be.Add(s.v, s.v, l.bv)
	}
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale()}, l.wo) // xb = wo · attention(q, K, V)
	m.residual(s)                                                     // x += xb (· residual_scale)
	l.moe.forward(m, s, l.ffnNorm)                                    // x += Σ weight · expert(norm(x)) (+ shared)
}

// readLlama reads a llama file's experts, if it has any (Mixtral):
// expert_count 0 or absent is a dense llama. The first Mixtral files'
// layout, each expert in tensors of its own, is refused by name.
func readLlama(f *gguf.File, p string, c *Config) error {
	if !hasExperts(f, p) {
		return nil
	}
	if _, ok := f.Tensor("blk.0.ffn_gate.0.weight"); ok {
		return fmt.Errorf("this file stores each expert in tensors of its own (blk.0.ffn_gate.0.weight), a layout llama.cpp no longer loads either: convert the model again with llama.cpp's convert_hf_to_gguf.py, which stacks them in ffn_gate_exps")
	}
	return readFFNExperts(f, p, c)
}

// readGraniteMoE reads granite's multipliers and, for granitemoe always
// and for granite when it has them, the experts and the shared expert's
// width (expert_shared_feed_forward_length; 0 or absent: none).
func readGraniteMoE(f *gguf.File, p string, c *Config) error {
	if err := readGranite(f, p, c); err != nil {
		return err
	}
	if c.Arch == "granite" && !hasExperts(f, p) {
		return nil
	}
	if err := readFFNExperts(f, p, c); err != nil {
		return err
	}
	v, ok := f.Int(p + "expert_shared_feed_forward_length")
	if ok && (v < 0 || v > 1<<24) {
		return fmt.Errorf("%sexpert_shared_feed_forward_length = %d is out of range", p, v)
	}
	if ok {
		c.SharedFFN = int(v)
	}
	return nil
}

// readQwen2moe reads the experts (of expert_feed_forward_length; their
// softmax weights are not renormalized, as llama.cpp's qwen2moe graph
// passes norm_w false) and the shared expert's width
// (expert_shared_feed_forward_length, feed_forward_length when absent).
func readQwen2moe(f *gguf.File, p string, c *Config) error {
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	c.ExpertWeightsNorm = false
	return readSharedFFN(f, p, c)
}

// readSharedFFN reads the shared expert's width,
// expert_shared_feed_forward_length, feed_forward_length when absent
// (qwen2moe, hunyuan-moe).
func readSharedFFN(f *gguf.File, p string, c *Config) error {
	c.SharedFFN = c.FFN
	v, ok := f.Int(p + "expert_shared_feed_forward_length")
	switch {
	case ok && (v <= 0 || v > 1<<24):
		return fmt.Errorf("%sexpert_shared_feed_forward_length = %d is out of range", p, v)
	case ok:
		c.SharedFFN = int(v)
	}
	return nil
}

// hasExperts reports whether a family whose layers may be dense or not
// (llama, granite) has experts: expert_count above 0.
func hasExperts(f *gguf.File, p string) bool {
	v, ok := f.Int(p + "expert_count")
	return ok && v != 0
}

// readFFNExperts reads the experts of a family whose experts are
// feed_forward_length wide (llama.cpp ignores expert_feed_forward_length
// for llama, olmoe and granitemoe), renormalized after the choice.
func readFFNExperts(f *gguf.File, p string, c *Config) error {
	if err := readMoE(f, p, c); err != nil {
		return err
	}
	c.ExpertFFN = c.FFN
	return nil
}

// newLlamaOrMoEBlock is a dense llama layer, or one with experts when the
// file has them (Mixtral; granite, granitemoe).
func newLlamaOrMoEBlock(ld *loader, c *Config, i int) block {
	if c.Experts > 0 {
		return newMoELlamaBlock(ld, c, i)
	}
	if c.Arch == "granite" || c.Arch == "granitemoe" {
		return newGraniteBlock(ld, c, i)
	}
	return newLlamaBiased(ld, c, i)
}
