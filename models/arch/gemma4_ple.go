package arch

import (
	"fmt"
	"math"

	"folio/gpu"
)

// Gemma 4 E2B's and E4B's per-layer embeddings: every layer adds to its
// output a projection of its own PLEDim-wide input, made once a pass from
// the token (a row of per_layer_token_embd, PLEDim values for each layer,
// times √PLEDim) and from the scaled input embedding (per_layer_model_proj's
// rows of the layer, times 1/√Dim, RMS-normed by per_layer_proj_norm),
// their sum times 1/√2, as llama.cpp's gemma4 graph makes them. A layer
// then adds post_norm(proj(gelu(inp_gate · x) · input)).
//
// The looked-up rows hold every layer's part side by side; each layer's
// columns are copied into a tensor of its own by gpu.Rearrange (the
// backend's op, else on the host).
type ple struct {
	table gpu.Tensor   // per_layer_token_embd: [Vocab, PLEDim·Layers], looked up
	proj  []gpu.Tensor // per_layer_model_proj's rows of each layer: [PLEDim, Dim]
	norm  gpu.Tensor   // per_layer_proj_norm: [1, PLEDim]
	rows  gpu.Tensor   // [maxRows, PLEDim·Layers] the looked-up rows
	in    []gpu.Tensor // [maxRows, PLEDim] each layer's input
	tmp   gpu.Tensor   // [maxRows, PLEDim]
}

// loadPLE loads the model-wide per-layer embedding weights.
func loadPLE(ld *loader, c *Config) *ple {
	d, n := c.PLEDim, c.PLEDim*c.Layers
	p := &ple{
		table: ld.weight("per_layer_token_embd.weight", c.Vocab, n),
		norm:  ld.weight("per_layer_proj_norm.weight", 1, d),
	}
	for l := range c.Layers {
		p.proj = append(p.proj, ld.weightPart("per_layer_model_proj.weight", l*d, d, n, c.Dim))
	}
	ld.releaseRepacked("per_layer_model_proj.weight", p.proj)
	return p
}

func (m *Model) allocPLE(alloc func(rows, cols int) gpu.Tensor) {
	p, r, d := m.ple, m.maxRows, m.PLEDim
	p.rows, p.tmp = alloc(r, d*m.Layers), alloc(r, d)
	for range m.Layers {
		p.in = append(p.in, alloc(r, d))
	}
}

// prepare makes every layer's input for the step's rows from its tokens
// and s.x, the scaled input embeddings.
func (p *ple) prepare(m *Model, s *step) {
	be, d, layers := m.be, m.PLEDim, m.Layers
	n := len(s.tokens)
	rows := be.Slice(p.rows, n)
	be.Embed(rows, p.table, s.tokens)
	be.Scale(rows, rows, float32(math.Sqrt(float64(d))))
	for l := range layers {
		in, t := be.Slice(p.in[l], n), be.Slice(p.tmp, n)
		gpu.Rearrange(be, in, rows, gpu.Rearrangement{Rows: n, Heads: 1, Len: d,
			Dst: gpu.Layout{Row: d}, Src: gpu.Layout{Off: l * d, Row: d * layers}})
		be.MatMul(t, s.x, p.proj[l])
		be.Scale(t, t, float32(1/math.Sqrt(float64(m.Dim))))
		be.RMSNorm(t, t, p.norm, m.Eps)
		be.Add(in, t, in)
		be.Scale(in, in, float32(1/math.Sqrt2))
	}
}

// pleLayer is a layer's per-layer embedding weights.
type pleLayer struct {
	gate, proj, post gpu.Tensor // inp_gate [PLEDim, Dim], proj [Dim, PLEDim], post_norm [1, Dim]
}

func loadPLELayer(ld *loader, c *Config, i int) *pleLayer {
	w := func(name string, rows, cols int) gpu.Tensor {
		return ld.weight(fmt.Sprintf("blk.%d.%s.weight", i, name), rows, cols)
	}
	return &pleLayer{gate: w("inp_gate", c.PLEDim, c.Dim), proj: w("proj", c.Dim, c.PLEDim), post: w("post_norm", 1, c.Dim)}
}

// add is x += project(x).
func (pl *pleLayer) add(m *Model, s *step) {
	pl.project(m, s, s.x, s.xb)
	m.be.Add(s.x, s.x, s.xb)
}

// project sets dst to post(proj(gelu(gate · x) · the layer's input)).
func (pl *pleLayer) project(m *Model, s *step, x, dst gpu.Tensor) {
	be := m.be
	t := be.Slice(m.ple.tmp, x.Rows())
	be.MatMul(t, x, pl.gate)
	be.GELUMul(t, t, be.Slice(m.ple.in[s.layer], x.Rows()))
	be.MatMul(dst, t, pl.proj)
	be.RMSNorm(dst, dst, pl.post, m.Eps)
}
