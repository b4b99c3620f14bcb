package cpu

import (
	"fmt"

	"folio/gpu"
)

var _ gpu.Experts = (*Backend)(nil)

// ExpertMatMuls: for each span s, each of its rows i and each j,
// dsts[j][i,:] = x[rows[i],:] · ws[j][s.Expert]ᵀ (rows nil: x[i,:]). With
// SIMD kernels it is one op: x is quantized once, its quantized rows are
// copied into the spans' order, and the threads split the (span, weight,
// group of weight rows) units of every span and every j at once, each a
// kernel call over the span's rows. A batch of 16 decode rows that choose
// 8 of 64 experts reads ~56 experts a layer over 2-3 rows each; as
// MatMuls that was a Gather, two dispatches and a quantization per expert
// (bench/results/2026-12-02-moe-serve.md).
func (b *Backend) ExpertMatMuls(dsts []gpu.Tensor, x gpu.Tensor, rows []int32, ws [][]gpu.Tensor, spans []gpu.ExpertSpan) {
	if len(dsts) != len(ws) || len(ws) == 0 {
		panic(fmt.Sprintf("cpu: ExpertMatMuls: %d dsts for %d weight lists", len(dsts), len(ws)))
	}
	cx := b.tensor(x)
	b.f32(x)
	n := checkExpertRows("ExpertMatMuls", cx, rows, spans)
	// One kernel kind for every weight: one op. Else each weight list on
	// its own (perhaps through SIMD), or the Go kernels.
	var kind kernelKind
	simd, mixed := true, false
	for j := range ws {
		cd := b.tensor(dsts[j])
		for i, s := range spans {
			if s.Expert < 0 || s.Expert >= len(ws[j]) {
				panic(fmt.Sprintf("cpu: ExpertMatMuls: span %d's expert %d outside %d weights", i, s.Expert, len(ws[j])))
			}
			w := b.tensor(ws[j][s.Expert])
			if w.cols != cx.cols {
				panic(fmt.Sprintf("cpu: ExpertMatMuls: x %v and w %v differ in k", cx, w))
			}
			checkShape("ExpertMatMuls", "dst", cd, n, w.rows)
			kw, ok := b.k.matmulKind(w.typ)
			simd = simd && ok
			mixed = mixed || (j > 0 || i > 0) && kw != kind
			kind = kw
		}
	}
	switch {
	case (!simd || mixed) && len(ws) > 1:
		for j := range ws {
			b.ExpertMatMuls(dsts[j:j+1], x, rows, ws[j:j+1], spans)
		}
		return
	case !simd || mixed:
		b.expertMatMulsGo(dsts[0], cx, rows, ws[0], spans)
		return
	}
	xq, stride := b.quantized(kind, cx)
	b.xqOf = xqKey{}
	if rows != nil {
		xg := alignedBuf(&b.xg, n*stride)
		for i, r := range rows {
			copy(xg[i*stride:(i+1)*stride], xq[int(r)*stride:(int(r)+1)*stride])
		}
		xq = xg
	}

	t := &b.experts
	*t = expertTask{kind: kind, kern: b.k, k: cx.cols, xstride: stride, parts: b.expertParts[:0]}
	tall := false
	for j := range ws {
		dst := b.act(dsts[j])
		for _, s := range spans {
			w := b.tensor(ws[j][s.Expert])
			b.countWeight(w)
			p := expertPart{w: w, xq: xq[s.Start*stride:], dst: dst[s.Start*w.rows:], rows: s.Len, nTile: s.Len,
				groups: (w.rows + simdWRows - 1) / simdWRows, u0: t.units}
			if s.Len > 2*xTile {
				p.nTile = xTile
			}
			tall = tall || s.Len > fineRows
			t.units += (s.Len + p.nTile - 1) / p.nTile * p.groups
			t.parts = append(t.parts, p)
		}
	}
	// A unit's cost as matmulsSIMD prices it, at the spans' mean height.
	rowBytes := t.parts[0].w.rowBytes
	cost := max(1, minChunkCost*simdWRows*rowBytes*max(1, n/len(spans))/minChunkBytes)
	if tall {
		b.pool.runFine(t, t.units, cost)
	} else {
		b.pool.run(t, t.units, cost)
	}
	b.expertParts = t.parts[:0]
	clear(t.parts)
	*t = expertTask{}
}

// checkExpertRows panics, naming op, unless spans tile rows 0 … N-1 in
// order and rows (when not nil) names N rows of x; it returns N.
func checkExpertRows(op string, x *Tensor, rows []int32, spans []gpu.ExpertSpan) int {
	n := 0
	for i, s := range spans {
		if s.Start != n || s.Len <= 0 {
			panic(fmt.Sprintf("cpu: %s: span %d is rows %d…+%d, want a start at %d and a length > 0", op, i, s.Start, s.Len, n))
		}
		n += s.Len
	}
	if rows == nil {
		if n != x.rows {
			panic(fmt.Sprintf("cpu: %s: spans of %d rows over x %v", op, n, x))
		}
		return n
	}
	if len(rows) != n {
		panic(fmt.Sprintf("cpu: %s: %d rows for spans of %d", op, len(rows), n))
	}
	for i, r := range rows {
		if r < 0 || int(r) >= x.rows {
			panic(fmt.Sprintf("cpu: %s: row %d (index %d) outside %v", op, r, i, x))
		}
	}
	return n
}

