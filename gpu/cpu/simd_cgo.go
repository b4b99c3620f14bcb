//go:build cgo && (amd64 || arm64)

package cpu

// The cgo wrappers that amd64 and arm64 share: the C functions behind them
// exist at every level of both (simd_quant.c and simd_neon.c, simd_ops.c
// and simd_neon_ops.c, simd_attn.c and simd_neon_attn.c). Those of one
// architecture only are in simd_amd64.go and simd_arm64.go.

// #cgo CFLAGS: -O3
// #cgo LDFLAGS: -lm
// #include "simd.h"
import "C"

import (
	"fmt"
	"unsafe"

	"folio/gpu"
)

func detectLevel() simdLevel { return simdLevel(C.folio_cpu_level()) }

// quantizeX writes n rows of x (k elements, xstride apart) into out in
// kind's activation format, ostride bytes apart. One cgo call.
func quantizeX(kind kernelKind, x []float32, xstride, n, k int, out []byte, ostride int) {
	_ = x[(n-1)*xstride+k-1]
	_ = out[(n-1)*ostride+xRowBytes(kind, k)-1]
	C.folio_quantize(C.int(kind), (*C.float)(unsafe.Pointer(&x[0])), C.int64_t(xstride), C.int(n), C.int(k),
		(*C.uint8_t)(unsafe.Pointer(&out[0])), C.int64_t(ostride))
}

// matmulX sets dst[i·dstride + r] = w row r · x row i for r < rows and
// i < nx: rows weight rows of wstride bytes from w, nx activation rows of
// kind's format, xstride bytes apart, from x (64-byte aligned). One cgo
// call.
func matmulX(kind kernelKind, l simdLevel, w []byte, wstride, rows int, x []byte, xstride, nx, k int, dst []float32, dstride int) {
	_ = w[(rows-1)*wstride+wstride-1]
	_ = x[(nx-1)*xstride+xRowBytes(kind, k)-1]
	_ = dst[(nx-1)*dstride+rows-1]
	C.folio_matmul(C.int(kind), C.int(l.vector()), (*C.uint8_t)(unsafe.Pointer(&w[0])), C.int64_t(wstride), C.int(rows),
		(*C.uint8_t)(unsafe.Pointer(&x[0])), C.int64_t(xstride), C.int(nx), C.int(k),
		(*C.float)(unsafe.Pointer(&dst[0])), C.int64_t(dstride))
}

// attnTile is a tile of rows as the kernels read it (simd.h's folio_tile):
// its first row of q and out, its row count, the position of that row and
// where its sequence's block table starts in simdAttentionTask.blocks.
type attnTile = C.folio_tile

func newAttnTile(row, rows, pos, blocks int32) attnTile {
	return attnTile{row: C.int32_t(row), rows: C.int32_t(rows), pos: C.int32_t(pos), blocks: C.int32_t(blocks)}
}

