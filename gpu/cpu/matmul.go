package cpu

import (
	"fmt"

	"folio/gpu"
)

// MatMul: dst[i,o] = x[i,:] · w[o,:]. x [n, k] F32, w [m, k] any weight
// type, dst [n, m].
func (b *Backend) MatMul(dst, x, w gpu.Tensor) {
	cd, cx, cw := b.tensor(dst), b.tensor(x), b.tensor(w)
	n, k, m := cx.rows, cx.cols, cw.rows
	checkMatMul("MatMul", cd, cx, cw)
	b.countWeight(cw)
	if kind, ok := b.k.matmulKind(cw.typ); ok {
		b.f32(x) // x must be F32 in place: the SIMD path quantizes cx.f32
		b.matmulSIMD(kind, cd, cx, cw)
		return
	}
	t := &b.matmul
	*t = matmulTask{dst: b.act(dst), x: b.f32(x), w: cw, n: n, k: k, m: m}
	// Units are (tile of x rows, tile of w rows) pairs, w tiles innermost.
	// A weight tile is decoded once per unit and used by every x row of
	// its tile; x is tiled only when it is tall, so that a unit's rows of
	// x stay in cache and a decode of w is still shared by many of them.
	t.nTile = n
	if n > 2*xTile {
		t.nTile = xTile
	}
	t.wTiles = (m + wTile - 1) / wTile
	units := (n + t.nTile - 1) / t.nTile * t.wTiles
	cost := wTile * k * (t.nTile + 4)
	if cw.f32 != nil { // F32 weights: one kernel call per run of units
		t.f32, cost = b.k.matmulF32, b.k.elemCost(cost)
	}
	b.pool.run(t, units, cost)
	*t = matmulTask{}
}

// MatMuls is MatMul of x by each of ws into dsts[i], as one op when the
// weights share a SIMD kernel: the threads split the rows of them all at
// once, which for a decode step's small projections (smollm's K and V are
// 62 KB each) saves a hand-off and a ragged end per weight.
func (b *Backend) MatMuls(dsts []gpu.Tensor, x gpu.Tensor, ws []gpu.Tensor) {
	if len(dsts) != len(ws) {
		panic(fmt.Sprintf("cpu: MatMuls: %d dsts for %d weights", len(dsts), len(ws)))
	}
	cx := b.tensor(x)
	kind, ok := b.k.matmulKind(b.tensor(ws[0]).typ)
	for _, w := range ws[1:] {
		k, ok2 := b.k.matmulKind(b.tensor(w).typ)
		ok = ok && ok2 && k == kind
	}
	if !ok {
		for i := range ws {
			b.MatMul(dsts[i], x, ws[i])
		}
		return
	}
	b.f32(x) // x must be F32 in place: the SIMD path quantizes cx.f32
	b.mmParts = b.mmParts[:0]
	for i, w := range ws {
		cd, cw := b.tensor(dsts[i]), b.tensor(w)
		checkMatMul("MatMuls", cd, cx, cw)
		b.countWeight(cw)
		b.mmParts = append(b.mmParts, mmPart{w: cw, dst: cd})
	}
	b.matmulsSIMD(kind, cx)
}

// checkMatMul panics, naming op, unless w is as wide as x and dst is
// [x.rows, w.rows].
func checkMatMul(op string, dst, x, w *Tensor) {
	if w.cols != x.cols {
		panic(fmt.Sprintf("cpu: %s: x %v and w %v differ in k", op, x, w))
	}
	checkShape(op, "dst", dst, x.rows, w.rows)
}

const (
	wTile = 4  // weight rows decoded and dotted together
	xTile = 64 // activation rows per MatMul unit when x is tall
)

type matmulTask struct {
	dst, x  []float32
	w       *Tensor
	n, k, m int
	nTile   int // x rows per unit
	wTiles  int // units per x tile: ⌈m / wTile⌉
	// f32 is the kernel of F32 weights (kernels.matmulF32), which takes a
	// run of units in one call; nil for weights decoded a tile at a time.
	f32 func(w []float32, wstride, rows int, x []float32, xstride, nx, k int, dst []float32, dstride int)
}

func (t *matmulTask) run(wk *worker, lo, hi int) {
	k, m := t.k, t.m
	if t.f32 != nil {
		for lo < hi { // a run of units within one x tile at a time
			end := min(hi, (lo/t.wTiles+1)*t.wTiles)
			i0, o0 := lo/t.wTiles*t.nTile, lo%t.wTiles*wTile
			i1, o1 := min(i0+t.nTile, t.n), min((end-1)%t.wTiles*wTile+wTile, m)
			t.f32(t.w.f32[o0*k:], k, o1-o0, t.x[i0*k:], k, i1-i0, k, t.dst[i0*m+o0:], m)
			lo = end
		}
		return
	}
	for u := lo; u < hi; u++ {
		i0 := u / t.wTiles * t.nTile
		i1 := min(i0+t.nTile, t.n)
		o0 := u % t.wTiles * wTile
		o1 := min(o0+wTile, m)

		// The tile's weight rows, decoded into the worker's scratch; a
		// partial tile repeats its last row. Every output then takes
		// dot4x2's or dot4's steps, which are the same, so that a row's
		// result does not depend on the rows computed with it (a prompt
		// in chunks or whole, a decode step alone or batched).
		var rows [wTile][]float32
		buf := grow(&wk.rows, wTile*k)
		for j := range o1 - o0 {
			rows[j] = buf[j*k : (j+1)*k]
			t.w.rowInto(o0+j, rows[j])
		}
		for j := o1 - o0; j < wTile; j++ {
			rows[j] = rows[o1-o0-1]
		}
		i := i0
		for ; i+2 <= i1; i += 2 {
			s := dot4x2(t.x[i*k:(i+1)*k], t.x[(i+1)*k:(i+2)*k], rows[0], rows[1], rows[2], rows[3])
			copy(t.dst[i*m+o0:i*m+o1], s[:4])
			copy(t.dst[(i+1)*m+o0:(i+1)*m+o1], s[4:])
		}
		if i < i1 {
			var s [4]float32
			s[0], s[1], s[2], s[3] = dot4(t.x[i*k:(i+1)*k], rows[0], rows[1], rows[2], rows[3])
			copy(t.dst[i*m+o0:i*m+o1], s[:])
		}
	}
}

