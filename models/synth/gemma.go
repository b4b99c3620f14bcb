package synth

import "fmt"

// The first Gemma (and CodeGemma) is llama's layer with GeGLU, its output
// tied to the token embeddings: none of the later ones' post-norms,
// windows, soft-caps or Q/K norms.
//
// Gemma 2 and 3 are llama's layer with a post-norm after attention and
// after the feed-forward (post_attention_norm, post_ffw_norm), GeGLU in
// place of SwiGLU, and sliding-window attention on some layers; Gemma 2
// soft-caps attention scores and logits, Gemma 3 norms each head of Q and
// K (attn_q_norm, attn_k_norm). Their norm weights are stored with the 1
// that Gemma's RMS norm adds already added, as llama.cpp's converter
// writes them, so the planned norms (1 with a little noise) are right as
// they are. The output matrix is always the token embeddings: llama.cpp
// loads no output.weight for gemma2.

// Real shapes (weights stay random).
var (
	// Gemma 2 2B.
	gemma2_2B = Config{Arch: "gemma2", Embd: 2304, Layers: 26, Heads: 8, HeadsKV: 4, HeadDim: 256, FFN: 9216,
		Ctx: 8192, VocabSize: 256000, Tied: true, RopeBase: 10000, Window: 4096, AttnSoftcap: 50, LogitCap: 30}
	// Gemma 3 1B: one KV head; n_embd 1152 is not a multiple of 256, so
	// K-quants fall back to Q8_0 for most weights.
	gemma3_1B = Config{Arch: "gemma3", Embd: 1152, Layers: 26, Heads: 4, HeadsKV: 1, HeadDim: 256, FFN: 6912,
		Ctx: 32768, VocabSize: 262144, Tied: true, RopeBase: 1000000, Window: 512}
	// Gemma 3 4B's text model, with its linear rope scaling of 8 on the
	// global layers; its vocabulary is padded to 262208 tokens.
	gemma3_4B = Config{Arch: "gemma3", Embd: 2560, Layers: 34, Heads: 8, HeadsKV: 4, HeadDim: 256, FFN: 10240,
		Ctx: 131072, VocabSize: 262208, Tied: true, RopeBase: 1000000, RopeScale: 8, Window: 1024}
)

// gemma2Tiny: a 16-token window (shorter than a test prompt) on layer 0,
// full attention on layer 1, and soft-caps small enough that leaving one
// out changes the logits by far more than any test tolerance (Gemma 2's
// own, 50 and 30, barely touch a random model's scores).
func gemma2Tiny(c *Config) {
	c.Tied, c.Window, c.AttnSoftcap, c.LogitCap = true, 16, 5, 4
}

// gemma3Tiny: six layers (five with a 16-token window and the local rope
// base, then one global with base 1e6 and linear scaling 8), heads of 128
// (not n_embd/n_head) and one KV head, as in Gemma 3 1B.
func gemma3Tiny(c *Config) {
	c.Layers, c.HeadsKV, c.HeadDim, c.Tied = 6, 1, 128, true
	c.RopeBase, c.RopeScale, c.Window = 1000000, 8, 16
}

// gemmaTiny: heads of 128 (not n_embd/n_head) and one KV head, as in
// Gemma 2B (Gemma 7B's 16 heads of 256 are wider than its n_embd too).
func gemmaTiny(c *Config) {
	c.HeadsKV, c.HeadDim, c.Tied = 1, 128, true
}

// isGemma: Gemma 2, Gemma 3, Gemma 3n and EmbeddingGemma, with post-norms
// and windows; the first Gemma is "gemma" alone.
func isGemma(arch string) bool {
	return arch == "gemma2" || arch == "gemma3" || arch == "gemma3n" || arch == "gemma-embedding"
}

// gemmaDefaults fills in Gemma's defaults (llama.cpp's, for keys a file
// may leave out) and checks the Gemma fields.
func (c *Config) gemmaDefaults() error {
	if !c.Tied {
		return fmt.Errorf("%s ties its output to the token embeddings (llama.cpp loads no output.weight); drop --no-tie-embeddings", c.Arch)
	}
	if c.Window < 0 || c.AttnSoftcap < 0 || c.LogitCap < 0 {
		return fmt.Errorf("sliding window %d and soft-caps %v, %v must not be negative", c.Window, c.AttnSoftcap, c.LogitCap)
	}
	if c.Arch == "gemma-embedding" {
		c.Window = orDefault(c.Window, 512) // llama.cpp requires the key; EmbeddingGemma's
	}
	if c.Arch == "gemma2" {
		c.Window = orDefault(c.Window, 4096)
		c.AttnSoftcap = orDefault(c.AttnSoftcap, 50)
		c.LogitCap = orDefault(c.LogitCap, 30)
	} else if c.AttnSoftcap != 0 {
		return fmt.Errorf("%s has no attention soft-capping (attn_logit_softcapping is Gemma 2's)", c.Arch)
	}
	if c.Arch == "gemma3n" {
		return c.gemma3nDefaults()
	}
	return nil
}

// orDefault is v, or def when v is 0.
func orDefault[T int | float32](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// gemmaMetadata writes the sliding window and the soft-caps as llama.cpp's
// converter does. No sliding_window_pattern: llama.cpp's default pattern
// (every other layer for Gemma 2, five of every six for Gemma 3) is the
// models' own, and real files leave it out.
func (m *Model) gemmaMetadata(set func(string, any)) {
	c, a := m.Config, m.Config.Arch+"."
	if c.Window > 0 {
		set(a+"attention.sliding_window", uint32(c.Window))
	}
	if c.AttnSoftcap > 0 {
		set(a+"attn_logit_softcapping", c.AttnSoftcap)
	}
	if c.LogitCap > 0 {
		set(a+"final_logit_softcapping", c.LogitCap)
	}
}
