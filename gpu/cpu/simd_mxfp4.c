//go:build amd64 && cgo

// MXFP4 matmul kernels (AVX2 and AVX-512), on X8P activations as Q8_0's:
// a block's 32 4-bit codes become int8 values by a byte shuffle from the
// table of doubled E2M1 values (ggml's kvalues_mxfp4, |v| ≤ 12), and from
// there the dot product is Q8_0's. The block's scale is the power of two
// e8m0_half(e), exact, so each block's sum is scaled in float32 as ggml's
// ggml_vec_dot_mxfp4_q8_0 scales it.

#include "simd.h"

// The 16 E2M1 codes, doubled (gguf.MXFP4Values).
#define MXFP4_TABLE 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12

// e8m0_half is 2^(e-128), as gguf.E8M0Half: subnormal for e < 2.
static inline float e8m0_half(uint8_t e) {
	uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

// mxfp4_codes decodes the 16 code bytes at qs to the block's 32 int8
// values, elements 0-15 (low nibbles) in the low lane.
static inline AVX2 __m256i mxfp4_codes(const uint8_t *qs) {
	const __m256i table = _mm256_setr_epi8(MXFP4_TABLE, MXFP4_TABLE);
	const __m128i m4 = _mm_set1_epi8(0x0f);
	__m128i q = _mm_loadu_si128((const __m128i *)qs);
	__m256i nib = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m4), _mm_and_si128(q, m4));
	return _mm256_shuffle_epi8(table, nib);
}

static inline AVX2 float hsum8_mx(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

// AVX2: one block per step, |w| against x with w's signs as Q8_0's kernel
// does (vpmaddubsw's unsigned side is |w| ≤ 12: no int16 saturation).
INLINE AVX2 void mxfp4_row2(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const __m256i ones = _mm256_set1_epi16(1);
	__m256 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm256_setzero_ps();
	for (int b = 0; b < k / 32; b++) {
		const uint8_t *wb = w + (int64_t)b * MXFP4_BYTES;
		__m256i wq = mxfp4_codes(wb + 1);
		__m256i aw = _mm256_sign_epi8(wq, wq);
		float dw = e8m0_half(wb[0]);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + (int64_t)(b / 2) * X8P_BYTES + 32 * (b % 2);
			__m256i xq = _mm256_xor_si256(_mm256_load_si256((const __m256i *)xp), _mm256_set1_epi8((char)0x80));
			__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(xq, wq)), ones);
			float dx;
			memcpy(&dx, xp + 64, 4);
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(dw * dx), acc[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = hsum8_mx(acc[i]);
}
MM_DRIVER(folio_mm_mxfp4_avx2, mxfp4_row2, AVX2, 4)

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