// dot returns a · b (len(b) ≥ len(a)), in four float32 accumulators.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// matmulF32Go is the Go kernel of F32 weights: dst[i·ds + r] = w row r ·
// x row i for r < rows and i < nx (rows of k floats, ws and xs apart),
// four weight rows at a time through dot4, whose arithmetic for one
// output is the same wherever its rows are in the tile.
func matmulF32Go(w []float32, ws, rows int, x []float32, xs, nx, k int, dst []float32, ds int) {
	for i := range nx {
		xi := x[i*xs : i*xs+k]
		for r := 0; r < rows; r += 4 {
			var wr [4][]float32
			for j := range wr {
				wr[j] = w[min(r+j, rows-1)*ws:][:k]
			}
			var s [4]float32
			s[0], s[1], s[2], s[3] = dot4(xi, wr[0], wr[1], wr[2], wr[3])
			copy(dst[i*ds+r:i*ds+min(r+4, rows)], s[:])
		}
	}
}

// dot4x2 returns x0 · r0 … x0 · r3, then x1 · r0 … x1 · r3: a 2×4 tile
// of the output from six loads per step (len(r) ≥ len(x0) = len(x1)),
// one float32 accumulator an output, the elements in order (as dot4).
func dot4x2(x0, x1, r0, r1, r2, r3 []float32) (s [8]float32) {
	n := len(x0)
	x1, r0, r1, r2, r3 = x1[:n], r0[:n], r1[:n], r2[:n], r3[:n]
	var a0, a1, a2, a3, b0, b1, b2, b3 float32
	for i := range x0 {
		u, v := x0[i], x1[i]
		w0, w1, w2, w3 := r0[i], r1[i], r2[i], r3[i]
		a0 += u * w0
		a1 += u * w1
		a2 += u * w2
		a3 += u * w3
		b0 += v * w0
		b1 += v * w1
		b2 += v * w2
		b3 += v * w3
	}
	return [8]float32{a0, a1, a2, a3, b0, b1, b2, b3}
}

// dot4 returns x · r0, x · r1, x · r2, x · r3, reading x once: dot4x2's
// steps for one row of x, one float32 accumulator an output, the
// elements in order (the four chains run side by side).
func dot4(x, r0, r1, r2, r3 []float32) (float32, float32, float32, float32) {
	n := len(x)
	r0, r1, r2, r3 = r0[:n], r1[:n], r2[:n], r3[:n]
	var a, b, c, d float32
	for i, u := range x {
		a += u * r0[i]
		b += u * r1[i]
		c += u * r2[i]
		d += u * r3[i]
	}
	return a, b, c, d
}

// Embed: dst[i,:] = table[ids[i],:], dequantized. dst is [len(ids), table.Cols].
func (b *Backend) Embed(dst, table gpu.Tensor, ids []int32) {
	cd, ct := b.tensor(dst), b.tensor(table)
	checkShape("Embed", "dst", cd, len(ids), ct.cols)
	for i, id := range ids {
		if id < 0 || int(id) >= ct.rows {
			panic(fmt.Sprintf("cpu: Embed: id %d (row %d) outside %v", id, i, ct))
		}
	}
	t := &b.embed
	*t = embedTask{dst: b.act(dst), table: ct, ids: ids}
	b.pool.run(t, len(ids), 4*ct.cols)
	*t = embedTask{}
}

type embedTask struct {
	dst   []float32
	table *Tensor
	ids   []int32
}

func (t *embedTask) run(_ *worker, lo, hi int) {
	c := t.table.cols
	for i := lo; i < hi; i++ {
		t.table.rowInto(int(t.ids[i]), t.dst[i*c:(i+1)*c])
	}
}

// Gather: dst[i,:] = x[rows[i],:].
func (b *Backend) Gather(dst, x gpu.Tensor, rows []int32) {
	cd, cx := b.tensor(dst), b.tensor(x)
	checkShape("Gather", "dst", cd, len(rows), cx.cols)
	for i, r := range rows {
		if r < 0 || int(r) >= cx.rows {
			panic(fmt.Sprintf("cpu: Gather: row %d (index %d) outside %v", r, i, cx))
		}
	}
	t := &b.gather
	*t = gatherTask{dst: b.act(dst), x: cx, rows: rows}
	b.pool.run(t, len(rows), cx.cols)
	*t = gatherTask{}
}

type gatherTask struct {
	dst  []float32
	x    *Tensor
	rows []int32
}

func (t *gatherTask) run(_ *worker, lo, hi int) {
	c := t.x.cols
	for i := lo; i < hi; i++ {
		t.x.rowInto(int(t.rows[i]), t.dst[i*c:(i+1)*c])
	}
}
