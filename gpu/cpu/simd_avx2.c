//go:build amd64 && cgo

// AVX2 (with FMA and F16C) matmul kernels, the same arithmetic as the
// AVX-512 ones on 256-bit vectors: vpmaddubsw (unsigned bytes × signed
// bytes, pairs summed into int16) then vpmaddwd into int32 lanes, scaled
// per block in float32. No product can saturate int16: the unsigned side
// is at most 128 (Q8_0, after the sign trick), 15 (Q4_0, Q4_K) or 63 (Q6_K)
// and the activations lie in [-127, 127].

#include "simd.h"

// The step of simd_rows256.h's kernels at AVX2 (vpmaddwd, then an add).
#define LVL AVX2
#define MM_Q6_K folio_mm_q6_k_avx2
INLINE AVX2 __m256i madd_acc(__m256i acc, __m256i a, __m256i b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
#include "simd_rows256.h"

// dot_u8s8 is the int32 lane sums of u·s, four bytes per lane.
static inline AVX2 __m256i dot_u8s8(__m256i u, __m256i s) {
	return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

// Q8_0 weights, X8P activations, one block per step: |w| against x with
// w's signs (ggml's trick), so the unsigned side is |w| ≤ 128; x's bias
// of 128 comes off first (vpmaddubsw's int16 pairs would saturate with
// it), or with s the activations have none (x8s).
INLINE AVX2 void q80_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os, int s) {
	__m256 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm256_setzero_ps();
	for (int b = 0; b < k / 32; b++) {
		const uint8_t *wb = w + (int64_t)b * Q8_0_BYTES;
		__m256i wq = _mm256_loadu_si256((const __m256i *)(wb + 2));
		__m256i aw = _mm256_sign_epi8(wq, wq);
		float dw = h2f(wb);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + (int64_t)(b / 2) * X8P_BYTES + 32 * (b % 2);
			__m256i xq = _mm256_load_si256((const __m256i *)xp);
			if (!s)
				xq = _mm256_xor_si256(xq, _mm256_set1_epi8((char)0x80));
			__m256i p = dot_u8s8(aw, _mm256_sign_epi8(xq, wq));
			float dx;
			memcpy(&dx, xp + 64, 4);
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * dx), acc[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = hsum8(acc[i]);
}
INLINE AVX2 void q8_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	q80_row(w, k, x, xs, nx, out, os, 0);
}
INLINE AVX2 void q8_0s_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	q80_row(w, k, x, xs, nx, out, os, 1);
}
MM_DRIVER(folio_mm_q8_0_avx2, q8_0_row, AVX2, 4)
MM_DRIVER(folio_mm_q8_0s_avx2, q8_0s_row, AVX2, 4)

// Q4_0 weights, X4G activations, two blocks per step (half a group); a
// missing second block of an odd count counts as zero.
INLINE AVX2 void q4_0_pair(const uint8_t *b0, int two, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m256i pair = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
	const uint8_t *b1 = b0 + Q4_0_BYTES;
	uint16_t h0, h1 = 0;
	memcpy(&h0, b0, 2);
	__m128i v1 = _mm_setzero_si128();
	if (two) {
		v1 = _mm_loadu_si128((const __m128i *)(b1 + 2));
		memcpy(&h1, b1, 2);
	}
	__m256i v = _mm256_set_m128i(v1, _mm_loadu_si128((const __m128i *)(b0 + 2)));
	__m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
	__m256 dw = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi32_si128(h0 | (uint32_t)h1 << 16))), pair);
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = x + i * xs;
		__m256i p = _mm256_add_epi32(dot_u8s8(lo, _mm256_load_si256((const __m256i *)xp)),
		                             dot_u8s8(hi, _mm256_load_si256((const __m256i *)(xp + 64))));
		p = _mm256_add_epi32(p, _mm256_load_si256((const __m256i *)(xp + 192)));
		acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dw, _mm256_load_ps((const float *)(xp + 128))), acc[i]);
	}
}

