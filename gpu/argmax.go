package gpu

import "math"

// ArgMaxer is an optional capability: greedy sampling on the device.
// ArgMax sets dst[i] (len(dst) = src.Rows) to ArgMax of row i of the F32
// tensor src, so that a step whose sequences all sample greedily needs
// their indices only, not their logits.
type ArgMaxer interface {
	ArgMax(dst []int32, src Tensor)
}

// ArgMax returns the index of the largest element of x: the first of
// equals, a NaN never larger than anything, and 0 when x is empty, x[0] is
// a NaN, or nothing is larger than x[0] (what a plain loop keeping the
// first strictly larger element returns). Backends' ArgMax must agree.
//
// It keeps four running maxima, so that the compare of one element does
// not wait for the last one's (1.5x a plain loop).
func ArgMax(x []float32) int {
	inf := float32(math.Inf(-1))
	m0, m1, m2, m3 := inf, inf, inf, inf // each lane's first largest; -1: none beat -Inf
	i0, i1, i2, i3 := -1, -1, -1, -1
	i := 0
	for ; i+4 <= len(x); i += 4 {
		v := x[i : i+4 : i+4]
		if v[0] > m0 {
			m0, i0 = v[0], i
		}
		if v[1] > m1 {
			m1, i1 = v[1], i+1
		}
		if v[2] > m2 {
			m2, i2 = v[2], i+2
		}
		if v[3] > m3 {
			m3, i3 = v[3], i+3
		}
	}
	if len(x) == 0 {
		return 0
	}
	best, bi := x[0], 0 // x[0] first: it wins when nothing beats it (a NaN there too)
	for _, c := range [...]struct {
		m float32
		i int
	}{{m0, i0}, {m1, i1}, {m2, i2}, {m3, i3}} {
		if c.i >= 0 && (c.m > best || c.m == best && c.i < bi) {
			best, bi = c.m, c.i
		}
	}
	for ; i < len(x); i++ { // the tail, after every lane's index
		if x[i] > best {
			best, bi = x[i], i
		}
	}
	return bi
}