// The Go names of the C side's enums and sizes (simd.h): a mismatch is an
// index out of range, which does not compile. The levels are checked in
// simd_amd64.go and simd_arm64.go.
func _() {
	var x [1]int
	_ = x[kindQ8_0-C.KIND_Q8_0] + x[kindQ4_0-C.KIND_Q4_0] + x[kindQ4_K-C.KIND_Q4_K] + x[kindQ6_K-C.KIND_Q6_K] + x[kindF16-C.KIND_F16] + x[kindMXFP4-C.KIND_MXFP4] + x[kindQ5_0-C.KIND_Q5_0] + x[kindQ5_K-C.KIND_Q5_K] + x[kindBF16-C.KIND_BF16] + x[kindQ3_K-C.KIND_Q3_K] + x[kindQ2_K-C.KIND_Q2_K] + x[kindIQ4_NL-C.KIND_IQ4_NL] + x[kindIQ4_XS-C.KIND_IQ4_XS] + x[kindQ4_1-C.KIND_Q4_1] + x[kindQ5_1-C.KIND_Q5_1] + x[kindIQ4_XSK-C.KIND_IQ4_XSK] + x[kindQ8_0S-C.KIND_Q8_0S] + x[kindIQ4_NLS-C.KIND_IQ4_NLS]
	_ = x[C.KIND_Q8_0-kindQ8_0] + x[C.KIND_Q4_0-kindQ4_0] + x[C.KIND_Q4_K-kindQ4_K] + x[C.KIND_Q6_K-kindQ6_K] + x[C.KIND_F16-kindF16] + x[C.KIND_MXFP4-kindMXFP4] + x[C.KIND_Q5_0-kindQ5_0] + x[C.KIND_Q5_K-kindQ5_K] + x[C.KIND_BF16-kindBF16] + x[C.KIND_Q3_K-kindQ3_K] + x[C.KIND_Q2_K-kindQ2_K] + x[C.KIND_IQ4_NL-kindIQ4_NL] + x[C.KIND_IQ4_XS-kindIQ4_XS] + x[C.KIND_Q4_1-kindQ4_1] + x[C.KIND_Q5_1-kindQ5_1] + x[C.KIND_IQ4_XSK-kindIQ4_XSK] + x[C.KIND_Q8_0S-kindQ8_0S] + x[C.KIND_IQ4_NLS-kindIQ4_NLS]
	_ = x[kvF32-C.KV_F32] + x[kvF16-C.KV_F16] + x[kvQ8-C.KV_Q8] + x[C.KV_F32-kvF32] + x[C.KV_F16-kvF16] + x[C.KV_Q8-kvQ8]
	_ = x[q8Bytes-C.Q8_0_BYTES] + x[C.Q8_0_BYTES-q8Bytes]
}

// attentionX runs units lo … hi-1 of SIMD attention (simd_attn.c, at the
// NEON level simd_neon_attn.c) in one cgo call: unit u is K/V head u % kvheads, with its g query heads, of the
// tile of rows tiles[u/kvheads]. The caller has checked the tiles against
// q, out and blocks; kl and vl are the layer's K and V, of kind
// (KVCache.kvKind: float32s, halves or Q8_0 blocks); scratch holds
// attnScratch of the largest tile. o is causal (not Bidirectional): its
// scale, window and soft-cap; sinks, if not nil, has a logit per query
// head (kvheads·g).
func attentionX(l simdLevel, tiles []attnTile, lo, hi int, q []float32, qstride, g, parts, d int, kl, vl unsafe.Pointer, kind kvKind,
	blocks []int32, bs, kvheads int, o gpu.AttnOpts, sinks, out, scratch []float32) {
	if parts < 1 || g%parts != 0 {
		panic(fmt.Sprintf("cpu: attention: %d query heads a K/V head in %d parts", g, parts))
	}
	_ = tiles[(hi-1)/(kvheads*parts)]
	if l.attnBF16(kind) { // the kernel's scratch grows with the rows, which it trusts
		rows := 0
		for u := lo; u < hi; u++ {
			rows = max(rows, int(tiles[u/(kvheads*parts)].rows))
		}
		_ = scratch[attnScratchBF16(rows*g, d)-1]
	}
	var ps *C.float
	if sinks != nil {
		_ = sinks[kvheads*g-1]
		ps = (*C.float)(unsafe.Pointer(&sinks[0]))
	}
	C.folio_attention(C.int(l), C.folio_attn{
		tiles: &tiles[0], q: (*C.float)(unsafe.Pointer(&q[0])), out: (*C.float)(unsafe.Pointer(&out[0])),
		scratch: (*C.float)(unsafe.Pointer(&scratch[0])), kl: kl, vl: vl, blocks: (*C.int32_t)(unsafe.Pointer(&blocks[0])), sinks: ps,
		qstride: C.int64_t(qstride), g: C.int(g), parts: C.int(parts), d: C.int(d), kt: C.int(kind), bs: C.int(bs), kvheads: C.int(kvheads),
		window: C.int(o.Window), scale: C.float(o.Scale), cap: C.float(o.SoftCap),
	}, C.int(lo), C.int(hi))
}

