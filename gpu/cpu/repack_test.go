package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"folio/models/gguf"
)

// unpackRowRef decodes row r of a packed weight back to float32s, reading
// the layout as repack.go documents it: the reference the layout is tested
// against.
func unpackRowRef(p *packedWeight, r, k int) []float32 {
	le := binary.LittleEndian
	h := func(b []byte) float32 { return gguf.F16ToF32(le.Uint16(b)) }
	g, lane := p.data[r/packRows*p.group:], r%packRows
	out := make([]float32, k)
	for e := range out {
		switch p.kind {
		case kindQ4_0, kindIQ4_NL, kindIQ4_XS, kindQ4_1, kindMXFP4:
			b, j := e/32, e%32
			d := h(g[256*p.blocks+32*b+2*lane:])
			if p.kind == kindIQ4_XS || p.kind == kindMXFP4 {
				d = math.Float32frombits(le.Uint32(g[256*p.blocks+64*b+4*lane:]))
			}
			byteAt := 256*b + 64*(j%16/4) + 4*lane + j%4
			q := g[byteAt] & 0x0f
			if j >= 16 {
				q = g[byteAt] >> 4
			}
			switch p.kind {
			case kindQ4_0:
				out[e] = d * float32(int(q)-8)
			case kindQ4_1:
				out[e] = d*float32(q) + h(g[256*p.blocks+32*(p.blocks+b)+2*lane:])
			case kindMXFP4:
				out[e] = d * float32(gguf.MXFP4Values[q])
			default:
				out[e] = d * float32(gguf.IQ4NLValues[q])
			}
		case kindQ8_0:
			b, j := e/32, e%32
			d := h(g[512*p.blocks+32*b+2*lane:])
			out[e] = d * float32(int8(g[512*b+64*(j/4)+4*lane+j%4]))
		case kindQ4_K, kindQ5_K:
			s, j := e/256, e%256
			sb, t := j/32, j%32
			pb := q4KPackBytes
			if p.kind == kindQ5_K {
				pb = q5KPackBytes
			}
			blk := g[s*pb:]
			d, dmin := h(blk[2*lane:]), h(blk[32+2*lane:])
			sc := blk[64+16*sb+lane]
			m := blk[192+32*(sb/2)+2*lane+sb%2]
			qb := blk[320+512*(sb/2)+64*(t/4)+4*lane+t%4]
			q := qb & 0x0f
			if sb%2 == 1 {
				q = qb >> 4
			}
			if p.kind == kindQ5_K {
				q |= blk[q4KPackBytes+64*(t/4)+4*lane+t%4] >> sb & 1 << 4
			}
			out[e] = d*float32(sc)*float32(q) - dmin*float32(m)
		case kindQ5_0, kindQ5_1:
			b, j := e/32, e%32
			d := h(g[320*p.blocks+32*b+2*lane:])
			at := 320*b + 64*(j%16/4) + 4*lane + j%4
			q := g[at] & 0x0f
			hbit := g[320*b+256+4*lane+j%4] >> (2 * (j % 16 / 4)) & 1
			if j >= 16 {
				q = g[at] >> 4
				hbit = g[320*b+256+4*lane+j%4] >> (2*(j%16/4) + 1) & 1
			}
			if p.kind == kindQ5_1 {
				out[e] = d*float32(q|hbit<<4) + h(g[320*p.blocks+32*(p.blocks+b)+2*lane:])
			} else {
				out[e] = d * float32(int(q|hbit<<4)-16)
			}
		case kindQ6_K:
			s, j := e/256, e%256
			sb, t := j/16, j%16
			blk := g[s*q6KPackBytes:]
			d := math.Float32frombits(le.Uint32(blk[3328+4*lane:]))
			sc := int8(blk[3072+32*(sb/2)+2*lane+sb%2])
			at := 64*(t/4) + 4*lane + t%4
			q := blk[256*(sb/2)+at] >> (4 * (sb % 2)) & 0x0f
			q |= blk[2048+256*(sb/4)+at] >> (2 * (sb % 4)) & 3 << 4
			out[e] = d * float32(sc) * float32(int(q)-32)
		case kindQ3_K:
			s, j := e/256, e%256
			sb, t := j/16, j%16
			blk := g[s*q3KPackBytes:]
			d := math.Float32frombits(le.Uint32(blk[1792+4*lane:]))
			sc := int8(blk[1536+32*(sb/2)+2*lane+sb%2])
			at := 64*(t/4) + 4*lane + t%4
			q := blk[256*(sb/4)+at] >> (2 * (sb % 4)) & 3
			q |= blk[1024+256*(sb/8)+at] >> (sb % 8) & 1 << 2
			out[e] = d * float32(sc) * float32(int(q)-4)
		case kindQ2_K:
			s, j := e/256, e%256
			sb, t := j/16, j%16
			blk := g[s*q2KPackBytes:]
			d := math.Float32frombits(le.Uint32(blk[1280+4*lane:]))
			dmin := math.Float32frombits(le.Uint32(blk[1344+4*lane:]))
			sm := blk[1024+32*(sb/2)+2*lane+sb%2]
			q := blk[256*(sb/4)+64*(t/4)+4*lane+t%4] >> (2 * (sb % 4)) & 3
			out[e] = d*float32(sm&15)*float32(q) - dmin*float32(sm>>4)
		case kindF16:
			out[e] = h(g[32*e+2*lane:])
		case kindBF16:
			out[e] = gguf.BF16ToF32(le.Uint16(g[32*e+2*lane:]))
		}
	}
	return out
}

