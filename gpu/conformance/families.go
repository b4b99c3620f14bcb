package conformance

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// tolGELU bounds GELUMul tighter than tolExact: gelu is a half from
// ggml's table, and a backend that skips the rounding of gelu to a half
// must fail (NMSE about 1e-8 on these cases); one element on the next
// half (a tanh a double's ulp away, or an FMA, on one of 8008) costs
// about 1e-10.
const tolGELU = 1e-9

// families: the ops of the families beyond llama. Scale into another
// tensor and in place; Softcap of values inside and far past the cap;
// GELUMul with and without up, over inputs past ±10 (where ggml's table
// ends) and in place; LayerNorm with both, one or neither of its weight
// and bias, in place; Rope with MScale (YaRN's magnitude); SwiGLUOAI over
// gates and ups past its limit (both clamped sides of up), in place and
// with another limit; SigmoidMul (through gpu.SigmoidMul: the backend's
// op, else the host's), in place too; Gemma 3n's row ops likewise (four
// streams mixed, one in place with a bias; MatchNorm, MulRow,
// SparsifyRows).
func (c *table) families() {
	x := c.vals(7*300, 4)
	c.add("Scale [7×300]", tolExact, func(be gpu.Backend) []float32 {
		dst := act(be, 7, 300, make([]float32, 7*300))
		be.Scale(dst, act(be, 7, 300, x), -0.37)
		return read(be, dst)
	})
	c.add("Scale [7×300] in place", tolExact, func(be gpu.Backend) []float32 {
		t := act(be, 7, 300, x)
		be.Scale(t, t, 48)
		return read(be, t)
	})
	for _, cap := range []float32{30, 1.5} {
		logits := c.vals(3*1003, 60)
		c.add(fmt.Sprintf("Softcap %g [3×1003]", cap), tolExact, func(be gpu.Backend) []float32 {
			t := act(be, 3, 1003, logits)
			be.Softcap(t, cap)
			return read(be, t)
		})
	}

	// Mostly where gelu bends (|x| < 4, where its halves are not x's own),
	// then the table's ends and past them.
	g, u := c.vals(8*1001, 4), c.vals(8*1001, 2)
	copy(g, []float32{-10, 10, 9.999, -9.999, -10.001, 10.001, -12, 12})
	c.add("GELUMul [8×1001]", tolGELU, func(be gpu.Backend) []float32 {
		gt := act(be, 8, 1001, g)
		be.GELUMul(gt, gt, act(be, 8, 1001, u))
		return read(be, gt)
	})
	c.add("GELUMul [8×1001] without up", tolGELU, func(be gpu.Backend) []float32 {
		dst := act(be, 8, 1001, make([]float32, 8*1001))
		be.GELUMul(dst, act(be, 8, 1001, g), nil)
		return read(be, dst)
	})

	for _, s := range []struct {
		rows, cols int
		w, b       bool
	}{{3, 768, true, true}, {5, 100, true, false}, {2, 2048, false, true}, {4, 37, false, false}} {
		rows, cols := s.rows, s.cols
		x := c.vals(rows*cols, 3)
		for i := range x {
			x[i] += 1.5 // a mean away from 0
		}
		wb, bb := weightBytes(gguf.TypeF32, 1, cols, c.vals(cols, 1)), weightBytes(gguf.TypeF32, 1, cols, c.vals(cols, 1))
		c.add(fmt.Sprintf("LayerNorm [%d×%d] w %v b %v", rows, cols, s.w, s.b), tolExact, func(be gpu.Backend) []float32 {
			xt := act(be, rows, cols, x)
			var w, b gpu.Tensor
			if s.w {
				w = weight(be, gguf.TypeF32, 1, cols, wb)
			}
			if s.b {
				b = weight(be, gguf.TypeF32, 1, cols, bb)
			}
			be.LayerNorm(xt, xt, w, b, 1e-12)
			return read(be, xt)
		})
	}

	sg, su := c.vals(6*517, 10), c.vals(6*517, 10)
	copy(sg, []float32{7, -7, 7.001, -30, 30, 0})
	copy(su, []float32{7, -7, -7.001, 30, -30, -1})
	for _, p := range [][2]float32{{1.702, 7}, {1, 3}} {
		alpha, limit := p[0], p[1]
		c.add(fmt.Sprintf("SwiGLUOAI alpha %g limit %g [6×517]", alpha, limit), tolExact, func(be gpu.Backend) []float32 {
			dst := act(be, 6, 517, make([]float32, 6*517))
			be.SwiGLUOAI(dst, act(be, 6, 517, sg), act(be, 6, 517, su), alpha, limit)
			return read(be, dst)
		})
	}
	c.add("SwiGLUOAI [6×517] in place", tolExact, func(be gpu.Backend) []float32 {
		gt := act(be, 6, 517, sg)
		be.SwiGLUOAI(gt, gt, act(be, 6, 517, su), 1.702, 7)
		return read(be, gt)
	})
	// gates far past the sigmoid's ends (su's ±30) and at 0
	c.add("SigmoidMul [6×517]", tolExact, func(be gpu.Backend) []float32 {
		dst := act(be, 6, 517, make([]float32, 6*517))
		gpu.SigmoidMul(be, dst, act(be, 6, 517, sg), act(be, 6, 517, su))
		return read(be, dst)
	})
	c.add("SigmoidMul [6×517] in place", tolExact, func(be gpu.Backend) []float32 {
		xt := act(be, 6, 517, sg)
		gpu.SigmoidMul(be, xt, xt, act(be, 6, 517, su))
		return read(be, xt)
	})

	c.streams()

	factors := make([]float32, 16)
	for i := range factors {
		factors[i] = 1 + float32(i)/3
	}
	for _, r := range []gpu.Rope{
		{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1, MScale: 1.2079},
		{HeadDim: 96, Dims: 32, Base: 10000, Scale: 0.25, Neox: true, Factors: factors, MScale: 0.8},
	} {
		heads, rows := 2, 4
		cols := heads * r.HeadDim
		x := c.vals(rows*cols, 1)
		pos := []int32{0, 3, 511, 20000}
		c.add(fmt.Sprintf("Rope dims %d of %d, neox %v, factors %v, mscale %g", r.Dims, r.HeadDim, r.Neox, r.Factors != nil, r.MScale), tolExact, func(be gpu.Backend) []float32 {
			t := act(be, rows, cols, x)
			be.Rope(t, pos, &r)
			return read(be, t)
		})
	}
}

