//go:build arm64 && cgo

// Elementwise ops at the NEON level, in float32 as simd_ops.c computes
// them on x86: RMSNorm's squares summed in float64, softmax's
// exponentials summed in float64 and scaled by the float32 of 1/sum, and
// e^x as simd_attn_avx2.c's exp256 (ggml's ggml_v_expf), four lanes at a
// time. The tails of a row run through the same vector code on a padded
// copy.

#include <arm_neon.h>
#include <math.h>

#include "simd.h"

// exp4 is e^x within 1.5 ulp, x clamped to [-87, 88] (exp256's steps).
static inline float32x4_t exp4(float32x4_t x) {
	x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.f)), vdupq_n_f32(88.f));
	const float32x4_t r = vdupq_n_f32(0x1.8p23f);
	float32x4_t z = vfmaq_f32(r, x, vdupq_n_f32(0x1.715476p+0f));
	float32x4_t n = vsubq_f32(z, r);
	float32x4_t b = vfmsq_f32(vfmsq_f32(x, n, vdupq_n_f32(0x1.62e4p-1f)), n, vdupq_n_f32(0x1.7f7d1cp-20f));
	float32x4_t k = vreinterpretq_f32_u32(
		vaddq_u32(vshlq_n_u32(vreinterpretq_u32_f32(z), 23), vreinterpretq_u32_f32(vdupq_n_f32(1.f))));
	float32x4_t u = vmulq_f32(b, b);
	float32x4_t j = vfmaq_f32(vmulq_f32(vdupq_n_f32(0x1.ffffecp-1f), b),
	                          vfmaq_f32(vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b),
	                                    vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b), u),
	                          u);
	return vfmaq_f32(k, j, k);
}

static inline float32x4_t silu_mul4(float32x4_t g, float32x4_t u) {
	return vmulq_f32(vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.f), exp4(vnegq_f32(g)))), u);
}

// folio_silu_mul: dst = gate / (1 + e^-gate) · up (ggml's swiglu). dst may
// be gate.
void folio_silu_mul(int level, const float *gate, const float *up, float *dst, int64_t n) {
	(void)level;
	int64_t i = 0;
	for (; i + 4 <= n; i += 4)
		vst1q_f32(dst + i, silu_mul4(vld1q_f32(gate + i), vld1q_f32(up + i)));
	if (i < n) {
		float g[4] = {0}, u[4] = {0}, y[4];
		memcpy(g, gate + i, 4 * (n - i));
		memcpy(u, up + i, 4 * (n - i));
		vst1q_f32(y, silu_mul4(vld1q_f32(g), vld1q_f32(u)));
		memcpy(dst + i, y, 4 * (n - i));
	}
}

// folio_rmsnorm: each of n runs of g elements of x becomes x /
// sqrtf(mean(x²) + eps) · w into y (which may be x), as ggml's rms_norm
// and the mul after it round.
void folio_rmsnorm(int level, const float *x, const float *w, float *y, int64_t n, int g, float eps) {
	(void)level;
	for (int64_t r = 0; r < n; r++, x += g, y += g) {
		float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
		int j = 0;
		for (; j + 4 <= g; j += 4) {
			float32x4_t v = vld1q_f32(x + j), sq = vmulq_f32(v, v);
			s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(sq)));
			s1 = vaddq_f64(s1, vcvt_high_f64_f32(sq));
		}
		double sum = vaddvq_f64(vaddq_f64(s0, s1));
		for (; j < g; j++)
			sum += (double)(x[j] * x[j]);
		float mean = (float)(sum / g);
		float scale = 1.f / sqrtf(mean + eps);
		for (j = 0; j + 4 <= g; j += 4)
			vst1q_f32(y + j, vmulq_f32(vmulq_n_f32(vld1q_f32(x + j), scale), vld1q_f32(w + j)));
		for (; j < g; j++)
			y[j] = (x[j] * scale) * w[j];
	}
}

