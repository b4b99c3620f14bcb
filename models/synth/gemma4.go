package synth

import (
	"fmt"

	"folio/models/gguf"
)

// Gemma 4 (gemma4): Gemma 3's sandwich layer with two attention shapes (the
// windowed layers' heads SWAHeadDim wide over SWAHeadsKV K/V heads, the
// global layers' HeadDim wide over HeadsKV), Q, K and V normed per head,
// the global layers' V their K (no attn_v), "proportional" rope on the
// global layers (rope_freqs: the first quarter of the pairs turn, the
// others' factor 1e30 holds them still) and partial rope on the windowed
// ones (SWARopeDims), each layer's output scaled (layer_output_scale),
// the logits soft-capped; with experts (Experts > 0, 26B-A4B's layout) a
// layer runs GeGLU experts routed from its scaled input beside its dense
// feed-forward. gemma4Tiny: four layers (the fourth global), a 16-token
// window, heads of 64 over two K/V heads on the windowed layers and of 128
// over one on the global one, rope over half of the windowed heads, a
// logit soft-cap of 30, and an output matrix of its own (llama.cpp takes
// one where a file has it; tied, a random model's logits are its input
// token's).
func gemma4Tiny(c *Config) {
	c.Layers, c.Window, c.HeadDim, c.HeadsKV, c.SWAHeadDim, c.SWAHeadsKV, c.SWARopeDims = 4, 16, 128, 1, 64, 2, 32
	c.LogitCap = 30
}

// gemma4Shared reports whether layer l is one of the last SharedKV layers,
// which attend earlier layers' K/V (E2B's and E4B's layout).
func (c *Config) gemma4Shared(l int) bool { return c.SharedKV > 0 && l >= c.Layers-c.SharedKV }

// gemma4Windowed reports whether layer l of a gemma4 file is windowed:
// three of four, as the tiny preset's pattern writes it.
func gemma4Windowed(l int) bool { return (l+1)%4 != 0 }

// gemma4Check checks the Gemma 4 fields: SWAHeadDim, SWAHeadsKV and
// SWARopeDims are gemma4's, and fit.
func (c *Config) gemma4Check() error {
	if c.Arch != "gemma4" {
		if c.SWAHeadDim != 0 || c.SWAHeadsKV != 0 || c.SWARopeDims != 0 || c.DoubleWide {
			return fmt.Errorf("the windowed layers' own head shape and double-wide feed-forwards are gemma4's, not %s's", c.Arch)
		}
		if (c.PLEDim != 0 || c.SharedKV != 0) && c.Arch != "gemma3n" {
			return fmt.Errorf("per-layer embeddings and shared K/V are gemma4's and gemma3n's, not %s's", c.Arch)
		}
		return nil
	}
	switch {
	case c.Window <= 0:
		return fmt.Errorf("gemma4 has a sliding window")
	case c.SWAHeadDim <= 0 || c.SWAHeadDim%2 != 0 || c.SWAHeadsKV <= 0 || c.Heads%c.SWAHeadsKV != 0:
		return fmt.Errorf("gemma4's windowed heads (%d wide over %d K/V heads) must be even and divide its %d heads", c.SWAHeadDim, c.SWAHeadsKV, c.Heads)
	case c.SWARopeDims <= 0 || c.SWARopeDims > c.SWAHeadDim || c.SWARopeDims%2 != 0:
		return fmt.Errorf("gemma4's windowed rope dims %d must be even and at most its windowed head size %d", c.SWARopeDims, c.SWAHeadDim)
	case c.HeadDim%8 != 0:
		return fmt.Errorf("gemma4's global head size %d must be a multiple of 8 (a quarter of its pairs turn)", c.HeadDim)
	case c.PLEDim < 0 || c.SharedKV < 0 || c.SharedKV > 0 && (c.Layers-c.SharedKV < 2 || !gemma4Windowed(c.Layers-c.SharedKV-2) || gemma4Windowed(c.Layers-c.SharedKV-1)):
		return fmt.Errorf("gemma4's %d shared layers of %d must follow a windowed layer and then a global one, and per-layer embeddings of %d not be negative", c.SharedKV, c.Layers, c.PLEDim)
	case c.DoubleWide && c.SharedKV == 0:
		return fmt.Errorf("gemma4's double-wide feed-forwards are its shared layers'; give it some")
	}
	return nil
}

// gemma4Metadata writes Gemma 4's keys as llama.cpp's converter does.
func gemma4Metadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	pattern := make([]bool, c.Layers)
	for l := range pattern {
		pattern[l] = gemma4Windowed(l)
	}
	set(a+"attention.sliding_window", uint32(c.Window))
	set(a+"attention.sliding_window_pattern", gguf.Array{Elem: gguf.ValueBool, Values: pattern})
	set(a+"attention.key_length_swa", uint32(c.SWAHeadDim))
	set(a+"attention.value_length_swa", uint32(c.SWAHeadDim))
	set(a+"rope.dimension_count_swa", uint32(c.SWARopeDims))
	set(a+"rope.freq_base_swa", float32(10000))
	set(a+"attention.shared_kv_layers", uint32(c.SharedKV))
	set(a+"embedding_length_per_layer_input", uint32(c.PLEDim))
	set(a+"final_logit_softcapping", c.LogitCap)
}