// siluMulX: dst = silu(gate) · up over len(dst) elements. One cgo call.
func siluMulX(l simdLevel, gate, up, dst []float32) {
	n := len(dst)
	_, _ = gate[n-1], up[n-1]
	C.folio_silu_mul(C.int(l.vector()), (*C.float)(unsafe.Pointer(&gate[0])), (*C.float)(unsafe.Pointer(&up[0])),
		(*C.float)(unsafe.Pointer(&dst[0])), C.int64_t(n))
}

// rmsNormX normalizes len(y)/g runs of g elements of x into y (which may
// be x), times w. One cgo call.
func rmsNormX(l simdLevel, x, w, y []float32, g int, eps float32) {
	n := len(y) / g
	_, _ = x[n*g-1], w[g-1]
	C.folio_rmsnorm(C.int(l.vector()), (*C.float)(unsafe.Pointer(&x[0])), (*C.float)(unsafe.Pointer(&w[0])),
		(*C.float)(unsafe.Pointer(&y[0])), C.int64_t(n), C.int(g), C.float(eps))
}

// addX sets the len(y)/c rows of y to a + b, b's rows bstride apart (0:
// one row for all). One cgo call.
func addX(l simdLevel, a, b, y []float32, c, bstride int) {
	n := len(y) / c
	_, _ = a[n*c-1], b[(n-1)*bstride+c-1]
	C.folio_add(C.int(l.vector()), (*C.float)(unsafe.Pointer(&a[0])), (*C.float)(unsafe.Pointer(&b[0])),
		(*C.float)(unsafe.Pointer(&y[0])), C.int64_t(n), C.int64_t(c), C.int64_t(bstride))
}

// softmaxX replaces each of the len(x)/c rows of x by its softmax. One cgo
// call.
func softmaxX(l simdLevel, x []float32, c int) {
	C.folio_softmax(C.int(l.vector()), (*C.float)(unsafe.Pointer(&x[0])), C.int64_t(len(x)/c), C.int64_t(c))
}

// mixRowsX is gpu.MixRowsHost, one cgo call for up to four sources (Gemma
// 3n's streams: simd_ops.c at the x86 levels, simd_neon_ops.c at NEON);
// in Go for more.
func mixRowsX(dst, base []float32, srcs [][]float32, coefs []float32, wide int, cols []int, bias float32, n int) {
	k, rows := len(srcs), len(dst)/n
	if k == 0 || k > 4 || rows == 0 {
		gpu.MixRowsHost(dst, base, srcs, coefs, wide, cols, bias, n)
		return
	}
	var s [4]*C.float
	var cs [4]int32
	for j, src := range srcs {
		_ = src[rows*n-1]
		s[j], cs[j] = (*C.float)(unsafe.Pointer(&src[0])), int32(cols[j])
	}
	_, _ = base[rows*n-1], coefs[(rows-1)*wide+wide-1]
	C.folio_mix_rows((*C.float)(unsafe.Pointer(&dst[0])), (*C.float)(unsafe.Pointer(&base[0])), s[0], s[1], s[2], s[3],
		C.int(k), (*C.float)(unsafe.Pointer(&coefs[0])), C.int64_t(wide), (*C.int32_t)(unsafe.Pointer(&cs[0])),
		C.float(bias), C.int64_t(rows), C.int64_t(n))
}

// geluMulX: dst = gelu(gate) · up (up nil: gelu(gate)) by tab, GELUMul's
// table, over len(dst) elements. One cgo call.
func geluMulX(tab, gate, up, dst []float32) {
	n := len(dst)
	_ = gate[n-1]
	var u *C.float
	if up != nil {
		_ = up[n-1]
		u = (*C.float)(unsafe.Pointer(&up[0]))
	}
	C.folio_gelu_mul((*C.float)(unsafe.Pointer(&tab[0])), (*C.float)(unsafe.Pointer(&gate[0])), u,
		(*C.float)(unsafe.Pointer(&dst[0])), C.int64_t(n))
}
