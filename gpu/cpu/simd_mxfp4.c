//go:build amd64 && cgo

// The AVX-512 MXFP4 matmul kernel (simd_mxfp4.h; AVX2's and AVX-VNNI's
// are in simd_rows256.h).

#include "simd.h"

#include "simd_mxfp4.h"

// AVX-512: two blocks per step against one X8P pair, x biased by 128 and
// the bias's share, 128·Σw, started below zero, as Q8_0's q8_0_pair.
INLINE AVX512 void mxfp4_pair(const uint8_t *wb, int two, const uint8_t *x, int64_t xs, int nx, __m512 *acc) {
	const __m512i u128 = _mm512_set1_epi8((char)0x80);
	__m512i wq = _mm512_zextsi256_si512(mxfp4_codes(wb + 1));
	__m256 d0 = _mm256_set1_ps(e8m0_half(wb[0])), d1 = _mm256_setzero_ps();
	if (two) {
		wq = _mm512_inserti64x4(wq, mxfp4_codes(wb + MXFP4_BYTES + 1), 1);
		d1 = _mm256_set1_ps(e8m0_half(wb[MXFP4_BYTES]));
	}
	__m512 dw = _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1);
	__m512i bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), u128, wq));
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = x + i * xs;
		__m512i s = _mm512_dpbusd_epi32(bias, _mm512_load_si512(xp), wq);
		acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_load_ps((const float *)(xp + 64))), acc[i]);
	}
}

INLINE AVX512 void mxfp4_row512(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	__m512 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm512_setzero_ps();
	int nb = k / 32, p = 0;
	for (; 2 * p + 2 <= nb; p++)
		mxfp4_pair(w + (int64_t)p * 2 * MXFP4_BYTES, 1, x + (int64_t)p * X8P_BYTES, xs, nx, acc);
	if (nb % 2) // an odd last block, against the zero half of its pair
		mxfp4_pair(w + (int64_t)p * 2 * MXFP4_BYTES, 0, x + (int64_t)p * X8P_BYTES, xs, nx, acc);
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(acc[i]);
}
MM_DRIVER(folio_mm_mxfp4_avx512, mxfp4_row512, AVX512, XT)
