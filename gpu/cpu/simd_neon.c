//go:build arm64 && cgo

// The NEON level (arm64): CPU detection, the activation quantizers and
// the matmuls, on the activation formats the x86 kernels read (xquant.go,
// simd.h), so that the Go side is shared. A block's dot product is
// Armv8.2's sdot (vdotq_s32: four int8 pairs summed into each int32 lane),
// which the level requires; the functions that use it carry its target,
// so the rest of the binary runs on any arm64 CPU. Every weight block is
// decoded once for a tile of up to 8 activation rows (MM_DRIVER): NEON has
// 32 registers, as AVX-512. The i8mm level's kernels (smmla) are
// simd_neon_i8mm.h's.

#include <arm_neon.h>
#include <sys/auxv.h>

#include "simd.h"
#include "simd_mxfp4.h"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif

#define DOT __attribute__((target("arch=armv8.2-a+dotprod")))

#ifndef HWCAP2_I8MM
#define HWCAP2_I8MM (1 << 13)
#endif

int folio_cpu_level(void) {
	if (!(getauxval(AT_HWCAP) & HWCAP_ASIMDDP))
		return LEVEL_SCALAR;
	return getauxval(AT_HWCAP2) & HWCAP2_I8MM ? LEVEL_I8MM : LEVEL_NEON;
}

// h2f reads the little-endian half at p.
static inline float h2f(const uint8_t *p) {
	__fp16 h;
	memcpy(&h, p, 2);
	return (float)h;
}

static inline float load_f32(const uint8_t *p) {
	float f;
	memcpy(&f, p, 4);
	return f;
}

// quant32 quantizes 32 floats as simd_quant.c's quant32 (ggml's x86
// quantize_row_q8_0): d = amax/127 stored as a half, quants x·(127/amax)
// rounded to nearest even (fcvtns). It returns the half's value and stores
// the quants and their sum.
static inline float quant32(const float *x, int8_t q[32], int *sum) {
	float32x4_t v[8], m = vdupq_n_f32(0);
	for (int j = 0; j < 8; j++) {
		v[j] = vld1q_f32(x + 4 * j);
		m = vmaxq_f32(m, vabsq_f32(v[j]));
	}
	float amax = vmaxvq_f32(m);
	float id = amax != 0.f ? 127.f / amax : 0.f;
	int32x4_t s = vdupq_n_s32(0);
	for (int j = 0; j < 8; j += 2) {
		int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[j], id)), b = vcvtnq_s32_f32(vmulq_n_f32(v[j + 1], id));
		s = vaddq_s32(s, vaddq_s32(a, b));
		vst1_s8(q + 4 * j, vmovn_s16(vcombine_s16(vmovn_s32(a), vmovn_s32(b))));
	}
	*sum = vaddvq_s32(s);
	return (float)(__fp16)(amax / 127.f);
}

// quant_x8p stores the quants xor'd with bias, as the x86 kernels want
// them (0x80, or 0 for AVX2's x8s kinds); the NEON ones take the bias of
// 0x80 off again.
static void quant_x8p(const float *x, int k, uint8_t *out, uint8_t b) {
	const uint8x16_t bias = vdupq_n_u8(b);
	int nb = k / 32;
	for (int b = 0; b < nb; b++) {
		uint8_t *p = out + (b / 2) * X8P_BYTES;
		int h = b % 2, sum;
		int8_t q[32];
		float d = quant32(x + 32 * b, q, &sum);
		vst1q_u8(p + 32 * h, veorq_u8(vreinterpretq_u8_s8(vld1q_s8(q)), bias));
		vst1q_u8(p + 32 * h + 16, veorq_u8(vreinterpretq_u8_s8(vld1q_s8(q + 16)), bias));
		float *dp = (float *)(p + 64) + 8 * h;
		vst1q_f32(dp, vdupq_n_f32(d));
		vst1q_f32(dp + 4, vdupq_n_f32(d));
	}
	if (nb % 2) {
		uint8_t *p = out + (nb / 2) * X8P_BYTES;
		memset(p + 32, b, 32);
		memset(p + 96, 0, 32);
	}
}