// packedTypes are the weight types this machine repacks.
func packedTypes() []gguf.TensorType {
	var ts []gguf.TensorType
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeQ3_K, gguf.TypeQ2_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeMXFP4, gguf.TypeQ8_0, gguf.TypeF16, gguf.TypeBF16} {
		if _, ok := packedKind(typ, bestLevel); ok {
			ts = append(ts, typ)
		}
	}
	return ts
}

// TestRepack: a packed weight holds the same values as the GGUF bytes
// (within float32 rounding of the two ways of decoding), row by row, and
// its padding rows are zero.
func TestRepack(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(50, 51))
	for _, typ := range packedTypes() {
		for _, rk := range [][2]int{{1, 256}, {16, 512}, {17, 768}, {45, 256}, {3, 17}} {
			rows, k := rk[0], rk[1]
			if k%typ.BlockSize() != 0 {
				continue
			}
			data, wf := quantWeight(t, r, typ, rows, k)
			p := newWeight(t, b, typ, rows, k, data).(*Tensor).packed
			if p == nil {
				t.Fatalf("%v: no packed copy", typ)
			}
			for row := range (rows + packRows - 1) / packRows * packRows {
				got := unpackRowRef(p, row, k)
				for j, v := range got {
					want := float32(0)
					if row < rows {
						want = wf[row*k+j]
					}
					if d := math.Abs(float64(v - want)); d > 1e-6*math.Max(1, math.Abs(float64(want))) {
						t.Fatalf("%v %dx%d: packed row %d element %d = %v, want %v", typ, rows, k, row, j, v, want)
					}
				}
			}
		}
	}
}

