package arch

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// granite: IBM Granite 3. llama's layer (rope over adjacent pairs) with
// multipliers: token embeddings × embedding_scale, attention scores ×
// attention.scale, each block's attention and feed-forward outputs ×
// residual_scale before their residual adds, logits ÷ logit_scale. The
// embedding and logit scales are the Model's (Config.EmbedScale,
// LogitScale); the block applies the other two (QueryScale,
// ResidualScale).
type graniteBlock struct {
	llamaBlock
}

func newGraniteBlock(ld *loader, c *Config, i int) block {
	return &graniteBlock{llamaBlock: *newLlamaBlock(ld, c, i).(*llamaBlock)}
}

func (l *graniteBlock) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)                          // xb [n, Dim]
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)               // q [n, QDim], k and v [n, KVDim]
	m.attention(s, &m.Rope, gpu.AttnOpts{Scale: m.attnScale()}, l.wo) // xb = wo · attention(q, K, V)
	m.residual(s)                                                     // x += xb · residual_scale
	be.RMSNorm(s.xb, s.x, l.ffnNorm, m.Eps)                           // xb [n, Dim]
	m.matMuls(s, s.xb, s.hb, l.gate, s.hb2, l.up)                     // hb, hb2 [n, FFN]
	be.SiLUMul(s.hb, s.hb, s.hb2)                                     // hb = silu(hb) · hb2
	be.MatMul(s.xb, s.hb, l.down)                                     // xb [n, Dim]
	m.residual(s)                                                     // x += xb · residual_scale
}

// residual adds a block's output xb to the stream x, scaled by
// ResidualScale when the model has one.
func (m *Model) residual(s *step) {
	if m.ResidualScale != 0 {
		m.be.Scale(s.xb, s.xb, m.ResidualScale)
	}
	m.be.Add(s.x, s.x, s.xb)
}

// readGranite reads the multipliers; logit_scale is required, as llama.cpp
// requires it. A file without rope (rope.scaling.finetuned false, which
// llama.cpp reads as "no rope" for granite) is refused.
func readGranite(f *gguf.File, p string, c *Config) error {
	positive := func(v float64) bool { return v > 0 && v < 1e6 }
	for _, k := range []struct {
		key string
		dst *float32
	}{
		{"embedding_scale", &c.EmbedScale}, {"attention.scale", &c.QueryScale},
		{"residual_scale", &c.ResidualScale}, {"logit_scale", &c.LogitScale},
	} {
		v, err := hyper(f, p+k.key, 0, "a positive number below 1e6 (Granite 3.3 uses 12, 1/64, 0.22 and 8)",
			func(v float64) bool { return v == 0 || positive(v) })
		if err != nil {
			return err
		}
		*k.dst = float32(v)
	}
	if _, ok := f.Get(p + "logit_scale"); !ok || c.LogitScale == 0 {
		return fmt.Errorf("no %slogit_scale: a granite file must have a positive one", p)
	}
	if v, ok := f.Get(p + "rope.scaling.finetuned"); ok && v == false {
		return fmt.Errorf("%srope.scaling.finetuned is false (granite without rope): folio does not run it", p)
	}
	return nil
}