static void quant_x4g(const float *x, int k, uint8_t *out) {
	int nb = k / 32;
	for (int b = 0; b < nb; b++) {
		uint8_t *g = out + (b / 4) * X4G_BYTES;
		int j = b % 4, sum;
		int8_t q[32];
		float d = quant32(x + 32 * b, q, &sum);
		memcpy(g + 16 * j, q, 16);
		memcpy(g + 64 + 16 * j, q + 16, 16);
		vst1q_f32((float *)(g + 128) + 4 * j, vdupq_n_f32(d));
		int32_t bias[4] = {-8 * sum, 0, 0, 0};
		memcpy(g + 192 + 16 * j, bias, 16);
	}
	x4g_pad(out, nb);
}

// quant_xk quantizes 256-element super-blocks as ggml's quantize_row_q8_K
// (simd_quant.c's quant_xk): the element of largest magnitude (the first,
// on ties), max, maps to -127; quants are x·(-127/max) rounded to nearest
// even, capped at 127; d = 1/iscale.
static void quant_xk(const float *x, int k, uint8_t *out) {
	for (int s = 0; s < k / 256; s++, x += 256, out += XK_BYTES) {
		float32x4_t m = vdupq_n_f32(0);
		for (int j = 0; j < 256; j += 4)
			m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + j)));
		float amax = vmaxvq_f32(m);
		if (amax == 0.f) {
			memset(out, 0, XK_BYTES);
			continue;
		}
		float iscale = -127.f / xk_max(x, amax);
		const int32x4_t cap = vdupq_n_s32(127);
		int16_t *bsums = (int16_t *)(out + XK_BSUMS);
		for (int j = 0; j < 256; j += 16) {
			int32x4_t i[4];
			for (int t = 0; t < 4; t++)
				i[t] = vminq_s32(cap, vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + j + 4 * t), iscale)));
			bsums[j / 16] = (int16_t)vaddvq_s32(vaddq_s32(vaddq_s32(i[0], i[1]), vaddq_s32(i[2], i[3])));
			int16x8_t lo = vcombine_s16(vmovn_s32(i[0]), vmovn_s32(i[1]));
			int16x8_t hi = vcombine_s16(vmovn_s32(i[2]), vmovn_s32(i[3]));
			vst1q_s8((int8_t *)(out + j), vcombine_s8(vmovn_s16(lo), vmovn_s16(hi)));
		}
		xk_close(out, iscale);
	}
}

static void quant_f16(const float *x, int k, uint8_t *out) {
	int j = 0;
	for (; j + 4 <= k; j += 4)
		vst1_f16((__fp16 *)(out + 2 * j), vcvt_f16_f32(vld1q_f32(x + j)));
	for (; j < k; j++) {
		__fp16 h = (__fp16)x[j];
		memcpy(out + 2 * j, &h, 2);
	}
	memset(out + 2 * k, 0, ((2 * k + 63) & ~63) - 2 * k);
}

static void quant_bf16(const float *x, int k, uint8_t *out) { quant_bf16_tail(x, 0, k, out); }

// folio_quantize writes n rows of x (k floats each, xstride apart) in the
// activation format of kind, ostride bytes apart.
void folio_quantize(int kind, const float *x, int64_t xstride, int n, int k, uint8_t *out, int64_t ostride) {
	quantize_rows(kind, x, xstride, n, k, out, ostride, quant_x8p, quant_x4g, quant_xk, quant_f16, quant_bf16);
}

// x8p_block is block b of an X8P row as int8 (the bias of 128 taken off),
// in two halves, and its scale.
INLINE void x8p_block(const uint8_t *row, int b, int8x16_t *x0, int8x16_t *x1, float *d) {
	const uint8x16_t bias = vdupq_n_u8(0x80);
	const uint8_t *p = row + (int64_t)(b / 2) * X8P_BYTES + 32 * (b % 2);
	*x0 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p), bias));
	*x1 = vreinterpretq_s8_u8(veorq_u8(vld1q_u8(p + 16), bias));
	*d = load_f32(p + 64);
}

// x8p_dot adds to acc[i], for each of the nx X8P rows at x (xs bytes
// apart), the dot product of its block b with a weight block's 32 int8
// values (w0: elements 0-15, w1: 16-31), times dw and the row's scale: a
// tile's step of Q8_0 and MXFP4.
INLINE DOT void x8p_dot(int8x16_t w0, int8x16_t w1, float dw, const uint8_t *x, int64_t xs, int b, int nx,
                        float32x4_t acc[XT]) {
	for (int i = 0; i < nx; i++) {
		int8x16_t x0, x1;
		float dx;
		x8p_block(x + i * xs, b, &x0, &x1, &dx);
		int32x4_t p = vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, x0), w1, x1);
		acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(p), dw * dx);
	}
}

