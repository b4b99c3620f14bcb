package cuda

import (
	"fmt"

	"folio/gpu"
	"folio/models/gguf"
)

var _ gpu.Experts = (*Backend)(nil)

// ExpertMatMuls: each span's rows of x (gathered once into scratch when
// rows is not nil) times its expert's weights, one MatMul a (span,
// weight) over row views of the scratch and of dsts: the experts' outputs
// stay on the device, where expert by expert each came down to the host.
func (b *Backend) ExpertMatMuls(dsts []gpu.Tensor, x gpu.Tensor, rows []int32, ws [][]gpu.Tensor, spans []gpu.ExpertSpan) {
	if len(dsts) != len(ws) {
		panic(fmt.Sprintf("cuda: ExpertMatMuls: %d dsts for %d weight lists", len(dsts), len(ws)))
	}
	cx := b.f32(x)
	n := 0
	for i, s := range spans {
		if s.Start != n || s.Len <= 0 {
			panic(fmt.Sprintf("cuda: ExpertMatMuls: span %d is rows %d…+%d, want a start at %d and a length > 0", i, s.Start, s.Len, n))
		}
		n += s.Len
	}
	in := cx
	switch {
	case rows != nil && len(rows) != n:
		panic(fmt.Sprintf("cuda: ExpertMatMuls: %d rows for spans of %d", len(rows), n))
	case rows != nil:
		in = &Tensor{typ: gguf.TypeF32, rows: n, cols: cx.cols, rowBytes: 4 * int64(cx.cols)}
		b.enter()
		in.ptr = b.grow(&b.expertRows, in.bytes(), "experts' rows")
		b.leave()
		b.Gather(in, cx, rows)
	case n != cx.rows:
		panic(fmt.Sprintf("cuda: ExpertMatMuls: spans of %d rows over x %v", n, cx))
	}
	for j, l := range ws {
		cd := b.act(dsts[j])
		if cd.rows != n {
			panic(fmt.Sprintf("cuda: ExpertMatMuls: dst %v for spans of %d rows", cd, n))
		}
		for i, s := range spans {
			if s.Expert < 0 || s.Expert >= len(l) {
				panic(fmt.Sprintf("cuda: ExpertMatMuls: span %d's expert %d outside %d weights", i, s.Expert, len(l)))
			}
			b.MatMul(rowsOf(cd, s.Start, s.Len), rowsOf(in, s.Start, s.Len), l[s.Expert])
		}
	}
}

// rowsOf is a view of rows start … start+n-1 of the activation t.
func rowsOf(t *Tensor, start, n int) *Tensor {
	return &Tensor{typ: t.typ, rows: n, cols: t.cols, rowBytes: t.rowBytes, ptr: t.ptr + uint64(start)*uint64(t.rowBytes)}
}

// ExpertSum: the experts' outputs come down once, the sums are made on
// the host (gpu.SumExperts) and go back up: one round trip a layer.
func (b *Backend) ExpertSum(dst, y gpu.Tensor, at []int32, weights []float32) {
	cd, cy := b.act(dst), b.f32(y)
	n, d := cd.rows, cd.cols
	if len(at) != len(weights) || len(at) == 0 || len(at)%n != 0 || cy.cols != d {
		panic(fmt.Sprintf("cuda: ExpertSum: %d indices and %d weights, y %v into dst %v", len(at), len(weights), cy, cd))
	}
	for i, a := range at {
		if a < 0 || int(a) >= cy.rows {
			panic(fmt.Sprintf("cuda: ExpertSum: row %d (index %d) outside %v", a, i, cy))
		}
	}
	ny := cy.rows * d
	if cap(b.expertY) < ny+n*d {
		b.expertY = make([]float32, ny+n*d)
	}
	ys, sum := b.expertY[:ny], b.expertY[ny:ny+n*d]
	b.Download(ys, cy)
	gpu.SumExperts(sum, ys, d, at, weights)
	b.Upload(cd, sum)
}
