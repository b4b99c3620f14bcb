package cpu

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

// matmulTol bounds MatMul's error against a float64 dot of the same
// dequantized weights and the activations as the kernel sees them (the
// SIMD kernels quantize them first): only float32 accumulation differs. The
// error of each dot is taken relative to Σ|x·w|, the scale of its rounding,
// since a dot may cancel to near zero.
const matmulTol = 1e-5

// TestMatMul runs every weight type at every SIMD level this machine has
// (the scalar Go kernels included) over awkward shapes: one row, odd rows,
// more rows than a tile, tails of every block step.
func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range weightTypes {
			bs := typ.BlockSize()
			kb := max(bs, 32)   // one block of the type, at least 32 elements
			shapes := [][3]int{ // n, k, m
				{1, kb, 1}, {1, 2 * kb, 7}, {3, kb, 13}, {5, 3 * kb, 33}, {17, 5 * kb, 17},
				{64, kb, 3}, {130, kb, 6}, {131, kb, 9}, {2, 16 * kb, 5},
			}
			if bs == 1 {
				shapes = append(shapes, [3]int{1, 33, 5}, [3]int{4, 7, 3}, [3]int{9, 1, 2}, [3]int{3, 17, 35})
			}
			for _, s := range shapes {
				n, k, m := s[0], s[1], s[2]
				t.Run(fmt.Sprintf("%v/%v/%dx%dx%d", l, typ, n, k, m), func(t *testing.T) {
					data, wf := quantWeight(t, r, typ, m, k)
					xf := randFloats(r, n*k, 1)
					w := newWeight(t, b, typ, m, k, data)
					x := newAct(t, b, n, k, xf)
					dst := newAct(t, b, n, m, nil)
					b.MatMul(dst, x, w)
					xs := xf
					if kind, ok := kernelFor(typ, l); ok {
						xs = nil
						for i := range n {
							xs = append(xs, dequantizeXRef(kind, quantizeXRef(kind, xf[i*k:(i+1)*k]), k)...)
						}
					}
					got := download(b, dst)
					checkDots(t, got, xs, wf, n, k, m, matmulTol)
					// A row's results are the same bits computed alone
					// (a prompt in chunks or whole; the first rows and
					// the last).
					for _, i := range []int{0, 1, 2, n - 1} {
						if i >= n {
							continue
						}
						one := newAct(t, b, 1, m, nil)
						b.MatMul(one, newAct(t, b, 1, k, xf[i*k:(i+1)*k]), w)
						for o, v := range download(b, one) {
							if math.Float32bits(v) != math.Float32bits(got[i*m+o]) {
								t.Fatalf("row %d alone: [%d] = %v, among %d rows %v", i, o, v, n, got[i*m+o])
							}
						}
					}
				})
			}
		}
	}
}

// checkDots checks got[i·m + o] against x row i · w row o in float64,
// relative to Σ|x·w|.
func checkDots(t *testing.T, got, x, w []float32, n, k, m int, tol float64) {
	t.Helper()
	for i := range n {
		for o := range m {
			var want, scale float64
			for j := range k {
				p := float64(x[i*k+j]) * float64(w[o*k+j])
				want += p
				scale += math.Abs(p)
			}
			if d := math.Abs(float64(got[i*m+o]) - want); !(d <= tol*scale) {
				t.Fatalf("dst[%d,%d] = %v, want %v (error %.3g of Σ|x·w| %.4g)", i, o, got[i*m+o], want, d/scale, scale)
			}
		}
	}
}

// quantXTol bounds a SIMD MatMul's normalized error against the scalar Go
// kernels, which do not quantize the activations: 8-bit blocks (Q8_0, Q4_0,
// Q8_K) lose up to half a step of 1/127 of a block's largest magnitude per
// element, F16 half a step of 2^-11, BF16 of 2^-8.
func quantXTol(kind kernelKind) float64 {
	switch kind {
	case kindF16:
		return 2e-3
	case kindBF16:
		return 8e-3
	}
	return 3e-2
}

// TestSIMDMatchesScalar: each SIMD kernel equals the scalar Go kernel,
// the oracle, within the error of quantizing the activations.
func TestSIMDMatchesScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	ref := newTestBackend(t)
	ref.k = kernelsAt(levelScalar)
	for _, l := range supportedLevels()[1:] {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for kind, typ := range kernelTypes {
			if kind.layout() != kind {
				continue // the backend picks the level's kind of typ
			}
			for _, k := range awkwardKs(kind) {
				for _, n := range []int{1, 3, 17, 64} {
					const m = 37
					data, _ := quantWeight(t, r, typ, m, k)
					xf := randFloats(r, n*k, 1)
					w := newWeight(t, b, typ, m, k, data)
					x := newAct(t, b, n, k, xf)
					got, want := newAct(t, b, n, m, nil), newAct(t, ref, n, m, nil)
					b.MatMul(got, x, w)
					ref.MatMul(want, x, w)
					w64 := make([]float64, n*m)
					for i, v := range download(ref, want) {
						w64[i] = float64(v)
					}
					checkErr(t, fmt.Sprintf("%v %v n=%d k=%d", l, typ, n, k), download(b, got), w64, quantXTol(kind))
				}
			}
		}
	}
}