// Q8_0 weights, X8P activations, one block per step.
INLINE DOT void q8_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	float32x4_t acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = vdupq_n_f32(0);
	for (int b = 0; b < k / 32; b++) {
		const uint8_t *wb = w + (int64_t)b * Q8_0_BYTES;
		int8x16_t w0 = vld1q_s8((const int8_t *)wb + 2), w1 = vld1q_s8((const int8_t *)wb + 18);
		x8p_dot(w0, w1, h2f(wb), x, xs, b, nx, acc);
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = vaddvq_f32(acc[i]);
}
MM_DRIVER(folio_mm_q8_0_neon, q8_0_row, DOT, 8)

// MXFP4 weights, X8P activations: a block's 32 codes become int8 values by
// a table lookup of the doubled E2M1 values (gguf.MXFP4Values, |v| ≤ 12),
// and its scale is the power of two 2^(e-128) (gguf.E8M0Half), exact;
// from there the dot product is Q8_0's.
static inline float e8m0_half(uint8_t e) {
	uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

// With nl, IQ4_NL's blocks (a half d, then the codes; gguf.IQ4NLValues).
INLINE DOT void mx4_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os, int nl) {
	static const int8_t values[2][16] = {{MXFP4_TABLE}, {IQ4NL_TABLE}};
	const int8x16_t table = vld1q_s8(values[nl]);
	float32x4_t acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = vdupq_n_f32(0);
	for (int b = 0; b < k / 32; b++) {
		const uint8_t *wb = w + (int64_t)b * (nl ? IQ4_NL_BYTES : MXFP4_BYTES);
		uint8x16_t q = vld1q_u8(wb + (nl ? 2 : 1));
		int8x16_t w0 = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0f))), w1 = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
		x8p_dot(w0, w1, nl ? h2f(wb) : e8m0_half(wb[0]), x, xs, b, nx, acc);
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = vaddvq_f32(acc[i]);
}
INLINE DOT void mxfp4_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	mx4_row(w, k, x, xs, nx, out, os, 0);
}
INLINE DOT void iq4_nl_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	mx4_row(w, k, x, xs, nx, out, os, 1);
}
MM_DRIVER(folio_mm_iq4_nl_neon, iq4_nl_row, DOT, 8)

// IQ4_XS weights, X8P activations: each sub-block of 32 as an IQ4_NL block
// whose scale is d·(its 6-bit scale less 32), exact in float32.
INLINE DOT void iq4_xs_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	static const int8_t values[16] = {IQ4NL_TABLE};
	const int8x16_t table = vld1q_s8(values);
	float32x4_t acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = vdupq_n_f32(0);
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * IQ4_XS_BYTES;
		float d = h2f(wb);
		for (int ib = 0; ib < 8; ib++) {
			uint8x16_t v = vld1q_u8(wb + 8 + 16 * ib);
			int8x16_t w0 = vqtbl1q_s8(table, vandq_u8(v, vdupq_n_u8(0x0f))), w1 = vqtbl1q_s8(table, vshrq_n_u8(v, 4));
			x8p_dot(w0, w1, d * (float)iq4_xs_scale(wb, ib), x, xs, 8 * s + ib, nx, acc);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = vaddvq_f32(acc[i]);
}
MM_DRIVER(folio_mm_iq4_xs_neon, iq4_xs_row, DOT, 8)

MM_DRIVER(folio_mm_mxfp4_neon, mxfp4_row, DOT, 8)

// fifth16 is 16 where bit e of the 16 bits b has its element e's fifth bit
// set, else 0.
INLINE uint8x16_t fifth16(uint32_t b) {
	static const uint8_t bit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
	uint8x16_t v = vcombine_u8(vdup_n_u8((uint8_t)b), vdup_n_u8((uint8_t)(b >> 8)));
	return vandq_u8(vtstq_u8(v, vld1q_u8(bit)), vdupq_n_u8(0x10));
}

