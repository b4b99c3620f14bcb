//go:build amd64 && cgo

// AVX-512 (F, BW, VL, DQ, VNNI) matmul kernels: integer dot products of
// weight blocks with 8-bit activation blocks by vpdpbusd (unsigned bytes ×
// signed bytes, four at a time, into int32 lanes), scaled per block in
// float32. Each *_row dots one weight row with nx ≤ XT activation rows,
// decoding each weight block once for all of them.

#include "simd.h"

static inline AVX512 __m512i zero512(void) { return _mm512_setzero_si512(); }

// Q8_0 weights, X8P activations, two blocks per step. vpdpbusd wants one
// side unsigned: the activations come biased by 128 (x ^ 0x80), and the
// bias's share, 128·Σw, is taken off by starting each sum at -128·Σw
// (computed once per weight pair for every activation row).
// q8_0_pair adds the dot products of the weight pair at wb (two blocks, or
// one when two is 0) with the activation pairs of nx rows into acc.
INLINE AVX512 void q8_0_pair(const uint8_t *wb, int two, const uint8_t *x, int64_t xs, int nx, __m512 *acc) {
	const __m512i u128 = _mm512_set1_epi8((char)0x80);
	const __m512i pair = _mm512_set_epi64(0, 0, 0, 0, 0x0011001100110011, 0x0011001100110011, 0, 0);
	__m512i wq = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(wb + 2)));
	__m512 dw;
	if (two) {
		wq = _mm512_inserti64x4(wq, _mm256_loadu_si256((const __m256i *)(wb + Q8_0_BYTES + 2)), 1);
		// Both scales lie in the pair's first 64 bytes, at halves 0 and 17.
		dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(pair, _mm512_loadu_si512(wb))));
	} else {
		dw = _mm512_maskz_mov_ps(0xff, _mm512_set1_ps(h2f(wb)));
	}
	__m512i bias = _mm512_sub_epi32(zero512(), _mm512_dpbusd_epi32(zero512(), u128, wq));
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = x + i * xs;
		__m512i s = _mm512_dpbusd_epi32(bias, _mm512_load_si512(xp), wq);
		acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_load_ps((const float *)(xp + 64))), acc[i]);
	}
}

INLINE AVX512 void q8_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	__m512 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm512_setzero_ps();
	int nb = k / 32, p = 0;
	for (; 2 * p + 2 <= nb; p++)
		q8_0_pair(w + (int64_t)p * 2 * Q8_0_BYTES, 1, x + (int64_t)p * X8P_BYTES, xs, nx, acc);
	if (nb % 2) // an odd last block, against the zero half of its pair
		q8_0_pair(w + (int64_t)p * 2 * Q8_0_BYTES, 0, x + (int64_t)p * X8P_BYTES, xs, nx, acc);
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(acc[i]);
}
MM_DRIVER(folio_mm_q8_0_avx512, q8_0_row, AVX512, XT)

// Q4_0 weights, X4G activations, four blocks per step: the low nibbles of
// the four blocks against their elements 0-15, the high nibbles against
// 16-31. Nibbles are unsigned (q+8); the activations' bias lanes hold
// -8·Σx, which makes each sum Σ(q-8)·x.
// q4_0_group adds the dot products of the nb ≤ 4 weight blocks at wb with
// the activation groups of nx rows into acc; missing blocks count as zero.
INLINE AVX512 void q4_0_group(const uint8_t *wb, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc) {
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const __m512i quad = _mm512_set_epi64(0, 0, 0, 0, 0x001b001b001b001b, 0x0012001200120012, 0x0009000900090009, 0);
	__m512i v = _mm512_zextsi128_si512(_mm_loadu_si128((const __m128i *)(wb + 2)));
	if (nb > 1)
		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(wb + Q4_0_BYTES + 2)), 1);
	if (nb > 2)
		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(wb + 2 * Q4_0_BYTES + 2)), 2);
	if (nb > 3)
		v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i *)(wb + 3 * Q4_0_BYTES + 2)), 3);
	__m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
	__m512 dw;
	if (nb == 4) { // the four scales lie in the group's first 64 bytes, at halves 0, 9, 18, 27
		dw = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi16(quad, _mm512_loadu_si512(wb))));
	} else {
		uint16_t h[4] = {0, 0, 0, 0};
		for (int j = 0; j < nb; j++)
			memcpy(&h[j], wb + j * Q4_0_BYTES, 2);
		__m128i hv = _mm_cvtsi64_si128((int64_t)(h[0] | (uint64_t)h[1] << 16 | (uint64_t)h[2] << 32 | (uint64_t)h[3] << 48));
		dw = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
		                           _mm512_castps128_ps512(_mm_cvtph_ps(hv)));
	}
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = x + i * xs;
		__m512i s = _mm512_dpbusd_epi32(_mm512_load_si512(xp + 192), lo, _mm512_load_si512(xp));
		s = _mm512_dpbusd_epi32(s, hi, _mm512_load_si512(xp + 64));
		acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_load_ps((const float *)(xp + 128))), acc[i]);
	}
}

