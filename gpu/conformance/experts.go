package conformance

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

// experts: gpu.Experts's ExpertMatMuls over every weight type (gathered
// rows and rows in place; two weight lists of one type, and of two; spans
// taller than a tile) and ExpertSum. A backend without the capability
// runs them as the plain ops models/arch falls back to (a Gather and a
// MatMul a span, the sums on the host), so the capability of one side is
// checked against the plain ops of the other.
func (c *table) experts() {
	const k, experts = 256, 5
	// 7 rows choosing 2 experts each, grouped by expert: expert 0 has 3
	// rows, 2 has 5, 3 has 1 and 4 has 5 (expert 1 none).
	rows := []int32{0, 4, 6, 0, 1, 2, 3, 5, 2, 1, 3, 4, 5, 6}
	spans := []gpu.ExpertSpan{{Expert: 0, Start: 0, Len: 3}, {Expert: 2, Start: 3, Len: 5}, {Expert: 3, Start: 8, Len: 1}, {Expert: 4, Start: 9, Len: 5}}
	for _, typ := range checkTypes {
		x := c.vals(7*k, 1)
		gate, up := c.expertWeights(typ, experts, 40, k), c.expertWeights(typ, experts, 24, k)
		c.add(fmt.Sprintf("ExpertMatMuls %v [14 of 7×%d]·[40,24×%d]ᵀ", typ, k, k), tolMatMul, func(be gpu.Backend) []float32 {
			return runExpertMatMuls(be, act(be, 7, k, x), rows, []expertList{gate, up}, spans)
		})
	}
	x := c.vals(7*k, 1)
	mixed := []expertList{c.expertWeights(gguf.TypeQ4_K, experts, 33, k), c.expertWeights(gguf.TypeQ8_0, experts, 16, k)}
	c.add(fmt.Sprintf("ExpertMatMuls q4_K and q8_0 [14 of 7×%d]", k), tolMatMul, func(be gpu.Backend) []float32 {
		return runExpertMatMuls(be, act(be, 7, k, x), rows, mixed, spans)
	})
	// Rows in place, one span taller than a MatMul tile (a prompt's).
	tall := c.vals(150*k, 1)
	tallSpans := []gpu.ExpertSpan{{Expert: 1, Start: 0, Len: 139}, {Expert: 3, Start: 139, Len: 11}}
	down := []expertList{c.expertWeights(gguf.TypeQ6_K, experts, 37, k)}
	c.add(fmt.Sprintf("ExpertMatMuls q6_K [150×%d in place]", k), tolMatMul, func(be gpu.Backend) []float32 {
		return runExpertMatMuls(be, act(be, 150, k, tall), nil, down, tallSpans)
	})

	// ExpertSum of 14 expert rows into 7 rows of 2 choices.
	y, w := c.vals(14*77, 2), c.vals(14, 1)
	at := []int32{0, 3, 4, 9, 5, 8, 6, 10, 1, 11, 7, 12, 2, 13}
	c.add("ExpertSum [7×2 of 14×77]", tolExact, func(be gpu.Backend) []float32 {
		yt := act(be, 14, 77, y)
		dst := act(be, 7, 77, make([]float32, 7*77))
		if e, ok := be.(gpu.Experts); ok {
			e.ExpertSum(dst, yt, at, w)
			return read(be, dst)
		}
		out := make([]float32, 7*77)
		gpu.SumExperts(out, read(be, yt), 77, at, w)
		return out
	})
}

// expertList is one matrix of every expert, as bytes of its type.
type expertList struct {
	typ     gguf.TensorType
	rows    int
	cols    int
	weights [][]byte
}

func (c *table) expertWeights(typ gguf.TensorType, experts, rows, cols int) expertList {
	l := expertList{typ: typ, rows: rows, cols: cols}
	for range experts {
		l.weights = append(l.weights, weightBytes(typ, rows, cols, c.vals(rows*cols, 0.5)))
	}
	return l
}

// runExpertMatMuls returns the outputs of ExpertMatMuls of x by lists,
// one list's after the other, through be's Experts or the plain ops.
func runExpertMatMuls(be gpu.Backend, x gpu.Tensor, rows []int32, lists []expertList, spans []gpu.ExpertSpan) []float32 {
	n := 0
	for _, s := range spans {
		n += s.Len
	}
	ws := make([][]gpu.Tensor, len(lists))
	dsts := make([]gpu.Tensor, len(lists))
	for j, l := range lists {
		for _, data := range l.weights {
			ws[j] = append(ws[j], weight(be, l.typ, l.rows, l.cols, data))
		}
		dsts[j] = act(be, n, l.rows, make([]float32, n*l.rows))
	}
	var out []float32
	if e, ok := be.(gpu.Experts); ok {
		e.ExpertMatMuls(dsts, x, rows, ws, spans)
		for _, d := range dsts {
			out = append(out, read(be, d)...)
		}
		return out
	}
	for j, l := range lists {
		for _, s := range spans {
			r := make([]int32, s.Len)
			for i := range r {
				r[i] = int32(s.Start + i)
				if rows != nil {
					r[i] = rows[s.Start+i]
				}
			}
			xs := act(be, s.Len, x.Cols(), make([]float32, s.Len*x.Cols()))
			be.Gather(xs, x, r)
			d := act(be, s.Len, l.rows, make([]float32, s.Len*l.rows))
			be.MatMul(d, xs, ws[j][s.Expert])
			out = append(out, read(be, d)...)
		}
	}
	return out
}