INLINE AVX2 void q4_0_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	__m256 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm256_setzero_ps();
	int nb = k / 32;
	for (int b = 0; b < nb; b += 2) { // blocks b and b+1: half hh of group b/4
		const uint8_t *xg = x + (int64_t)(b / 4) * X4G_BYTES + 32 * (b % 4 / 2);
		if (b + 2 <= nb)
			q4_0_pair(w + (int64_t)b * Q4_0_BYTES, 1, xg, xs, nx, acc);
		else
			q4_0_pair(w + (int64_t)b * Q4_0_BYTES, 0, xg, xs, nx, acc);
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = hsum8(acc[i]);
}
MM_DRIVER(folio_mm_q4_0_avx2, q4_0_row, AVX2, 4)

// Q4_K weights, XK activations: per 64 elements, the low and high nibbles
// of 32 bytes, each sub-block's pair sums multiplied by its scale in
// vpmaddwd.
INLINE AVX2 void q4_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	__m256 accf[XT], accm[XT];
	for (int i = 0; i < nx; i++)
		accf[i] = accm[i] = _mm256_setzero_ps();
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q4_K_BYTES;
		float d = h2f(wb), dmin = h2f(wb + 2);
		__m128i sm = q4k_scales16(wb + 4);
		uint8_t sc[16];
		_mm_storeu_si128((__m128i *)sc, sm);
		__m256i mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm)); // m0 m0 m1 m1 …
		__m256i isum[XT];
		for (int i = 0; i < nx; i++)
			isum[i] = _mm256_setzero_si256();
		for (int p = 0; p < 4; p++) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(wb + 16 + 32 * p));
			__m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
			__m256i s0 = _mm256_set1_epi16(sc[2 * p]), s1 = _mm256_set1_epi16(sc[2 * p + 1]);
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES + 64 * p;
				__m256i a = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_load_si256((const __m256i *)xp)), s0);
				__m256i b = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_load_si256((const __m256i *)(xp + 32))), s1);
				isum[i] = _mm256_add_epi32(isum[i], _mm256_add_epi32(a, b));
			}
		}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES;
			float dx;
			memcpy(&dx, xp + XK_D, 4);
			accf[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_set1_ps(d * dx), accf[i]);
			__m256i mm = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(xp + XK_BSUMS)), mins);
			accm[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mm), _mm256_set1_ps(dmin * dx), accm[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = hsum8(accf[i]) - hsum8(accm[i]);
}
MM_DRIVER(folio_mm_q4_k_avx2, q4_k_row, AVX2, 4)

// cvt8 widens 8 halves at p to float32, or with bf 8 bfloat16s (a shift).
INLINE AVX2 __m256 cvt8(const uint8_t *p, int bf) {
	__m128i h = _mm_loadu_si128((const __m128i *)p);
	return bf ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}

// F16 weights, F16 activations, float32 sums (or with bf BF16 weights and
// activations): 16 elements per step in two accumulators, then 8, then
// one at a time.
INLINE AVX2 void half_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os,
                          int bf) {
	__m256 a0[XT], a1[XT];
	for (int i = 0; i < nx; i++)
		a0[i] = a1[i] = _mm256_setzero_ps();
	int j = 0;
	for (; j + 16 <= k; j += 16) {
		__m256 w0 = cvt8(w + 2 * j, bf), w1 = cvt8(w + 2 * j + 16, bf);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + 2 * j;
			a0[i] = _mm256_fmadd_ps(w0, cvt8(xp, bf), a0[i]);
			a1[i] = _mm256_fmadd_ps(w1, cvt8(xp + 16, bf), a1[i]);
		}
	}
	for (; j + 8 <= k; j += 8) {
		__m256 w0 = cvt8(w + 2 * j, bf);
		for (int i = 0; i < nx; i++)
			a0[i] = _mm256_fmadd_ps(w0, cvt8(x + i * xs + 2 * j, bf), a0[i]);
	}
	for (int i = 0; i < nx; i++) {
		float s = hsum8(_mm256_add_ps(a0[i], a1[i]));
		for (int t = j; t < k; t++)
			s += bf ? b2f(w + 2 * t) * b2f(x + i * xs + 2 * t) : h2f(w + 2 * t) * h2f(x + i * xs + 2 * t);
		out[i * os] = s;
	}
}

INLINE AVX2 void f16_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	half_row(w, k, x, xs, nx, out, os, 0);
}

INLINE AVX2 void bf16_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	half_row(w, k, x, xs, nx, out, os, 1);
}
MM_DRIVER(folio_mm_bf16_avx2, bf16_row, AVX2, 4)
MM_DRIVER(folio_mm_f16_avx2, f16_row, AVX2, 4)