INLINE AVX512 void q4_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	__m512 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm512_setzero_ps();
	int nb = k / 32, g = 0;
	for (; 4 * g + 4 <= nb; g++)
		q4_0_group(w + (int64_t)g * 4 * Q4_0_BYTES, 4, x + (int64_t)g * X4G_BYTES, xs, nx, acc);
	switch (nb % 4) { // the last blocks, against the zero ones of their group
	case 1: q4_0_group(w + (int64_t)g * 4 * Q4_0_BYTES, 1, x + (int64_t)g * X4G_BYTES, xs, nx, acc); break;
	case 2: q4_0_group(w + (int64_t)g * 4 * Q4_0_BYTES, 2, x + (int64_t)g * X4G_BYTES, xs, nx, acc); break;
	case 3: q4_0_group(w + (int64_t)g * 4 * Q4_0_BYTES, 3, x + (int64_t)g * X4G_BYTES, xs, nx, acc); break;
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(acc[i]);
}
MM_DRIVER(folio_mm_q4_0_avx512, q4_0_row, AVX512, XT)

// Q4_K weights, XK activations. Per 64 elements (sub-blocks 2p and 2p+1:
// the low and high nibbles of 32 bytes), vpmaddubsw sums pairs of q·x into
// int16 and vpdpwssd multiplies them by the sub-blocks' 6-bit scales into
// int32 lanes; the mins' share, dmin·Σ m_j Σx_j, comes from the
// activations' sums of 16.
INLINE AVX512 void q4_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	__m512i idx[4]; // int16 lanes 0-15 take scale 2p, lanes 16-31 scale 2p+1
	for (int p = 0; p < 4; p++)
		idx[p] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set1_epi16(2 * p)), _mm256_set1_epi16(2 * p + 1), 1);
	__m512 accf[XT];
	__m256 accm[XT];
	for (int i = 0; i < nx; i++) {
		accf[i] = _mm512_setzero_ps();
		accm[i] = _mm256_setzero_ps();
	}
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q4_K_BYTES;
		float d = h2f(wb), dmin = h2f(wb + 2);
		__m128i sm = q4k_scales16(wb + 4);
		__m512i sc = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(sm));
		__m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm)); // m0 m0 m1 m1 …
		__m512i isum[XT];
		for (int i = 0; i < nx; i++)
			isum[i] = zero512();
		for (int p = 0; p < 4; p++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * p));
			__m512i q = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(v), _mm256_srli_epi16(v, 4), 1), m4);
			__m512i scv = _mm512_permutexvar_epi16(idx[p], sc);
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES + 64 * p;
				isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(q, _mm512_load_si512(xp)), scv);
			}
		}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES;
			float dx;
			memcpy(&dx, xp + XK_D, 4);
			accf[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_set1_ps(d * dx), accf[i]);
			__m256i mm = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(xp + XK_BSUMS)), mins);
			accm[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), _mm256_set1_ps(dmin * dx), accm[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(accf[i]) - hsum8(accm[i]);
}
MM_DRIVER(folio_mm_q4_k_avx512, q4_k_row, AVX512, XT)

