package synth

import (
	"fmt"
	"math"

	"folio/models/gguf"
)

// Gemma 3n (gemma3n: E2B, E4B) is Gemma 3's sandwich layer (Q and K normed
// per head, V normed without a weight, GeGLU, post-norms; its norm weights
// stored as they are, without Gemma 3's added 1) around a residual stream
// kept four times over (AltUp): each layer predicts the four copies from
// one another with coefficients routed from the first (altup_router,
// altup_predict_coef), runs attention and the feed-forward on the first,
// beside a low-rank branch (LAuReL: laurel_l, laurel_r), and corrects all
// four by what the layer changed (altup_correct_coef), the other three
// also by the layer's per-layer embedding (Gemma 4's E-layout's:
// inp_gate, proj, post_norm). altup_proj makes the three extra copies
// from the scaled token embedding and altup_unembd_proj folds them back
// before the output norm. The first ten layers' gates keep only what lies
// above their mean plus 1.645 standard deviations; the layers from the
// twentieth on write no K/V and attend layer 18's (windowed) or 19's
// (global); every fifth layer is global; the logits are soft-capped at 30
// and the output tied to the token embeddings.
//
// llama.cpp fixes these sizes and counts in its code and reads none of
// the keys the converter writes for them, so a file must have exactly
// them: gemma3nDefaults fills them in and refuses others.
const (
	gemma3nPLEDim      = 256 // embedding_length_per_layer_input (llama.cpp's n_embd_altup)
	gemma3nLaurelRank  = 64  // laurel_l's outputs
	gemma3nAltups      = 4   // altup.num_inputs; the first (altup.active_idx 0) runs the layer
	gemma3nKVLayers    = 20  // layers with K/V of their own (n_layer_kv_from_start)
	gemma3nSparse      = 10  // layers whose gates are sparse
	gemma3nLogitCap    = 30  // final_logit_softcapping
	gemma3nGlobalEvery = 5   // every fifth layer attends globally
)

// gemma3nSparsity is activation_sparsity_scale's value on the sparse
// layers: the standard normal's 95th percentile, as the converter computes
// it from activation_sparsity_pattern's 0.95 (llama.cpp's f_sparsity_std_mul).
const gemma3nSparsity = 1.6448533535003662

// gemma3nTiny: 25 layers, so that llama.cpp's fixed 20 with K/V of their
// own leave four windowed layers (20-23) reading layer 18's K/V and a
// global one (24) reading layer 19's; every fifth layer global (4, 9, 14,
// 19, 24) with rope base 1e6, the others a 16-token window with base
// 10000; the tiny preset's heads (4 of 64 over 2 K/V heads: as in E2B and
// E4B, n_embd/n_head wide).
func gemma3nTiny(c *Config) {
	c.Layers, c.RopeBase, c.Window, c.Tied = 25, 1000000, 16, true
}

// gemma3nWindowed reports whether layer l of a gemma3n file is windowed.
func gemma3nWindowed(l int) bool { return (l+1)%gemma3nGlobalEvery != 0 }

// gemma3nDefaults fills in Gemma 3n's fixed sizes (the per-layer
// embeddings' width, the shared layers, the soft-cap) and its window, and
// refuses values llama.cpp would not run as written.
func (c *Config) gemma3nDefaults() error {
	shared := max(0, c.Layers-gemma3nKVLayers)
	c.PLEDim = orDefault(c.PLEDim, gemma3nPLEDim)
	c.SharedKV = orDefault(c.SharedKV, shared)
	c.LogitCap = orDefault(c.LogitCap, gemma3nLogitCap)
	c.Window = orDefault(c.Window, 512) // E2B's and E4B's; llama.cpp requires the key
	switch {
	case c.PLEDim != gemma3nPLEDim:
		return fmt.Errorf("gemma3n's per-layer embeddings are %d wide in llama.cpp, not %d; drop --n-embd-per-layer", gemma3nPLEDim, c.PLEDim)
	case c.SharedKV != shared:
		return fmt.Errorf("gemma3n's layers from %d on share K/V in llama.cpp: %d of %d layers, not %d; drop --n-kv-shared", gemma3nKVLayers, shared, c.Layers, c.SharedKV)
	case c.LogitCap != gemma3nLogitCap:
		return fmt.Errorf("llama.cpp soft-caps gemma3n's logits at %d whatever the file says, not %v", gemma3nLogitCap, c.LogitCap)
	}
	return nil
}

// gemma3nMetadata writes Gemma 3n's keys beyond Gemma 3's as llama.cpp's
// converter does: the local layers' rope base, the window pattern (a bool
// a layer, true where windowed), AltUp's inputs, the per-layer
// embeddings' width, the shared layers, and each layer's gate sparsity
// (the normal quantile of activation_sparsity_pattern's value: 0.95 on the
// first ten layers, 0 and so -Inf on the others).
func gemma3nMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	pattern := make([]bool, c.Layers)
	sparsity := make([]float32, c.Layers)
	for l := range pattern {
		pattern[l] = gemma3nWindowed(l)
		sparsity[l] = float32(math.Inf(-1))
		if l < gemma3nSparse {
			sparsity[l] = gemma3nSparsity
		}
	}
	set(a+"rope.freq_base_swa", float32(10000))
	set(a+"altup.active_idx", uint32(0))
	set(a+"altup.num_inputs", uint32(gemma3nAltups))
	set(a+"embedding_length_per_layer_input", uint32(c.PLEDim))
	set(a+"attention.shared_kv_layers", uint32(c.SharedKV))
	set(a+"activation_sparsity_scale", gguf.Array{Elem: gguf.ValueFloat32, Values: sparsity})
	set(a+"attention.sliding_window_pattern", gguf.Array{Elem: gguf.ValueBool, Values: pattern})
}

