package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// mistral3: the text model of Mistral Small 3.x and Ministral 3. llama's
// layer and rope pairing; its rope may be YaRN-scaled with the ramp
// parameters read from the file (yarnKeyArchs), and Ministral 3 scales its
// queries by Llama 4's attention temperature (readMistral3). llama.cpp's
// loader also takes optional biases on the output projection and the
// feed-forward, and experts; folio refuses files with any of those rather
// than run them differently.
func newMistral3Block(ld *loader, c *Config, i int) block {
	if ld.err == nil && i == 0 {
		ld.err = mistral3Unsupported(ld, c)
	}
	return &mistral3Block{newLlamaBlock(ld, c, i).(*llamaBlock)}
}

type mistral3Block struct{ *llamaBlock }

func (l mistral3Block) forward(m *Model, s *step) {
	be := m.be
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	m.matMuls(s, s.xb, s.q, l.wq, s.k, l.wk, s.v, l.wv)
	m.temperQueries(s)
	m.attend(s, l.wo)
	m.ffn(s, l.ffnNorm, l.gate, l.up, l.down)
}

// readMistral3 reads the attention temperature (attention.temperature_scale,
// Ministral 3's llama_4_scaling_beta): each query is scaled, after its
// rope, by 1 + scale·ln(⌊pos / n⌋ + 1), n the original context
// (rope.scaling.original_context_length, else context_length), as
// llama.cpp's loader takes them for mistral3. Below n the factor is 1.
func readMistral3(f *gguf.File, p string, c *Config) error {
	t, err := hyper(f, p+"attention.temperature_scale", 0, "a number from 0 to 10", func(v float64) bool { return v >= 0 && v <= 10 })
	if err != nil || t == 0 {
		return err
	}
	n := c.Context
	if v, ok := f.Int(p + "rope.scaling.original_context_length"); ok {
		n = int(v)
	}
	if n <= 0 || n > 1<<24 {
		return fmt.Errorf("attention temperature scaling (%sattention.temperature_scale = %v) needs a positive %scontext_length or %srope.scaling.original_context_length, and this file's is %d", p, t, p, p, n)
	}
	c.AttnTemp, c.AttnTempFloor = float32(t), n
	return nil
}

// temperQueries scales each row of s.q by its position's attention
// temperature (Config.AttnTemp), when the model has one and a row's factor
// is not 1: through the backend's ExpertSum (one weight a row, the product
// rounded as ggml_mul's) where it has one, else on the host. Rope rotates a
// scaled query into the scaled rotated query, so scaling before attention's
// rope is scaling after it.
func (m *Model) temperQueries(s *step) {
	if m.AttnTemp == 0 {
		return
	}
	t := &m.temper
	n := len(s.pos)
	t.factors = t.factors[:0]
	one := true
	for _, p := range s.pos {
		f := m.attnTempAt(p)
		t.factors = append(t.factors, f)
		one = one && f == 1
	}
	if one {
		return
	}
	be, qdim := m.be, m.QDim()
	if ex, ok := be.(gpu.Experts); ok {
		for len(t.ident) < n {
			t.ident = append(t.ident, int32(len(t.ident)))
		}
		ex.ExpertSum(s.att, s.q, t.ident[:n], t.factors)
		be.Gather(s.q, s.att, t.ident[:n])
		return
	}
	if cap(t.host) < n*qdim {
		t.host = make([]float32, n*qdim)
	}
	h := t.host[:n*qdim]
	be.Download(h, s.q)
	for r, f := range t.factors {
		for i := range h[r*qdim : (r+1)*qdim] {
			h[r*qdim+i] *= f
		}
	}
	be.Upload(s.q, h)
}

// attnTempAt is the attention temperature of a query at position p: as
// llama.cpp computes it, the floor of a float32 quotient, the log and the
// product in double, stored as float32.
func (c *Config) attnTempAt(p int32) float32 {
	q := math.Floor(float64((float32(p) + c.AttnTempOffset) / float32(c.AttnTempFloor)))
	return float32(math.Log(q+1)*float64(c.AttnTemp) + 1)
}

// temperScratch is temperQueries' host buffers.
type temperScratch struct {
	factors []float32
	ident   []int32
	host    []float32
}

// mistral3Unsupported says what of a mistral3 file folio does not run, nil
// when it runs all of it.
func mistral3Unsupported(ld *loader, c *Config) error {
	fail := func(what, fix string) error {
		return fmt.Errorf("%w %s: mistral3 %s is not supported yet; %s", ErrModel, ld.f.Path, what, fix)
	}
	p := c.Arch + "."
	if n, ok := ld.f.Int(p + "expert_count"); ok && n > 0 {
		return fail(fmt.Sprintf("mixture of experts (%d experts)", n), "run this model with llama.cpp")
	}
	for l := range c.Layers {
		for _, name := range []string{"attn_output.bias", "ffn_gate.bias", "ffn_up.bias", "ffn_down.bias"} {
			if _, ok := ld.f.Tensor(fmt.Sprintf("blk.%d.%s", l, name)); ok {
				return fail(fmt.Sprintf("bias blk.%d.%s", l, name), "run this model with llama.cpp")
			}
		}
	}
	return nil
}