// q40_quants sets lo and hi to the quants of a Q4_0-like block at wb
// (its scales o bytes past the half d: 2 for Q4_1's and Q5_1's min):
// elements 0-15 and 16-31, with five 5-bit (Q5_0, Q5_1).
INLINE void q40_quants(const uint8_t *wb, int o, int five, int8x16_t *lo, int8x16_t *hi) {
	const uint8x16_t m4 = vdupq_n_u8(0x0f);
	uint8x16_t q = vld1q_u8(wb + o + (five ? 6 : 2)), l = vandq_u8(q, m4), h = vshrq_n_u8(q, 4);
	if (five) {
		uint32_t qh;
		memcpy(&qh, wb + o + 2, 4);
		l = vorrq_u8(l, fifth16(qh));
		h = vorrq_u8(h, fifth16(qh >> 16));
	}
	*lo = vreinterpretq_s8_u8(l), *hi = vreinterpretq_s8_u8(h);
}

// Q4_0 weights, X4G activations: the low nibbles (elements 0-15) and the
// high ones (16-31) against the group's two halves of the block, starting
// from the block's bias lane (-8·Σx: Q4_0's offset), so the int32 lanes
// sum to the block's dot product. With five, Q5_0 weights (d, 32 fifth
// bits, 16 bytes of nibbles): the same steps on the 5-bit quants (0-31),
// from the bias doubled (-16·Σx).
// With one, Q4_1's or Q5_1's blocks (a half min m after d): no offset, and
// m·dx·Σq added, Σq = -bias/8.
INLINE DOT void q40_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os, int five,
                        int one) {
	const int bb = five ? (one ? Q5_1_BYTES : Q5_0_BYTES) : (one ? Q4_1_BYTES : Q4_0_BYTES), o = one ? 2 : 0;
	float32x4_t acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = vdupq_n_f32(0);
	for (int b = 0; b < k / 32; b++) {
		const uint8_t *wb = w + (int64_t)b * bb;
		int8x16_t lo, hi;
		q40_quants(wb, o, five, &lo, &hi);
		float dw = h2f(wb);
		int j = b % 4;
		for (int i = 0; i < nx; i++) {
			const uint8_t *g = x + i * xs + (int64_t)(b / 4) * X4G_BYTES;
			int32x4_t p = vld1q_s32((const int32_t *)(g + 192) + 4 * j);
			int bias = vgetq_lane_s32(p, 0);
			if (one)
				p = vdupq_n_s32(0);
			else if (five)
				p = vshlq_n_s32(p, 1);
			p = vdotq_s32(p, lo, vld1q_s8((const int8_t *)g + 16 * j));
			p = vdotq_s32(p, hi, vld1q_s8((const int8_t *)g + 64 + 16 * j));
			float32x4_t dx = vld1q_f32((const float *)(g + 128) + 4 * j);
			acc[i] = vfmaq_f32(acc[i], vcvtq_f32_s32(p), vmulq_n_f32(dx, dw));
			if (one) // in lane 0, as the bias was
				acc[i] = vsetq_lane_f32(vgetq_lane_f32(acc[i], 0) + h2f(wb + 2) * (float)(-bias / 8) * vgetq_lane_f32(dx, 0),
				                        acc[i], 0);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = vaddvq_f32(acc[i]);
}
INLINE DOT void q4_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	q40_row(w, k, x, xs, nx, out, os, 0, 0);
}
MM_DRIVER(folio_mm_q4_0_neon, q4_0_row, DOT, 8)
INLINE DOT void q5_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	q40_row(w, k, x, xs, nx, out, os, 1, 0);
}
MM_DRIVER(folio_mm_q5_0_neon, q5_0_row, DOT, 8)
INLINE DOT void q4_1_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	q40_row(w, k, x, xs, nx, out, os, 0, 1);
}
MM_DRIVER(folio_mm_q4_1_neon, q4_1_row, DOT, 8)
INLINE DOT void q5_1_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	q40_row(w, k, x, xs, nx, out, os, 1, 1);
}
MM_DRIVER(folio_mm_q5_1_neon, q5_1_row, DOT, 8)

// mlal8 adds the products of a's and b's eight int16 lanes, widened, to
// acc's four int32 lanes (lane j: pairs j and j+4).
INLINE int32x4_t mlal8(int32x4_t acc, int16x8_t a, int16x8_t b) {
	return vmlal_s16(vmlal_s16(acc, vget_low_s16(a), vget_low_s16(b)), vget_high_s16(a), vget_high_s16(b));
}

