package cpu

// The SIMD kernels take activations quantized once per MatMul, as ggml
// does (its vec_dot_type): to 8-bit blocks for quantized weights, so that
// a block's dot product is an integer one, to F16 for F16 weights and to
// BF16 for BF16 ones. The
// formats are laid out for the kernels (simd.h has the same offsets):
//
//	kindQ8_0  X8P: per pair of 32-element blocks, 128 bytes: q[64]
//	          (block 2j, then 2j+1) as uint8 q+128 (vpdpbusd's unsigned
//	          operand; the kernels take 128·Σw off), float32 d[16] (each
//	          block's scale 8 times, one per int32 lane of its sum). An
//	          odd last block is paired with a zero one.
//	kindQ4_0  X4G: per group of 4 blocks, 256 bytes: int8 q[128]
//	          (elements 0-15 of blocks 0-3, then elements 16-31 of blocks
//	          0-3: the order of a Q4_0 block's low and high nibbles),
//	          float32 d[16] (each scale 4 times), int32 bias[16] (lane 4j
//	          is -8·Σq of block j: Q4_0's offset). Missing blocks are zero.
//	kindQ5_0  X4G, as kindQ4_0 (its kernels double the bias).
//	kindQ4_1,
//	kindQ5_1  X4G (their kernels take Σq = -bias/8 times the block's min).
//	kindQ4_K  XK: per 256-element super-block, 320 bytes: int8 q[256],
//	kindQ5_K,
//	kindQ6_K,
//	kindQ3_K,
//	kindQ2_K  float32 d at 256, int16 bsums[16] at 288 (sums of 16 quants),
//	          as ggml's block_q8_K, and int16[8] at 260: the sums of 32
//	          (Q4_K's sub-blocks, for the packed kernel's mins).
//	kindF16   halves, the row padded to 64 bytes.
//	kindBF16  bfloat16s (rounded to nearest even, as ggml's
//	          GGML_FP32_TO_BF16), the row padded to 64 bytes.
//	kindMXFP4 X8P, as kindQ8_0 (ggml dots MXFP4 with Q8_0 blocks too).
//	kindIQ4_NL X8P, as ggml does.
//	kindIQ4_XS X8P: its sub-blocks of 32 are IQ4_NL blocks with a
//	          float32 scale (ggml takes Q8_K's activations for it).
//	kindIQ4_XSK XK, as ggml does (IQ4_XS at AVX2).
//	kindQ8_0S,
//	kindIQ4_NLS X8P with its quants as int8, unbiased (Q8_0 and IQ4_NL at AVX2).
//
// The 8-bit blocks round as ggml's x86 quantizers do: Q8_0's d = amax/127
// is stored as a half, quants x·127/amax rounded to nearest even; Q8_K maps
// the element of largest magnitude to -127 and keeps d in float32.
// xquant_test.go holds the scalar reference of each format.

const (
	x8pBytes = 128
	x4gBytes = 256
	xkBytes  = 320
)

// xRowBytes is the size of one activation row of k elements in kind's
// format: a multiple of 64, so that rows stay 64-byte aligned.
func xRowBytes(kind kernelKind, k int) int {
	nb := k / 32
	switch kind {
	case kindQ8_0, kindMXFP4, kindIQ4_NL, kindIQ4_XS, kindQ8_0S, kindIQ4_NLS:
		return (nb + 1) / 2 * x8pBytes
	case kindQ4_0, kindQ5_0, kindQ4_1, kindQ5_1:
		return (nb + 3) / 4 * x4gBytes
	case kindQ4_K, kindQ5_K, kindQ6_K, kindQ3_K, kindQ2_K, kindIQ4_XSK:
		return k / 256 * xkBytes
	}
	return (2*k + 63) &^ 63
}