func TestEmbed(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, typ := range weightTypes {
		cols := max(typ.BlockSize(), 32) * 3
		rows := 11
		data, wf := quantWeight(t, r, typ, rows, cols)
		w := newWeight(t, b, typ, rows, cols, data)
		for _, ids := range [][]int32{{0}, {10, 3, 3, 0, 7}} {
			dst := newAct(t, b, len(ids), cols, nil)
			b.Embed(dst, w, ids)
			got := download(b, dst)
			for i, id := range ids {
				for j := range cols {
					if got[i*cols+j] != wf[int(id)*cols+j] {
						t.Fatalf("%v: Embed row %d (id %d) element %d = %v, want %v", typ, i, id, j, got[i*cols+j], wf[int(id)*cols+j])
					}
				}
			}
		}
	}
}

func TestGather(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(5, 6))
	xf := randFloats(r, 6*5, 1)
	x := newAct(t, b, 6, 5, xf)
	rows := []int32{5, 0, 5, 2}
	dst := newAct(t, b, len(rows), 5, nil)
	b.Gather(dst, x, rows)
	got := download(b, dst)
	for i, row := range rows {
		for j := range 5 {
			if got[i*5+j] != xf[int(row)*5+j] {
				t.Fatalf("Gather row %d element %d = %v, want %v", i, j, got[i*5+j], xf[int(row)*5+j])
			}
		}
	}
}

// Weight keeps the caller's bytes (the mmap'd file) as the tensor's,
// without copying them; a weight whose kernels read a copy of the
// backend's own (repacked, or F32) says so (Repacked), and then neither
// MatMul nor Embed reads those bytes again: scribbled over, they change
// no result. LookupWeight's F32 rows are the bytes themselves.
func TestWeightDoesNotCopy(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range append(slices.Clone(weightTypes), packedTypes()...) {
		const rows = 3
		cols := max(64, typ.BlockSize())
		data, _ := quantWeight(t, r, typ, rows, cols)
		w := newWeight(t, b, typ, rows, cols, data).(*Tensor)
		if got := w.Bytes(); unsafe.SliceData(got) != unsafe.SliceData(data) || len(got) != len(data) {
			t.Errorf("%v: Weight copied its data", typ)
		}
		_, packs := packedKind(typ, b.k.level)
		if w.Repacked() != (packs || typ == gguf.TypeF32) {
			t.Errorf("%v: Repacked() = %v at %v", typ, w.Repacked(), b.k.level)
		}
		if !w.Repacked() {
			continue
		}
		x := newAct(t, b, 2, cols, randFloats(r, 2*cols, 1))
		mm, emb := newAct(t, b, 2, rows, nil), newAct(t, b, 2, cols, nil)
		results := func() []float32 {
			b.MatMul(mm, x, w)
			b.Embed(emb, w, []int32{2, 0})
			return append(download(b, mm), download(b, emb)...)
		}
		before := results()
		for i := range data {
			data[i] = byte(i*7 + 1)
		}
		if after := results(); !slices.Equal(before, after) {
			t.Errorf("%v: a result changed with the bytes Weight was given", typ)
		}
	}
	// LookupWeight reads an F32 weight's bytes in place.
	data := make([]byte, 8)
	w, err := b.LookupWeight("w", gguf.TypeF32, 1, 2, data)
	if err != nil {
		t.Fatal(err)
	}
	dst := newAct(t, b, 1, 2, nil)
	if err := gguf.Quantize(gguf.TypeF32, []float32{2, 3}, data); err != nil {
		t.Fatal(err)
	}
	b.Embed(dst, w, []int32{0})
	if got := download(b, dst); got[0] != 2 || got[1] != 3 {
		t.Errorf("Embed after writing a lookup weight's bytes = %v, want [2 3]", got)
	}
}