// k_step is acc + dx·(d·a − dmin·b), a K-quant super-block's share of a
// row's sum, in explicit fused steps: left to the compiler, a tile's rows
// (vectorized) and a single row (scalar) contracted the products into
// FMAs differently, and a row's result depended on the rows beside it.
INLINE float k_step(float acc, float dx, float d, float a, float dmin, float b) {
	return __builtin_fmaf(dx, __builtin_fmaf(-dmin, b, d * a), acc);
}

// qk_quants sets q[0] and q[1] to sub-block j's quants of the Q4_K
// super-block at wb (elements 0-15, 16-31), with five Q5_K's: 32 bytes of
// fifth bits (bit j of byte l: sub-block j's element l) before the quants.
INLINE void qk_quants(const uint8_t *wb, int j, int five, int8x16_t *q) {
	const uint8x16_t m4 = vdupq_n_u8(0x0f), m10 = vdupq_n_u8(0x10);
	const uint8_t *qs = wb + (five ? 48 : 16) + 32 * (j / 2);
	uint8x16_t a = vld1q_u8(qs), b = vld1q_u8(qs + 16);
	uint8x16_t l = j % 2 ? vshrq_n_u8(a, 4) : vandq_u8(a, m4), h = j % 2 ? vshrq_n_u8(b, 4) : vandq_u8(b, m4);
	if (five) {
		uint8x16_t bit = vdupq_n_u8((uint8_t)(1 << j));
		l = vorrq_u8(l, vandq_u8(vtstq_u8(vld1q_u8(wb + 16), bit), m10));
		h = vorrq_u8(h, vandq_u8(vtstq_u8(vld1q_u8(wb + 32), bit), m10));
	}
	q[0] = vreinterpretq_s8_u8(l), q[1] = vreinterpretq_s8_u8(h);
}

// Q4_K weights (d, dmin, 12 scale bytes, 128 quant bytes), XK
// activations: each 32-element sub-block's integer dot times its scale,
// less dmin times its min times the activations' sum of 32 (XK_BS32).
// With five, Q5_K weights: 32 bytes of fifth bits (bit j of byte l:
// sub-block j's element l) before the quants.
INLINE DOT void qk_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os, int five) {
	const int bb = five ? Q5_K_BYTES : Q4_K_BYTES;
	float acc[XT] = {0};
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * bb;
		float d = h2f(wb), dmin = h2f(wb + 2);
		uint32_t u[4];
		uint8_t sm[16]; // the 8 scales, then the 8 mins
		q4k_scales(wb + 4, u);
		memcpy(sm, u, 16);
		int16x8_t mins = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sm + 8)));
		int8x16_t q[16]; // sub-block j's elements 0-15 in q[2j], 16-31 in q[2j+1]
		for (int j = 0; j < 8; j++)
			qk_quants(wb, j, five, q + 2 * j);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xb = x + i * xs + (int64_t)s * XK_BYTES;
			const int8_t *xq = (const int8_t *)xb;
			int32x4_t sum = vdupq_n_s32(0);
			for (int j = 0; j < 8; j++) {
				int32x4_t p = vdotq_s32(vdupq_n_s32(0), q[2 * j], vld1q_s8(xq + 32 * j));
				p = vdotq_s32(p, q[2 * j + 1], vld1q_s8(xq + 32 * j + 16));
				sum = vmlaq_n_s32(sum, p, sm[j]);
			}
			int16x8_t bs = vld1q_s16((const int16_t *)(xb + XK_BS32));
			int32x4_t mb = mlal8(vdupq_n_s32(0), mins, bs);
			acc[i] = k_step(acc[i], load_f32(xb + XK_D), d, (float)vaddvq_s32(sum), dmin, (float)vaddvq_s32(mb));
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = acc[i];
}
INLINE DOT void q4_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	qk_row(w, k, x, xs, nx, out, os, 0);
}
MM_DRIVER(folio_mm_q4_k_neon, q4_k_row, DOT, 8)
INLINE DOT void q5_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	qk_row(w, k, x, xs, nx, out, os, 1);
}
MM_DRIVER(folio_mm_q5_k_neon, q5_k_row, DOT, 8)

