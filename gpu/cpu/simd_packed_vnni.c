//go:build amd64 && cgo

// The packed Q4_0, Q4_K and Q8_0 kernels at AVX-VNNI (simd_packed256.h):
// the VEX vpdpbusd adds four products of unsigned × signed bytes into each
// int32 lane, one instruction where AVX2 takes vpmaddubsw, vpaddw and a
// share of vpmaddwd. As at AVX-512, Q8_0's activations (biased by 128) are
// the unsigned side and its weights the signed one, each sum less 128·Σw.

#include "simd.h"

#define LVL AVXVNNI
#define PM256 folio_pm256_vnni

INLINE AVXVNNI __m256i dot_first(__m256i a0, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(a0, u, s); }
INLINE AVXVNNI __m256i dot_next(__m256i a, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(a, u, s); }
INLINE AVXVNNI __m256i dot_first2(__m256i a0, __m256i u, __m256i s, __m256i u2, __m256i s2) {
	return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(a0, u, s), u2, s2);
}
INLINE AVXVNNI __m256i dot_next2(__m256i a, __m256i u, __m256i s, __m256i u2, __m256i s2) {
	return _mm256_dpbusd_avx_epi32(_mm256_dpbusd_avx_epi32(a, u, s), u2, s2);
}
INLINE AVXVNNI __m256i dot_end(__m256i a, __m256i a0) {
	(void)a0;
	return a;
}
INLINE AVXVNNI __m256i dot_scale(__m256i sc) { return sc; }
INLINE AVXVNNI __m256i dot_scaled(__m256i a, __m256i sc) { return _mm256_mullo_epi32(a, sc); }

INLINE AVXVNNI __m256i q8_w(__m256i q) { return q; }
INLINE uint32_t q8_x(uint32_t v) { return v; }
INLINE AVXVNNI __m256i q8_dot(__m256i s, int u, __m256i a, __m256i q, __m256i x) {
	(void)q;
	return _mm256_dpbusd_avx_epi32(u ? s : _mm256_setzero_si256(), x, a);
}
INLINE AVXVNNI __m256i q8_bias(__m256i b, int u, __m256i q) {
	return _mm256_dpbusd_avx_epi32(u ? b : _mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), q);
}
INLINE AVXVNNI __m256i q8_end(__m256i s, __m256i b) { return _mm256_sub_epi32(s, b); }

#include "simd_packed256.h"