// folio_add: n rows of c elements, y = a + b, b's rows bstride apart (0:
// one row broadcast). y may be a.
void folio_add(int level, const float *a, const float *b, float *y, int64_t n, int64_t c, int64_t bstride) {
	(void)level;
	for (int64_t r = 0; r < n; r++, a += c, b += bstride, y += c) {
		int64_t j = 0;
		for (; j + 4 <= c; j += 4)
			vst1q_f32(y + j, vaddq_f32(vld1q_f32(a + j), vld1q_f32(b + j)));
		for (; j < c; j++)
			y[j] = a[j] + b[j];
	}
}

// folio_softmax: each of n rows of c elements of x becomes its softmax,
// as ggml_vec_soft_max_f32 and its caller compute it.
void folio_softmax(int level, float *x, int64_t n, int64_t c) {
	(void)level;
	for (int64_t r = 0; r < n; r++, x += c) {
		float m = -__builtin_inff();
		for (int64_t j = 0; j < c; j++)
			m = x[j] > m ? x[j] : m;
		float32x4_t mv = vdupq_n_f32(m);
		float64x2_t s0 = vdupq_n_f64(0), s1 = vdupq_n_f64(0);
		int64_t j = 0;
		for (; j + 4 <= c; j += 4) {
			float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + j), mv));
			vst1q_f32(x + j, e);
			s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
			s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
		}
		double sum = vaddvq_f64(vaddq_f64(s0, s1));
		if (j < c) {
			float t[4] = {0};
			memcpy(t, x + j, 4 * (c - j));
			vst1q_f32(t, exp4(vsubq_f32(vld1q_f32(t), mv)));
			for (int64_t i = j; i < c; i++) {
				x[i] = t[i - j];
				sum += x[i];
			}
		}
		float inv = (float)(1 / sum);
		for (j = 0; j < c; j++)
			x[j] *= inv;
	}
}

// folio_mix_rows: simd_ops.c's, four lanes at a time: for each of rows
// rows (n floats apart), dst = the fused multiply-adds (vfmaq_f32, fmaf's
// rounding) of the k ≤ 4 sources times their coefficients
// (coefs[row·wide + cols[j]] + bias), in order from 0, then plus base. dst
// may be base or a source.
// Its products and sums round as written: GCC would otherwise contract
// a product and the add after it into one FMA.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
void folio_mix_rows(float *dst, const float *base, const float *s0, const float *s1, const float *s2, const float *s3,
                    int k, const float *coefs, int64_t wide, const int32_t *cols, float bias, int64_t rows, int64_t n) {
	const float *s[4] = {s0, s1, s2, s3};
	for (int64_t r = 0; r < rows; r++) {
		float c[4];
		for (int j = 0; j < k; j++)
			c[j] = coefs[r * wide + cols[j]] + bias;
		int64_t o = r * n, i = 0;
		for (; i + 4 <= n; i += 4) {
			float32x4_t acc = vmulq_n_f32(vld1q_f32(s[0] + o + i), c[0]);
			for (int j = 1; j < k; j++)
				acc = vfmaq_n_f32(acc, vld1q_f32(s[j] + o + i), c[j]);
			vst1q_f32(dst + o + i, vaddq_f32(acc, vld1q_f32(base + o + i)));
		}
		for (; i < n; i++) {
			float acc = s[0][o + i] * c[0];
			for (int j = 1; j < k; j++)
				acc = fmaf(s[j][o + i], c[j], acc);
			dst[o + i] = acc + base[o + i];
		}
	}
}
#pragma GCC pop_options

// folio_gelu_mul: dst = gelu(gate) · up (up NULL: gelu(gate)), as
// simd_ops.c's: 0 at or below -10, the gate itself at or above 10 (and
// NaN), else tab[the half nearest the gate] (FCVT rounds to nearest even,
// as gguf.F32ToF16); the product rounded once. dst may be gate.
void folio_gelu_mul(const float *tab, const float *gate, const float *up, float *dst, int64_t n) {
	for (int64_t i = 0; i < n; i++) {
		float x = gate[i], y = x;
		if (x <= -10.f) {
			y = 0;
		} else if (x < 10.f) {
			__fp16 h = (__fp16)x;
			uint16_t bits;
			memcpy(&bits, &h, 2);
			y = tab[bits];
		}
		dst[i] = up ? y * up[i] : y;
	}
}