// q6 is a Q6_K quant (0-63) from its low four bits and its high two.
INLINE int8x16_t q6(uint8x16_t lo, uint8x16_t hi) { return vreinterpretq_s8_u8(vorrq_u8(lo, vshlq_n_u8(hi, 4))); }

// q6_quants sets o[u] to sub-block 8n + 2u + j's 16 quants (0-63) of the
// Q6_K super-block at wb: bytes 16j … 16j+15 of ql's and qh's 32-byte runs
// of half n.
INLINE void q6_quants(const uint8_t *wb, int n, int j, int8x16_t *o) {
	const uint8x16_t m4 = vdupq_n_u8(0x0f), m3 = vdupq_n_u8(0x03);
	const uint8_t *ql = wb + 64 * n, *qh = wb + 128 + 32 * n;
	uint8x16_t a = vld1q_u8(ql + 16 * j), b = vld1q_u8(ql + 32 + 16 * j), h = vld1q_u8(qh + 16 * j);
	o[0] = q6(vandq_u8(a, m4), vandq_u8(h, m3));
	o[1] = q6(vandq_u8(b, m4), vandq_u8(vshrq_n_u8(h, 2), m3));
	o[2] = q6(vshrq_n_u8(a, 4), vandq_u8(vshrq_n_u8(h, 4), m3));
	o[3] = q6(vshrq_n_u8(b, 4), vshrq_n_u8(h, 6));
}

// Q6_K weights (ql[128], qh[64], int8 scales[16], d), XK activations: the
// 6-bit quants decoded once (0-63, in element order) for the tile; each
// 16-element sub-block's dot times its scale, less 32 times its scale
// times the activations' sum of 16 (XK_BSUMS): Q6_K's offset.
INLINE DOT void q6_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	float acc[XT] = {0};
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q6_K_BYTES;
		const int8_t *sc = (const int8_t *)wb + 192;
		float d = h2f(wb + 208);
		int16x8_t sc0 = vmovl_s8(vld1_s8(sc)), sc1 = vmovl_s8(vld1_s8(sc + 8));
		int8x16_t q[16]; // elements 16t … 16t+15 in q[t]
		for (int n = 0; n < 2; n++)
			for (int j = 0; j < 2; j++) {
				int8x16_t o[4];
				q6_quants(wb, n, j, o);
				for (int u = 0; u < 4; u++)
					q[8 * n + 2 * u + j] = o[u];
			}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xb = x + i * xs + (int64_t)s * XK_BYTES;
			const int8_t *xq = (const int8_t *)xb;
			int32x4_t sum = vdupq_n_s32(0);
			for (int t = 0; t < 16; t++)
				sum = vmlaq_n_s32(sum, vdotq_s32(vdupq_n_s32(0), q[t], vld1q_s8(xq + 16 * t)), sc[t]);
			int16x8_t bs0 = vld1q_s16((const int16_t *)(xb + XK_BSUMS)), bs1 = vld1q_s16((const int16_t *)(xb + XK_BSUMS) + 8);
			int32x4_t off = mlal8(mlal8(vdupq_n_s32(0), sc0, bs0), sc1, bs1);
			acc[i] = k_step(acc[i], load_f32(xb + XK_D), d, (float)(vaddvq_s32(sum) - 32 * vaddvq_s32(off)), 0, 0);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = acc[i];
}
MM_DRIVER(folio_mm_q6_k_neon, q6_k_row, DOT, 8)