// gemma4FFN is layer l's feed-forward width: twice FFN on the shared
// layers with DoubleWide.
func (c *Config) gemma4FFN(l int) int {
	if c.DoubleWide && c.gemma4Shared(l) {
		return 2 * c.FFN
	}
	return c.FFN
}

// gemma4FFNs is feed_forward_length, one width per layer (gemma3n's all
// FFN, as its converter writes them).
func gemma4FFNs(c Config) gguf.Array {
	w := make([]uint32, c.Layers)
	for l := range w {
		w[l] = uint32(c.gemma4FFN(l))
	}
	return gguf.Array{Elem: gguf.ValueUint32, Values: w}
}

// gemma4KVHeads is head_count_kv, one count per layer.
func gemma4KVHeads(c Config) gguf.Array {
	kv := make([]uint32, c.Layers)
	for l := range kv {
		kv[l] = uint32(c.HeadsKV)
		if gemma4Windowed(l) {
			kv[l] = uint32(c.SWAHeadsKV)
		}
	}
	return gguf.Array{Elem: gguf.ValueUint32, Values: kv}
}

// gemma4RopeFreqs is rope_freqs: 1 for the first quarter of a global
// head's pairs, 1e30 for the rest, as the converter writes Gemma 4's
// proportional rope (partial_rotary_factor 0.25).
func gemma4RopeFreqs(c Config) []float32 {
	v := make([]float32, c.HeadDim/2)
	for i := range v {
		v[i] = 1
		if i >= c.HeadDim/8 {
			v[i] = 1e30
		}
	}
	return v
}

// gemma4Layer plans layer l (p is "blk.N."): attention of its shape, the
// dense feed-forward, and the experts with their norms and scales where
// the model has them.
func (m *Model) gemma4Layer(l int, p string, pl plan, add func(name string, typ addType, mean, std float32, shape ...int)) {
	c := m.Config
	hd, kvh := c.HeadDim, c.HeadsKV
	if gemma4Windowed(l) {
		hd, kvh = c.SWAHeadDim, c.SWAHeadsKV
	}
	q, kv, ffn := c.Heads*hd, kvh*hd, c.gemma4FFN(l)
	pl.norm(p+"attn_norm.weight", c.Embd)
	pl.weight(p+"attn_q.weight", c.Embd, q, invSqrt(c.Embd))
	shared := c.gemma4Shared(l) // reads another layer's K/V
	if !shared {
		pl.weight(p+"attn_k.weight", c.Embd, kv, invSqrt(c.Embd))
		if gemma4Windowed(l) { // the global layers' V is their K
			pl.weight(p+"attn_v.weight", c.Embd, kv, invSqrt(c.Embd))
		}
	}
	pl.norm(p+"attn_q_norm.weight", hd)
	if !shared {
		pl.norm(p+"attn_k_norm.weight", hd)
	}
	pl.weight(p+"attn_output.weight", q, c.Embd, invSqrt(q)/2)
	pl.norm(p+"post_attention_norm.weight", c.Embd)
	pl.norm(p+"ffn_norm.weight", c.Embd)
	pl.weight(p+"ffn_gate.weight", c.Embd, ffn, invSqrt(c.Embd))
	pl.weight(p+"ffn_up.weight", c.Embd, ffn, invSqrt(c.Embd))
	pl.weight(p+"ffn_down.weight", ffn, c.Embd, invSqrt(ffn)/2)
	pl.norm(p+"post_ffw_norm.weight", c.Embd)
	add(p+"layer_output_scale.weight", addF32, 0.8, 0.1, 1)
	if c.PLEDim > 0 {
		pl.weight(p+"inp_gate.weight", c.Embd, c.PLEDim, invSqrt(c.Embd))
		pl.weight(p+"proj.weight", c.PLEDim, c.Embd, invSqrt(c.PLEDim)/2)
		pl.norm(p+"post_norm.weight", c.Embd)
	}
	if c.Experts == 0 {
		return
	}
	m.moeTensors(p, add, invSqrt)
	add(p+"ffn_gate_inp.scale", addF32, 1, 0.1, c.Embd)
	add(p+"ffn_down_exps.scale", addF32, 1, 0.2, c.Experts)
	pl.norm(p+"pre_ffw_norm_2.weight", c.Embd)
	pl.norm(p+"post_ffw_norm_1.weight", c.Embd)
	pl.norm(p+"post_ffw_norm_2.weight", c.Embd)
}