// Q6_K weights, XK activations. Per half of a super-block, 64 bytes of low
// bits and 32 of high bits make 128 unsigned quants (q+32) in order, in two
// steps of 64: four sub-blocks of 16, whose pair sums (vpmaddubsw) are
// multiplied by their int8 scales into int32 lanes (vpdpwssd). The
// offset's share, 32·Σ sc_g·Σx_g, comes from the activations' sums.
INLINE AVX512 void q6_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30);
	__m512i idx[4]; // int16 lanes 8j … 8j+7 take scale 4c + j
	for (int c = 0; c < 4; c++)
		idx[c] = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_setr_epi16(4 * c, 4 * c, 4 * c, 4 * c, 4 * c, 4 * c, 4 * c, 4 * c,
		                                                 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1, 4 * c + 1)),
			_mm256_setr_epi16(4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2, 4 * c + 2,
		                          4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3, 4 * c + 3), 1);
	__m512 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm512_setzero_ps();
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q6_K_BYTES;
		float d = h2f(wb + 208);
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192)));
		__m512i sc = _mm512_castsi256_si512(sc16);
		__m512i isum[XT];
		for (int i = 0; i < nx; i++)
			isum[i] = zero512();
		for (int h = 0; h < 2; h++) {
			__m512i v = _mm512_loadu_si512(wb + 64 * h);
			__m256i qh = _mm256_loadu_si256((const __m256i *)(wb + 128 + 32 * h));
			__m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
			__m512i lo = _mm512_or_si512(_mm512_and_si512(v, m4), _mm512_and_si512(_mm512_slli_epi16(qh2, 4), m30));
			__m512i hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), _mm512_and_si512(qh2, m30));
			__m512i slo = _mm512_permutexvar_epi16(idx[2 * h], sc), shi = _mm512_permutexvar_epi16(idx[2 * h + 1], sc);
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES + 128 * h;
				isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(lo, _mm512_load_si512(xp)), slo);
				isum[i] = _mm512_dpwssd_epi32(isum[i], _mm512_maddubs_epi16(hi, _mm512_load_si512(xp + 64)), shi);
			}
		}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES;
			float dx;
			memcpy(&dx, xp + XK_D, 4);
			__m256i corr = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(xp + XK_BSUMS)), sc16);
			__m512i sum = _mm512_sub_epi32(isum[i], _mm512_zextsi256_si512(_mm256_slli_epi32(corr, 5)));
			acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(d * dx), acc[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(acc[i]);
}
MM_DRIVER(folio_mm_q6_k_avx512, q6_k_row, AVX512, XT)

// cvt16 widens 16 halves (or with bf bfloat16s) to float32: a masked load
// of the elements m keeps, the others zero.
INLINE AVX512 __m512 cvt16(const uint8_t *p, __mmask16 m, int bf) {
	__m256i h = _mm256_maskz_loadu_epi16(m, p);
	return bf ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

// F16 weights, F16 activations (as ggml rounds them), float32 sums (or
// with bf BF16 weights and activations): 32 elements per step in two
// accumulators, then 16, then a masked tail.
INLINE AVX512 void half_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os,
                            int bf) {
	__m512 a0[XT], a1[XT];
	for (int i = 0; i < nx; i++)
		a0[i] = a1[i] = _mm512_setzero_ps();
	int j = 0;
	for (; j + 32 <= k; j += 32) {
		__m512 w0 = cvt16(w + 2 * j, 0xffff, bf), w1 = cvt16(w + 2 * j + 32, 0xffff, bf);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + 2 * j;
			a0[i] = _mm512_fmadd_ps(w0, cvt16(xp, 0xffff, bf), a0[i]);
			a1[i] = _mm512_fmadd_ps(w1, cvt16(xp + 32, 0xffff, bf), a1[i]);
		}
	}
	for (; j < k; j += 16) {
		__mmask16 m = k - j >= 16 ? 0xffff : (__mmask16)((1u << (k - j)) - 1);
		__m512 w0 = cvt16(w + 2 * j, m, bf);
		for (int i = 0; i < nx; i++)
			a0[i] = _mm512_fmadd_ps(w0, cvt16(x + i * xs + 2 * j, m, bf), a0[i]);
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = _mm512_reduce_add_ps(_mm512_add_ps(a0[i], a1[i]));
}

INLINE AVX512 void f16_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	half_row(w, k, x, xs, nx, out, os, 0);
}

INLINE AVX512 void bf16_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	half_row(w, k, x, xs, nx, out, os, 1);
}
MM_DRIVER(folio_mm_bf16_avx512, bf16_row, AVX512, XT)
MM_DRIVER(folio_mm_f16_avx512, f16_row, AVX512, XT)
