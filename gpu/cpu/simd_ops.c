//go:build amd64 && cgo

// Elementwise ops in float32, as ggml computes them.

#include "simd.h"

static AVX512 void silu_mul512(const float *gate, const float *up, float *dst, int64_t n) {
	const __m512 one = _mm512_set1_ps(1.f);
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 g = _mm512_maskz_loadu_ps(m, gate + i);
		__m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
		_mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
	}
}

static AVX2 void silu_mul256(const float *gate, const float *up, float *dst, int64_t n) {
	const __m256 one = _mm256_set1_ps(1.f);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 g = _mm256_loadu_ps(gate + i);
		__m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
		_mm256_storeu_ps(dst + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
	}
	if (i < n) {
		float g[8] = {0}, u[8] = {0}, y[8];
		memcpy(g, gate + i, 4 * (n - i));
		memcpy(u, up + i, 4 * (n - i));
		silu_mul256(g, u, y, 8);
		memcpy(dst + i, y, 4 * (n - i));
	}
}

// folio_silu_mul: dst = gate / (1 + e^-gate) · up (ggml's swiglu). dst may
// be gate.
void folio_silu_mul(int level, const float *gate, const float *up, float *dst, int64_t n) {
	if (level == LEVEL_AVX512)
		silu_mul512(gate, up, dst, n);
	else
		silu_mul256(gate, up, dst, n);
}

// folio_write_kv_f16 stores n rows of k and v (width = kvheads·d floats
// each) as halves (round to nearest even, as F16C and ggml do) at the K/V
// slots slots[i]: head h of slot s starts at ((s/bs·kvheads + h)·bs +
// s%bs)·d of kd and vd.
AVX2 void folio_write_kv_f16(const float *k, const float *v, int n, const int32_t *slots, uint16_t *kd, uint16_t *vd,
                             int bs, int kvheads, int d) {
	int width = kvheads * d;
	for (int i = 0; i < n; i++) {
		int64_t s = slots[i];
		for (int h = 0; h < kvheads; h++) {
			int64_t at = ((s / bs * kvheads + h) * bs + s % bs) * d;
			const float *src[2] = {k + (int64_t)i * width + h * d, v + (int64_t)i * width + h * d};
			uint16_t *dst[2] = {kd + at, vd + at};
			for (int t = 0; t < 2; t++) {
				int j = 0;
				for (; j + 8 <= d; j += 8)
					_mm_storeu_si128((__m128i *)(dst[t] + j), _mm256_cvtps_ph(_mm256_loadu_ps(src[t] + j), 0));
				for (; j < d; j++)
					dst[t][j] = _cvtss_sh(src[t][j], 0);
			}
		}
	}
}
