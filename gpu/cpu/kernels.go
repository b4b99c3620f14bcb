package cpu

import (
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

// kernels is the backend's kernel table: each op's kernel at one SIMD
// level, filled once (kernelsAt, from New) so that the ops call through it
// and never test the level. The scalar table holds the plain Go kernels;
// an op whose kernel a level lacks gets the Go one there.
type kernels struct {
	level simdLevel

	// elemCost is the pool cost of a unit of an elementwise op that costs
	// goCost in the Go kernel, ropeCost that of Rope's.
	elemCost, ropeCost func(goCost int) int

	// matmulKind reports the matmul kernel of a weight type, if any;
	// packedKind whether weights of a type are repacked (repack.go).
	matmulKind, packedKind func(typ gguf.TensorType) (kernelKind, bool)

	// attentionOp runs Attention, its arguments checked: through the Go
	// kernel or through attention's units.
	attentionOp func(b *Backend, dst, q gpu.Tensor, cq *Tensor, cc *KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts,
		rowSeq []int32, maxCtx int)

	matmul       func(kind kernelKind, w []byte, wstride, rows int, x []byte, xstride, nx, k int, dst []float32, dstride int)
	matmulPacked func(kind kernelKind, w []byte, group, nb, rows int, x []byte, xstride, nx, k int, dst []float32, dstride int)
	// matmulF32 is the float32 matmul, MatMul of F32 weights (matmulF32Go
	// at the scalar and NEON levels).
	matmulF32 func(w []float32, wstride, rows int, x []float32, xstride, nx, k int, dst []float32, dstride int)
	// attention runs units lo … hi-1 of attention: a unit is a run of
	// g/parts of the g query heads of one K/V head of one tile.
	attention func(tiles []attnTile, lo, hi int, q []float32, qstride, g, parts, d int, kl, vl unsafe.Pointer, kind kvKind,
		blocks []int32, bs, kvheads int, o gpu.AttnOpts, sinks, out, scratch []float32)

	argmax  func(x []float32) int
	rmsNorm func(x, w, dst []float32, g int, eps float32)
	add     func(a, b, dst []float32, c, bstride int)
	siluMul func(gate, up, dst []float32)
	geluMul func(tab, gate, up, dst []float32) // up may be nil
	mixRows func(dst, base []float32, srcs [][]float32, coefs []float32, wide int, cols []int, bias float32, n int)
	softmax func(x []float32, c int)
	rope    func(neox bool, cs, x []float32, c, hd, dims int)
	writeKV func(t *writeKVTask, lo, hi int)
}

// kernelsAt returns the kernel table of level l.
func kernelsAt(l simdLevel) *kernels {
	k := &kernels{
		level:    l,
		elemCost: func(c int) int { return c },
		ropeCost: func(c int) int { return c },
		matmulKind: func(gguf.TensorType) (kernelKind, bool) {
			return 0, false
		},
		packedKind: func(gguf.TensorType) (kernelKind, bool) {
			return 0, false
		},
		matmul:       noMatmul,
		attentionOp:  (*Backend).attentionGo,
		matmulPacked: noMatmulPacked,
		matmulF32:    matmulF32Go,
		attention:    noAttention,
		argmax:       gpu.ArgMax,
		rmsNorm:      rmsNormGo,
		add:          addGo,
		siluMul:      siluMulGo,
		geluMul:      geluMulGo,
		mixRows:      gpu.MixRowsHost,
		softmax:      softmaxGo,
		rope:         ropeGo,
		writeKV:      writeKVGo,
	}
	if l == levelScalar {
		return k
	}
	// v picks the kernels the ops have (kernelFor, packedKind, rope); the
	// cgo wrappers run each C kernel at l's vector, packed or attention
	// level (they differ at amx and avx512bf16).
	v := l.vector()
	k.matmulKind = func(typ gguf.TensorType) (kernelKind, bool) { return kernelFor(typ, v) }
	k.packedKind = func(typ gguf.TensorType) (kernelKind, bool) { return packedKind(typ, v) }
	k.matmul = func(kind kernelKind, w []byte, wstride, rows int, x []byte, xstride, nx, kk int, dst []float32, dstride int) {
		matmulX(kind, v, w, wstride, rows, x, xstride, nx, kk, dst, dstride)
	}
	k.attentionOp = func(b *Backend, dst, q gpu.Tensor, cq *Tensor, cc *KVCache, layer int, batch *gpu.Batch, o gpu.AttnOpts,
		_ []int32, maxCtx int) {
		b.attentionSIMD(b.act(dst), b.f32(q), cq.cols, cc, layer, batch, o, maxCtx)
	}
	k.attention = func(tiles []attnTile, lo, hi int, q []float32, qstride, g, parts, d int, kl, vl unsafe.Pointer, kind kvKind,
		blocks []int32, bs, kvheads int, o gpu.AttnOpts, sinks, out, scratch []float32) {
		attentionX(l, tiles, lo, hi, q, qstride, g, parts, d, kl, vl, kind, blocks, bs, kvheads, o, sinks, out, scratch)
	}
	k.elemCost = simdCost
	k.rmsNorm = func(x, w, dst []float32, g int, eps float32) { rmsNormX(v, x, w, dst, g, eps) }
	k.add = func(a, b, dst []float32, c, bstride int) { addX(v, a, b, dst, c, bstride) }
	k.siluMul = func(gate, up, dst []float32) { siluMulX(v, gate, up, dst) }
	k.softmax = func(x []float32, c int) { softmaxX(v, x, c) }
	k.mixRows, k.geluMul = mixRowsX, geluMulX
	if v.arm() { // arm64 (simd_neon*.c): no packed weights; argmax, rope and the K/V store in Go
		return k
	}
	k.matmulPacked = func(kind kernelKind, w []byte, group, nb, rows int, x []byte, xstride, nx, kk int, dst []float32, dstride int) {
		matmulPackedX(kind, l, w, group, nb, rows, x, xstride, nx, kk, dst, dstride)
	}
	k.argmax = func(x []float32) int { return argmaxX(v, x) }
	k.matmulF32 = func(w []float32, wstride, rows int, x []float32, xstride, nx, kk int, dst []float32, dstride int) {
		matmulF32X(v, w, wstride, rows, x, xstride, nx, kk, dst, dstride)
	}
	k.writeKV = writeKVSIMD
	if v == levelAVX512 { // the rope kernels are AVX-512 only
		k.rope = ropeX
		k.ropeCost = simdCost
	}
	return k
}

// noMatmul, noMatmulPacked and noAttention fill the scalar table's entries for the SIMD
// matmul and attention, which the scalar level never reaches: its
// matmulKind reports no kernel, and Attention runs its Go units.
func noMatmul(kernelKind, []byte, int, int, []byte, int, int, int, []float32, int) {
	panic("cpu: no SIMD matmul at the scalar level")
}

func noMatmulPacked(kernelKind, []byte, int, int, int, []byte, int, int, int, []float32, int) {
	panic("cpu: no SIMD matmul at the scalar level")
}

func noAttention([]attnTile, int, int, []float32, int, int, int, int, unsafe.Pointer, unsafe.Pointer, kvKind,
	[]int32, int, int, gpu.AttnOpts, []float32, []float32, []float32) {
	panic("cpu: no SIMD attention at the scalar level")
}