// gemma3nTensors plans the model-wide tensors after token_embd. The AltUp
// projections mix whole copies of the stream and are rescaled to the
// first's magnitude, so only their directions matter. A per-layer
// embedding row is scaled by √PLEDim where it is looked up: of std
// 1/√PLEDim it weighs as much as the normed projection it is added to.
// The tensors llama.cpp's quantizer never quantizes (AltUp's, LAuReL's,
// per_layer_model_proj) stay F32.
func (m *Model) gemma3nTensors(pl plan, add func(name string, typ addType, mean, std float32, shape ...int)) {
	c := m.Config
	add("altup_proj.weight", addF32, 0, invSqrt(c.Embd), c.Embd, c.Embd, gemma3nAltups-1)        // [embd, embd, 3]
	add("altup_unembd_proj.weight", addF32, 0, invSqrt(c.Embd), c.Embd, c.Embd, gemma3nAltups-1) // [embd, embd, 3]
	pl.weight("per_layer_token_embd.weight", c.PLEDim*c.Layers, c.VocabSize, invSqrt(c.PLEDim))  // [ple*layers, vocab]
	add("per_layer_model_proj.weight", addF32, 0, invSqrt(c.Embd), c.Embd, c.PLEDim*c.Layers)    // [embd, ple*layers]
	pl.norm("per_layer_proj_norm.weight", c.PLEDim)
}

// gemma3nLayer plans layer p ("blk.N."), K and V included on the layers
// that read another's: llama.cpp loads them on every layer. Every output
// that reaches the stream is normed, so most scales set directions only;
// three set the behaviour. The scores are not scaled by 1/√HeadDim, so
// Q's and K's norm weights of HeadDim^-1/4 make them of std 1 (at 1,
// one key takes each query's attention and a random model's logits swing
// with every rounding: F16's weights moved them 0.1 to 0.2 of their
// spread, against 0.005 so). The router sees its normed input divided by Embd, so
// weights of std √Embd/2 give tanh inputs of std 1/2; coefficients of std
// 0.1 mix the four copies a little.
func (m *Model) gemma3nLayer(p string, pl plan, add func(name string, typ addType, mean, std float32, shape ...int)) {
	c := m.Config
	q, kv := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	post := func(name string) { add(name, addF32, 0.2, 0.01, c.Embd) } // what a layer adds, normed
	pl.norm(p+"attn_norm.weight", c.Embd)
	pl.weight(p+"attn_q.weight", c.Embd, q, invSqrt(c.Embd)) // [embd, heads*head_dim]
	pl.weight(p+"attn_k.weight", c.Embd, kv, invSqrt(c.Embd))
	pl.weight(p+"attn_v.weight", c.Embd, kv, invSqrt(c.Embd))
	qk := float32(math.Pow(float64(c.HeadDim), -0.25))
	add(p+"attn_q_norm.weight", addF32, qk, 0.05*qk, c.HeadDim) // per head, shared by all heads
	add(p+"attn_k_norm.weight", addF32, qk, 0.05*qk, c.HeadDim)
	pl.weight(p+"attn_output.weight", q, c.Embd, invSqrt(q)/2)
	post(p + "post_attention_norm.weight")
	pl.norm(p+"ffn_norm.weight", c.Embd)
	pl.weight(p+"ffn_gate.weight", c.Embd, c.FFN, invSqrt(c.Embd))
	pl.weight(p+"ffn_up.weight", c.Embd, c.FFN, invSqrt(c.Embd))
	pl.weight(p+"ffn_down.weight", c.FFN, c.Embd, invSqrt(c.FFN)/2)
	post(p + "post_ffw_norm.weight")
	pl.weight(p+"inp_gate.weight", c.Embd, c.PLEDim, invSqrt(c.Embd)) // [embd, ple]
	pl.weight(p+"proj.weight", c.PLEDim, c.Embd, invSqrt(c.PLEDim))   // [ple, embd]
	post(p + "post_norm.weight")
	add(p+"altup_correct_coef.weight", addF32, 0, 0.1, gemma3nAltups, gemma3nAltups) // [altups, altups]
	add(p+"altup_correct_scale.weight", addF32, 1, 0.1, c.Embd)
	add(p+"altup_predict_coef.weight", addF32, 0, 0.1, gemma3nAltups, gemma3nAltups*gemma3nAltups) // [altups, altups²]
	add(p+"altup_router.weight", addF32, 0, 1/(2*invSqrt(c.Embd)), c.Embd, gemma3nAltups)          // [embd, altups]
	pl.norm(p+"altup_router_norm.weight", c.Embd)
	add(p+"laurel_l.weight", addF32, 0, invSqrt(c.Embd), c.Embd, gemma3nLaurelRank)            // [embd, rank]
	add(p+"laurel_r.weight", addF32, 0, invSqrt(gemma3nLaurelRank), gemma3nLaurelRank, c.Embd) // [rank, embd]
	post(p + "laurel_post_norm.weight")
}
