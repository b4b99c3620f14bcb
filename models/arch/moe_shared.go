package arch

import (
	"fmt"
	"math"

	"folio/gpu"
)

// A shared expert is a SwiGLU feed-forward of SharedFFN that every token
// runs besides its chosen experts; its output joins their weighted sum.
// qwen2moe scales it by sigmoid(gate_inp_shexp · h), a gate of its own
// per token; granitemoe adds it as it is.
type sharedExpert struct {
	gate, up, down gpu.Tensor // [SharedFFN, Dim], [SharedFFN, Dim], [Dim, SharedFFN]
	gateInp        gpu.Tensor // [1, Dim] (ffn_gate_inp_shexp); nil: ungated
	// gemma4's dense feed-forward beside its experts: GeGLU, its input the
	// layer's input normed by norm (not the experts'), its output normed by
	// post; nil: the experts' input, no post norm
	gelu       bool
	norm, post gpu.Tensor
}

// loadShared loads layer i's shared expert: ffn_{gate,up,down}_shexp and,
// when gated, ffn_gate_inp_shexp.
func loadShared(ld *loader, c *Config, i int, gated bool) *sharedExpert {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	sh := &sharedExpert{
		gate: w("ffn_gate_shexp", c.SharedFFN, c.Dim),
		up:   w("ffn_up_shexp", c.SharedFFN, c.Dim),
		down: w("ffn_down_shexp", c.Dim, c.SharedFFN),
	}
	if gated {
		sh.gateInp = w("ffn_gate_inp_shexp", 1, c.Dim)
	}
	return sh
}

// sharedScratch is the shared expert's activations for maxRows rows.
type sharedScratch struct {
	h, h2 gpu.Tensor // [maxRows, SharedFFN]
	y     gpu.Tensor // [maxRows, Dim] its outputs, gated
	gate  gpu.Tensor // [maxRows, 1] the gate's logits
	yHost []float32  // [maxRows·Dim]
	gHost []float32  // [maxRows]
}

func allocShared(alloc func(rows, cols int) gpu.Tensor, rows int, c *Config) *sharedScratch {
	return &sharedScratch{
		h: alloc(rows, c.SharedFFN), h2: alloc(rows, c.SharedFFN),
		y: alloc(rows, c.Dim), gate: alloc(rows, 1),
		yHost: make([]float32, rows*c.Dim), gHost: make([]float32, rows),
	}
}

// sharedScratchBytes is the device activations allocShared adds.
func sharedScratchBytes(c *Config, maxRows int) int64 {
	if c.SharedFFN == 0 {
		return 0
	}
	return 4 * int64(maxRows) * int64(2*c.SharedFFN+c.Dim+1)
}

// run returns g · down(silu(gate(h)) · up(h)) for each row, [rows, Dim],
// h = s.xb (the normed residual the experts run on), g =
// sigmoid(gateInp · h), or 1 when ungated. The gate's logits and the
// outputs come down and the product (rounded to float32, as llama.cpp's
// ggml_mul) goes back up.
func (sh *sharedExpert) run(m *Model, s *step) gpu.Tensor {
	be, ss, dim := m.be, m.moe.shared, m.Dim
	n := s.xb.Rows()
	h, h2, y := be.Slice(ss.h, n), be.Slice(ss.h2, n), be.Slice(ss.y, n)
	in := s.xb
	if sh.norm != nil {
		in = y // read before y is written
		be.RMSNorm(in, s.x, sh.norm, m.Eps)
	}
	m.matMuls(s, in, h, sh.gate, h2, sh.up) // [n, SharedFFN]
	if sh.gelu {
		be.GELUMul(h, h, h2)
	} else {
		be.SiLUMul(h, h, h2)
	}
	be.MatMul(y, h, sh.down) // [n, Dim]
	if sh.post != nil {
		be.RMSNorm(y, y, sh.post, m.Eps)
	}
	if sh.gateInp == nil {
		return y
	}
	g := be.Slice(ss.gate, n)
	be.MatMul(g, s.xb, sh.gateInp) // [n, 1]
	be.Download(ss.gHost[:n], g)
	yh := ss.yHost[:n*dim]
	be.Download(yh, y)
	for r, x := range ss.gHost[:n] {
		gate := float32(1 / (1 + math.Exp(-float64(x))))
		row := yh[r*dim : (r+1)*dim]
		for d := range row {
			row[d] *= gate
		}
	}
	be.Upload(y, yh)
	return y
}