// TestPackedKernels checks the packed kernels at every SIMD level against
// the float64 dot of the values their inputs stand for, over awkward
// shapes (rows not a whole group, one activation row, odd tiles), and that
// a row's result is the same bits whatever rows are computed with it and
// at whichever level.
func TestPackedKernels(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	r := rand.New(rand.NewPCG(52, 53))
	b := newTestBackend(t)
	for _, typ := range packedTypes() {
		kind, _ := packedKind(typ, bestLevel)
		for _, k := range awkwardKs(kind) {
			for _, nm := range [][2]int{{1, 1}, {1, 17}, {2, 70}, {3, 5}, {5, 16}, {20, 24}, {9, 33}, {16, 37}, {17, 48}, {25, 50}, {32, 16}, {33, 31}, {47, 64}, {64, 33}, {70, 33}, {130, 17}} {
				n, m := nm[0], nm[1]
				t.Run(fmt.Sprintf("%v/n=%d,k=%d,m=%d", typ, n, k, m), func(t *testing.T) {
					data, wf := quantWeight(t, r, typ, m, k)
					p := newWeight(t, b, typ, m, k, data).(*Tensor).packed
					x := randFloats(r, n*k, 1)
					stride := xRowBytes(kind, k)
					xq := alignedBytes(n * stride)
					quantizeX(kind, x, k, n, k, xq, stride)
					var xs []float32
					for i := range n {
						xs = append(xs, dequantizeXRef(kind, xq[i*stride:], k)...)
					}
					var first []float32
					for _, l := range supportedLevels()[1:] {
						if _, ok := packedKind(typ, l); !ok {
							continue
						}
						dst := make([]float32, n*m+1)
						dst[n*m] = 42 // a guard past the end
						matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq, stride, n, k, dst, m)
						if dst[n*m] != 42 {
							t.Fatalf("%v: the kernel wrote past dst", l)
						}
						checkDots(t, dst[:n*m], xs, wf, n, k, m, matmulTol)
						// Each row alone, and the rows from the second on.
						for i := range n {
							one := make([]float32, m)
							matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq[i*stride:], stride, 1, k, one, m)
							for o := range m {
								if math.Float32bits(one[o]) != math.Float32bits(dst[i*m+o]) {
									t.Fatalf("%v: row %d alone: dst[%d] = %v, in a tile of %d: %v", l, i, o, one[o], n, dst[i*m+o])
								}
							}
						}
						if first == nil {
							first = dst
							continue
						}
						for j := range first {
							if math.Float32bits(first[j]) != math.Float32bits(dst[j]) {
								t.Fatalf("%v: dst[%d] = %v, at %v %v", l, j, dst[j], supportedLevels()[1], first[j])
							}
						}
					}
				})
			}
		}
	}
}

// RepackedBytes is the size of the copy Weight makes, and a view of a
// packed weight computes its rows bit for bit as the weight does.
func TestRepackedBytesAndSlice(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	b := newTestBackend(t)
	r := rand.New(rand.NewPCG(54, 55))
	if n := RepackedBytes(gguf.TypeF32, 16, 256); n != 0 {
		t.Errorf("RepackedBytes(F32) = %d, want 0", n)
	}
	for _, typ := range packedTypes() {
		const rows, k = 37, 512
		data, _ := quantWeight(t, r, typ, rows, k)
		w := newWeight(t, b, typ, rows, k, data)
		p := w.(*Tensor).packed
		if got, want := RepackedBytes(typ, rows, k), int64(len(p.data)); got != want {
			t.Errorf("%v: RepackedBytes = %d, the copy is %d", typ, got, want)
		}
		if got, want := RepackedBytes(typ, rows, k), int64(3*k/packBlockElems(p.kind)*packBlockBytes(p.kind)); got != want {
			t.Errorf("%v: RepackedBytes = %d, want 3 groups: %d", typ, got, want)
		}
		x := newAct(t, b, 2, k, randFloats(r, 2*k, 1))
		full := newAct(t, b, 2, rows, nil)
		b.MatMul(full, x, w)
		for _, n := range []int{16, 5} {
			v := b.Slice(w, n)
			if v.(*Tensor).packed == nil {
				t.Errorf("%v: view of %d rows has no packed copy", typ, n)
			}
			dst := newAct(t, b, 2, n, nil)
			b.MatMul(dst, x, v)
			got, want := download(b, dst), download(b, full)
			for i := range 2 {
				for o := range n {
					if got[i*n+o] != want[i*rows+o] {
						t.Fatalf("%v: view of %d rows: dst[%d,%d] = %v, the weight's %v", typ, n, i, o, got[i*n+o], want[i*rows+o])
					}
				}
			}
		}
	}
}