// An F32 weight whose bytes are not 4-aligned is decoded row by row.
func TestUnalignedF32Weight(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(35, 36))
	wf := randFloats(r, 3*5, 1)
	data := make([]byte, 4*len(wf)+1)[1:]
	if err := gguf.Quantize(gguf.TypeF32, wf, data); err != nil {
		t.Fatal(err)
	}
	w := newWeight(t, b, gguf.TypeF32, 3, 5, data)
	xf := randFloats(r, 2*5, 1)
	dst := newAct(t, b, 2, 3, nil)
	b.MatMul(dst, newAct(t, b, 2, 5, xf), w)
	want := make([]float64, 6)
	for i := range 2 {
		for o := range 3 {
			for j := range 5 {
				want[i*3+o] += float64(xf[i*5+j]) * float64(wf[o*5+j])
			}
		}
	}
	checkErr(t, "MatMul, unaligned F32", download(b, dst), want, matmulTol)
	e := newAct(t, b, 1, 5, nil)
	b.Embed(e, w, []int32{2})
	if got := download(b, e); got[4] != wf[14] {
		t.Errorf("Embed, unaligned F32: %v, want row %v", got, wf[10:])
	}
}

func TestWeightErrors(t *testing.T) {
	b := newTestBackend(t)
	if _, err := b.Weight("iq", gguf.TypeIQ2_XXS, 1, 256, make([]byte, 66)); !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("IQ2_XXS weight: err = %v, want ErrUnsupported", err)
	}
	if _, err := b.Weight("short", gguf.TypeQ8_0, 2, 32, make([]byte, 34)); err == nil {
		t.Error("Q8_0 weight of 2 rows in 34 bytes: no error")
	}
	if _, err := b.Weight("partial", gguf.TypeQ8_0, 1, 48, make([]byte, 51)); err == nil {
		t.Error("Q8_0 weight of 48 columns: no error")
	}
}

func TestSlice(t *testing.T) {
	b := newTestBackend(t)
	x := newAct(t, b, 4, 3, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	v := b.Slice(x, 2)
	if v.Rows() != 2 || v.Cols() != 3 {
		t.Fatalf("Slice: [%d, %d], want [2, 3]", v.Rows(), v.Cols())
	}
	b.Upload(v, []float32{-1, -2, -3, -4, -5, -6})
	got := download(b, x)
	if got[5] != -6 || got[6] != 6 {
		t.Errorf("Slice does not share memory: %v", got)
	}
	if b.Slice(x, 2) != v {
		t.Error("a second Slice of the same size made a new view")
	}
	if n := testing.AllocsPerRun(10, func() { b.Slice(x, 2) }); n != 0 {
		t.Errorf("Slice allocates %v times", n)
	}
}

// In steady state an op neither allocates nor starts goroutines.
func TestNoAllocs(t *testing.T) {
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(9, 10))
	const n, k, m = 8, 512, 256
	data, _ := quantWeight(t, r, gguf.TypeQ4_K, m, k)
	w := newWeight(t, b, gguf.TypeQ4_K, m, k, data)
	x := newAct(t, b, n, k, randFloats(r, n*k, 1))
	dst := newAct(t, b, n, m, nil)
	dst2 := newAct(t, b, n, m, nil)
	dsts, ws := []gpu.Tensor{dst, dst2}, []gpu.Tensor{w, w}
	idx := make([]int32, n)
	norm := f32Weight(t, b, 1, k, randFloats(r, k, 1))
	ids := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	copies := []gpu.BlockCopy{{Src: 1, Dst: 2}, {Src: 0, Dst: 1}}
	rope := gpu.Rope{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1}
	cache, err := b.NewKVCache(gpu.KVSpec{Layers: 2, Blocks: 3, BlockSize: 4, KVHeads: 4, HeadDim: k / 4, Type: gguf.TypeF16})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]func(){
		"MatMul":     func() { b.MatMul(dst, x, w) },
		"MatMuls":    func() { b.MatMuls(dsts, x, ws) },
		"ArgMax":     func() { b.ArgMax(idx, dst) },
		"Embed":      func() { b.Embed(x, w, ids) },
		"RMSNorm":    func() { b.RMSNorm(x, x, norm, 1e-5) },
		"Add":        func() { b.Add(x, x, norm) },
		"SiLUMul":    func() { b.SiLUMul(x, x, x) },
		"Softmax":    func() { b.Softmax(dst) },
		"Gather":     func() { b.Gather(b.Slice(x, 2), x, ids[:2]) },
		"Rope":       func() { b.Rope(x, ids, &rope) },
		"WriteKV":    func() { b.WriteKV(cache, 1, x, x, ids) },
		"CopyBlocks": func() { b.CopyBlocks(cache, copies) },
	}
	for name, op := range ops {
		op() // warm-up: the scratch grows
		if a := steadyAllocs(op); a != 0 {
			t.Errorf("%s allocates %v times per call", name, a)
		}
	}
}