// expertMatMulsGo is ExpertMatMuls as one MatMul a span, for weights the
// SIMD kernels lack (and the scalar level): the span's rows gathered into
// scratch, its rows of dst a view.
func (b *Backend) expertMatMulsGo(dst gpu.Tensor, x *Tensor, rows []int32, ws []gpu.Tensor, spans []gpu.ExpertSpan) {
	cd, k := b.tensor(dst), x.cols
	for _, s := range spans {
		m := cd.cols
		xs := &Tensor{typ: x.typ, rows: s.Len, cols: k}
		if rows == nil {
			xs.f32 = x.f32[s.Start*k : (s.Start+s.Len)*k]
		} else {
			xs.f32 = grow(&b.expertX, s.Len*k)
			for i, r := range rows[s.Start : s.Start+s.Len] {
				copy(xs.f32[i*k:(i+1)*k], x.f32[int(r)*k:(int(r)+1)*k])
			}
		}
		ds := &Tensor{typ: cd.typ, rows: s.Len, cols: m, f32: cd.f32[s.Start*m : (s.Start+s.Len)*m]}
		b.MatMul(ds, xs, ws[s.Expert])
	}
}

// expertTask's units are (part, tile of the part's rows, group of
// simdWRows weight rows), groups innermost, the parts in turn; a run of
// units within one tile is one kernel call.
type expertTask struct {
	kind    kernelKind
	kern    *kernels
	k       int
	xstride int
	parts   []expertPart
	units   int
}

// expertPart is one (span, weight) pair: dst = xq · wᵀ over the span's
// rows, its units u0 … u0 + ⌈rows/nTile⌉·groups - 1.
type expertPart struct {
	w      *Tensor
	xq     []byte    // from the span's first quantized row
	dst    []float32 // from the span's first row of dst (w.rows wide)
	rows   int
	nTile  int // rows per tile
	groups int // ⌈w.rows / simdWRows⌉
	u0     int
}

func (t *expertTask) run(_ *worker, lo, hi int) {
	j := 0
	for a, z := 0, len(t.parts); a < z; { // the last part with u0 ≤ lo
		mid := (a + z) / 2
		if t.parts[mid].u0 <= lo {
			j, a = mid, mid+1
		} else {
			z = mid
		}
	}
	for lo < hi {
		for j+1 < len(t.parts) && t.parts[j+1].u0 <= lo {
			j++
		}
		p := &t.parts[j]
		tile, g := (lo-p.u0)/p.groups, (lo-p.u0)%p.groups
		end := min(hi, p.u0+(tile+1)*p.groups)
		m := p.w.rows
		o0, o1 := g*simdWRows, min((end-p.u0-tile*p.groups)*simdWRows, m)
		i0 := tile * p.nTile
		i1 := min(i0+p.nTile, p.rows)
		if pw := p.w.packed; pw != nil {
			t.kern.matmulPacked(t.kind, pw.data[o0/packRows*pw.group:], pw.group, pw.blocks, o1-o0,
				p.xq[i0*t.xstride:], t.xstride, i1-i0, t.k, p.dst[i0*m+o0:], m)
		} else {
			rb := p.w.rowBytes
			t.kern.matmul(t.kind, p.w.data[o0*rb:o1*rb], rb, o1-o0, p.xq[i0*t.xstride:], t.xstride, i1-i0, t.k,
				p.dst[i0*m+o0:], m)
		}
		lo = end
	}
}

// ExpertSum: dst[r,:] = Σ_j weights[r·k+j] · y[at[r·k+j],:], j in order,
// each product rounded before it is added.
func (b *Backend) ExpertSum(dst, y gpu.Tensor, at []int32, weights []float32) {
	cd, cy := b.tensor(dst), b.tensor(y)
	n, d := cd.rows, cd.cols
	if len(at) != len(weights) || len(at) == 0 || len(at)%n != 0 {
		panic(fmt.Sprintf("cpu: ExpertSum: %d indices and %d weights for %d rows", len(at), len(weights), n))
	}
	if cy.cols != d || cy == cd {
		panic(fmt.Sprintf("cpu: ExpertSum: y %v into dst %v", cy, cd))
	}
	for i, a := range at {
		if a < 0 || int(a) >= cy.rows {
			panic(fmt.Sprintf("cpu: ExpertSum: row %d (index %d) outside %v", a, i, cy))
		}
	}
	k := len(at) / n
	t := &b.expertSum
	*t = expertSumTask{dst: b.act(dst), y: b.f32(y), at: at, weights: weights, k: k, d: d}
	b.pool.run(t, n, b.k.elemCost(k*d))
	*t = expertSumTask{}
}

type expertSumTask struct {
	dst, y  []float32
	at      []int32
	weights []float32
	k, d    int
}

func (t *expertSumTask) run(_ *worker, lo, hi int) {
	gpu.SumExperts(t.dst[lo*t.d:hi*t.d], t.y, t.d, t.at[lo*t.k:hi*t.k], t.weights[lo*t.k:hi*t.k])
}