// Q3_K weights (hmask[32], qs[64], 12 bytes of 6-bit scales, d), XK
// activations: the 3-bit quants decoded once for the tile, less their
// offset of 4 (so -4 … 3, in element order); each 16-element sub-block's
// dot times its scale. Element 128n + 32j + l has its low bits at 2j of
// qs[32n + l] and its third bit at 4n + j of hmask[l].
INLINE DOT void q3_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const uint8x16_t m3 = vdupq_n_u8(3), one = vdupq_n_u8(1), four = vdupq_n_u8(4);
	float acc[XT] = {0};
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q3_K_BYTES, *sb = wb + 96;
		float d = h2f(wb + 108);
		int sc[16];
		for (int i = 0; i < 16; i++)
			sc[i] = (int)((sb[i % 8] >> (4 * (i / 8)) & 15) | (sb[8 + i % 4] >> (2 * (i / 4)) & 3) << 4) - 32;
		int8x16_t q[16]; // sub-block t in q[t]
		for (int n = 0; n < 2; n++)
			for (int u = 0; u < 2; u++) {
				uint8x16_t a = vld1q_u8(wb + 32 + 32 * n + 16 * u), h = vld1q_u8(wb + 16 * u);
				for (int j = 0; j < 4; j++) {
					uint8x16_t lo = vandq_u8(vshlq_u8(a, vdupq_n_s8((int8_t)(-2 * j))), m3);
					uint8x16_t hi = vandq_u8(vshlq_u8(h, vdupq_n_s8((int8_t)(-(4 * n + j)))), one);
					q[8 * n + 2 * j + u] = vreinterpretq_s8_u8(vsubq_u8(vorrq_u8(lo, vshlq_n_u8(hi, 2)), four));
				}
			}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xb = x + i * xs + (int64_t)s * XK_BYTES;
			const int8_t *xq = (const int8_t *)xb;
			int32x4_t sum = vdupq_n_s32(0);
			for (int t = 0; t < 16; t++)
				sum = vmlaq_n_s32(sum, vdotq_s32(vdupq_n_s32(0), q[t], vld1q_s8(xq + 16 * t)), sc[t]);
			acc[i] = k_step(acc[i], load_f32(xb + XK_D), d, (float)vaddvq_s32(sum), 0, 0);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = acc[i];
}
MM_DRIVER(folio_mm_q3_k_neon, q3_k_row, DOT, 8)

// Q2_K weights (a byte of 4-bit scale and min for each sub-block, qs[64],
// d, dmin), XK activations: the 2-bit quants decoded once for the tile
// (Q3_K's low bits); each sub-block's dot times its scale, less its min
// times the activations' sum of 16 (XK_BSUMS), these times dmin.
INLINE DOT void q2_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const uint8x16_t m3 = vdupq_n_u8(3);
	float acc[XT] = {0};
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q2_K_BYTES;
		float d = h2f(wb + 80), dmin = h2f(wb + 82);
		uint8x16_t sm = vld1q_u8(wb);
		int16x8_t mn0 = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(vget_low_u8(sm), 4)));
		int16x8_t mn1 = vreinterpretq_s16_u16(vmovl_u8(vshr_n_u8(vget_high_u8(sm), 4)));
		int8x16_t q[16];
		for (int n = 0; n < 2; n++)
			for (int u = 0; u < 2; u++) {
				uint8x16_t a = vld1q_u8(wb + 16 + 32 * n + 16 * u);
				for (int j = 0; j < 4; j++)
					q[8 * n + 2 * j + u] = vreinterpretq_s8_u8(vandq_u8(vshlq_u8(a, vdupq_n_s8((int8_t)(-2 * j))), m3));
			}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xb = x + i * xs + (int64_t)s * XK_BYTES;
			const int8_t *xq = (const int8_t *)xb;
			int32x4_t sum = vdupq_n_s32(0);
			for (int t = 0; t < 16; t++)
				sum = vmlaq_n_s32(sum, vdotq_s32(vdupq_n_s32(0), q[t], vld1q_s8(xq + 16 * t)), wb[t] & 15);
			int16x8_t bs0 = vld1q_s16((const int16_t *)(xb + XK_BSUMS)), bs1 = vld1q_s16((const int16_t *)(xb + XK_BSUMS) + 8);
			int32x4_t mb = mlal8(mlal8(vdupq_n_s32(0), mn0, bs0), mn1, bs1);
			acc[i] = k_step(acc[i], load_f32(xb + XK_D), d, (float)vaddvq_s32(sum), dmin, (float)vaddvq_s32(mb));
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = acc[i];
}
MM_DRIVER(folio_mm_q2_k_neon, q2_k_row, DOT, 8)