// streams adds Gemma 3n's row ops (gpu/streams.go), each through its gpu
// function: the backend's op, else the host's.
func (c *table) streams() {
	const rows, n = 5, 301
	s := [][]float32{c.vals(rows*n, 3), c.vals(rows*n, 3), c.vals(rows*n, 3), c.vals(rows*n, 3)}
	coefs := c.vals(rows*16, 1)
	streams := func(be gpu.Backend) []gpu.Tensor {
		var out []gpu.Tensor
		for _, v := range s {
			out = append(out, act(be, rows, n, v))
		}
		return out
	}
	c.add("MixRows 4 streams [5×301]", tolExact, func(be gpu.Backend) []float32 {
		in, dst := streams(be), act(be, rows, n, make([]float32, rows*n))
		gpu.MixRows(be, dst, in[2], in, act(be, rows, 16, coefs), []int{8, 9, 10, 11}, 0)
		return read(be, dst)
	})
	c.add("MixRows 1 source, bias 1, in place [5×301]", tolExact, func(be gpu.Backend) []float32 {
		in := streams(be)
		gpu.MixRows(be, in[0], in[0], in[3:], act(be, rows, 16, coefs), []int{5}, 1)
		return read(be, in[0])
	})
	c.add("MatchNorm [5×301] in place", tolExact, func(be gpu.Backend) []float32 {
		in := streams(be)
		gpu.MatchNorm(be, in[1], in[1], in[0])
		return read(be, in[1])
	})
	c.add("MulRow [5×301]", tolExact, func(be gpu.Backend) []float32 {
		in, dst := streams(be), act(be, rows, n, make([]float32, rows*n))
		gpu.MulRow(be, dst, in[2], s[3][:n])
		return read(be, dst)
	})
	c.add("SparsifyRows [5×301]", tolExact, func(be gpu.Backend) []float32 {
		t := act(be, rows, n, s[1])
		gpu.SparsifyRows(be, t, 1.6448533535003662)
		return read(be, t)
	})
}
