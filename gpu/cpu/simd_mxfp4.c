//go:build amd64 && cgo

// The AVX-512 MXFP4, IQ4_NL and IQ4_XS matmul kernels (simd_mxfp4.h;
// AVX2's and AVX-VNNI's are in simd_rows256.h).

#include "simd.h"

#include "simd_mxfp4.h"

// AVX-512: two blocks per step against one X8P pair, x biased by 128 and
// the bias's share, 128·Σw, started below zero, as Q8_0's q8_0_pair.
// With nl, IQ4_NL's blocks.
INLINE AVX512 void mxfp4_pair(const uint8_t *wb, int two, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int nl) {
	const __m512i u128 = _mm512_set1_epi8((char)0x80);
	__m512i wq = _mm512_zextsi256_si512(mxfp4_codes(blk_qs(wb, nl), nl));
	__m256 d0 = _mm256_set1_ps(blk_d(wb, nl)), d1 = _mm256_setzero_ps();
	if (two) {
		const uint8_t *wb1 = wb + block4(nl);
		wq = _mm512_inserti64x4(wq, mxfp4_codes(blk_qs(wb1, nl), nl), 1);
		d1 = _mm256_set1_ps(blk_d(wb1, nl));
	}
	__m512 dw = _mm512_insertf32x8(_mm512_castps256_ps512(d0), d1, 1);
	__m512i bias = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), u128, wq));
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = x + i * xs;
		__m512i s = _mm512_dpbusd_epi32(bias, _mm512_load_si512(xp), wq);
		acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_load_ps((const float *)(xp + 64))), acc[i]);
	}
}

INLINE AVX512 void mx4_row512(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os,
                              int nl) {
	__m512 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm512_setzero_ps();
	int nb = k / 32, p = 0;
	int64_t bb = block4(nl);
	for (; 2 * p + 2 <= nb; p++)
		mxfp4_pair(w + p * 2 * bb, 1, x + (int64_t)p * X8P_BYTES, xs, nx, acc, nl);
	if (nb % 2) // an odd last block, against the zero half of its pair
		mxfp4_pair(w + p * 2 * bb, 0, x + (int64_t)p * X8P_BYTES, xs, nx, acc, nl);
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(acc[i]);
}
INLINE AVX512 void mxfp4_row512(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	mx4_row512(w, k, x, xs, nx, out, os, 0);
}
INLINE AVX512 void iq4_nl_row512(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	mx4_row512(w, k, x, xs, nx, out, os, 1);
}
MM_DRIVER(folio_mm_mxfp4_avx512, mxfp4_row512, AVX512, XT)
MM_DRIVER(folio_mm_iq4_nl_avx512, iq4_nl_row512, AVX512, XT)

// IQ4_XS weights, XK activations: a sub-block's 32 codes as IQ4_NL's, plus
// 128 (unsigned, vpdpbusd's), against the activations; the bias, 128·Σx
// of each sub-block times its scale, from the activations' sums of 32.
// Each sub-block's int32 sums times its scale (less 32) add up to the
// super-block's, which d·dx scales.
INLINE AVX512 void iq4_xs_row512(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const __m256i u128 = _mm256_set1_epi8((char)0x80);
	__m256 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm256_setzero_ps();
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * IQ4_XS_BYTES;
		__m256i isum[XT];
		for (int i = 0; i < nx; i++)
			isum[i] = _mm256_setzero_si256();
		int16_t sc[8] __attribute__((aligned(16)));
		for (int ib = 0; ib < 8; ib++) {
			sc[ib] = (int16_t)iq4_xs_scale(wb, ib);
			__m256i wu = _mm256_xor_si256(mxfp4_codes(wb + 8 + 16 * ib, 1), u128);
			__m256i scv = _mm256_set1_epi32(sc[ib]);
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES + 32 * ib;
				__m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wu, _mm256_load_si256((const __m256i *)xp));
				isum[i] = _mm256_add_epi32(isum[i], _mm256_mullo_epi32(p, scv));
			}
		}
		__m128i sc16 = _mm_load_si128((const __m128i *)sc);
		float d = h2f(wb);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xb = x + i * xs + (int64_t)s * XK_BYTES;
			// less 128·Σ sc·Σx over the sub-blocks, in lane 0
			__m128i b = _mm_madd_epi16(sc16, _mm_loadu_si128((const __m128i *)(xb + XK_BS32)));
			b = _mm_add_epi32(b, _mm_unpackhi_epi64(b, b));
			b = _mm_add_epi32(b, _mm_shuffle_epi32(b, 1));
			__m256i t = _mm256_add_epi32(isum[i], _mm256_zextsi128_si256(_mm_cvtsi32_si128(-128 * _mm_cvtsi128_si32(b))));
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(t), _mm256_set1_ps(d * ldf(xb + XK_D)), acc[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = hsum8(acc[i]);
}
MM_DRIVER(folio_mm_iq4_xs_avx512, iq4_xs_row512, AVX512, XT)