// F16 weights, F16 activations (the row padded with zeros to 64 bytes):
// halves widened to float32 (fcvtl) and multiplied in float32, eight
// elements a step; the weight row's tail one at a time.
INLINE void f16_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	float32x4_t acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = vdupq_n_f32(0);
	const __fp16 *wh = (const __fp16 *)w;
	int j = 0;
	for (; j + 8 <= k; j += 8) {
		float16x8_t wv = vld1q_f16(wh + j);
		float32x4_t w0 = vcvt_f32_f16(vget_low_f16(wv)), w1 = vcvt_high_f32_f16(wv);
		for (int i = 0; i < nx; i++) {
			float16x8_t xv = vld1q_f16((const __fp16 *)(x + i * xs) + j);
			acc[i] = vfmaq_f32(acc[i], w0, vcvt_f32_f16(vget_low_f16(xv)));
			acc[i] = vfmaq_f32(acc[i], w1, vcvt_high_f32_f16(xv));
		}
	}
	for (int i = 0; i < nx; i++) {
		float s = vaddvq_f32(acc[i]);
		const __fp16 *xh = (const __fp16 *)(x + i * xs);
		for (int t = j; t < k; t++)
			s += (float)wh[t] * (float)xh[t];
		out[i * os] = s;
	}
}
MM_DRIVER(folio_mm_f16_neon, f16_row, , 8)

// BF16 weights, BF16 activations (the row padded with zeros to 64 bytes):
// widened to float32 by a shift (vshll) and multiplied in float32, eight
// elements a step; the weight row's tail one at a time.
INLINE void bf16_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	float32x4_t acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = vdupq_n_f32(0);
	const uint16_t *wb = (const uint16_t *)w;
	int j = 0;
	for (; j + 8 <= k; j += 8) {
		uint16x8_t wv = vld1q_u16(wb + j);
		float32x4_t w0 = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(wv), 16));
		float32x4_t w1 = vreinterpretq_f32_u32(vshll_high_n_u16(wv, 16));
		for (int i = 0; i < nx; i++) {
			uint16x8_t xv = vld1q_u16((const uint16_t *)(x + i * xs) + j);
			acc[i] = vfmaq_f32(acc[i], w0, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(xv), 16)));
			acc[i] = vfmaq_f32(acc[i], w1, vreinterpretq_f32_u32(vshll_high_n_u16(xv, 16)));
		}
	}
	for (int i = 0; i < nx; i++) {
		float s = vaddvq_f32(acc[i]);
		for (int t = j; t < k; t++)
			s += b2f(w + 2 * t) * b2f(x + i * xs + 2 * t);
		out[i * os] = s;
	}
}
MM_DRIVER(folio_mm_bf16_neon, bf16_row, , 8)

#include "simd_neon_i8mm.h"

// folio_matmul: dst[i*dstride + r] = w row r · x row i for r < rows, i < nx,
// at the NEON level (the only arm64 one).
void folio_matmul(int kind, int level, MM_ARGS) {
	static void (*const fns[15])(MM_ARGS) = {
	    folio_mm_q8_0_neon,  folio_mm_q4_0_neon, folio_mm_q4_k_neon, folio_mm_q6_k_neon,   folio_mm_f16_neon,
	    folio_mm_mxfp4_neon, folio_mm_q5_0_neon, folio_mm_q5_k_neon, folio_mm_bf16_neon,   folio_mm_q3_k_neon,
	    folio_mm_q2_k_neon,  folio_mm_iq4_nl_neon, folio_mm_iq4_xs_neon, folio_mm_q4_1_neon, folio_mm_q5_1_neon};
	// at the i8mm level, by kind: smmla's kernels for one activation row
	// too (paired with itself), so that a row's result does not depend on
	// the rows computed with it
	static void (*const i8mm[15])(MM_ARGS) = {
	    [KIND_Q8_0] = mm_q8_0_i8mm,     [KIND_Q4_0] = mm_q4_0_i8mm,   [KIND_Q4_K] = mm_q4_k_i8mm,
	    [KIND_Q6_K] = mm_q6_k_i8mm,     [KIND_MXFP4] = mm_mxfp4_i8mm, [KIND_Q5_0] = mm_q5_0_i8mm,
	    [KIND_Q5_K] = mm_q5_k_i8mm,     [KIND_IQ4_NL] = mm_iq4_nl_i8mm, [KIND_IQ4_XS] = mm_iq4_xs_i8mm,
	    [KIND_Q4_1] = mm_q4_1_i8mm,     [KIND_Q5_1] = mm_q5_1_i8mm,
	};
	if (level == LEVEL_I8MM && i8mm[kind]) {
		i8mm[kind](w, wstride, rows, x, xstride, nx, k, dst, dstride);
		return;
	}
	fns[kind](w, wstride, rows, x, xstride, nx, k, dst, dstride);
}
