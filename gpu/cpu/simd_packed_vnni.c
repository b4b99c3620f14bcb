//go:build amd64 && cgo

// The packed Q4_0, Q5_0, Q4_K, Q5_K, Q6_K and Q8_0 kernels at AVX-VNNI (simd_packed256.h):
// the VEX vpdpbusd adds four products of unsigned × signed bytes into each
// int32 lane, one instruction where AVX2 takes vpmaddubsw, vpaddw and a
// share of vpmaddwd. As at AVX-512, Q8_0's activations (biased by 128) are
// the unsigned side and its weights the signed one, each sum less 128·Σw.

#include "simd.h"

#define LVL AVXVNNI
#define PM256 folio_pm256_vnni
#define SMALL_Q8 0
#define AVX2_KINDS 0
#define HI_SHUFFLE 1

// A chain is two of int32 sums that its steps take in turn, each step
// adding to the one the step before did not: vpdpbusd's latency (5
// cycles) then holds a tile's chains half as long.
typedef struct {
	__m256i a, b;
} dacc;
#define keep(d) ((void)0)

INLINE AVXVNNI dacc dot_zero(void) { return (dacc){_mm256_setzero_si256(), _mm256_setzero_si256()}; }
INLINE AVXVNNI dacc dot_first(__m256i a0, __m256i u, __m256i s) {
	return (dacc){_mm256_dpbusd_avx_epi32(a0, u, s), _mm256_setzero_si256()};
}
INLINE AVXVNNI dacc dot_next(dacc d, __m256i u, __m256i s) { return (dacc){_mm256_dpbusd_avx_epi32(d.b, u, s), d.a}; }
INLINE AVXVNNI dacc dot_first2(__m256i a0, __m256i u, __m256i s, __m256i u2, __m256i s2) {
	return (dacc){_mm256_dpbusd_avx_epi32(a0, u, s), _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u2, s2)};
}
INLINE AVXVNNI dacc dot_next2(dacc d, __m256i u, __m256i s, __m256i u2, __m256i s2) {
	return (dacc){_mm256_dpbusd_avx_epi32(d.a, u, s), _mm256_dpbusd_avx_epi32(d.b, u2, s2)};
}
INLINE AVXVNNI __m256i dot_end(dacc d, __m256i a0) {
	(void)a0;
	return _mm256_add_epi32(d.a, d.b);
}
// Each of a chain's two sums of 4-bit quants holds at most four steps of
// four products: |sum| ≤ 16·15·127 = 30480, an int16 in its lane's low
// half (the high half its sign). vpdpwssd by the scale (≤ 63, in the low
// half; the high half 0) then adds sum·scale to i, where vpmulld would
// take two µops and an add.
INLINE AVXVNNI __m256i dot_scale(__m256i sc) { return sc; }
INLINE AVXVNNI __m256i dot_scaled(__m256i i, dacc d, __m256i sc) {
	return _mm256_dpwssd_avx_epi32(_mm256_dpwssd_avx_epi32(i, d.a, sc), d.b, sc);
}

INLINE AVXVNNI __m256i q8_w(__m256i q) { return q; }
INLINE AVXVNNI __m256i q8_x(const uint8_t *p, int kind) {
	(void)kind;
	return _mm256_broadcastd_epi32(_mm_loadu_si32(p));
}
INLINE AVXVNNI dacc q8_dot(dacc s, int u, __m256i a, __m256i q, __m256i x) {
	(void)q;
	return u ? dot_next(s, x, a) : dot_first(_mm256_setzero_si256(), x, a);
}
INLINE AVXVNNI dacc q8_bias(dacc b, int u, __m256i q) {
	const __m256i u128 = _mm256_set1_epi8((char)0x80);
	return u ? dot_next(b, u128, q) : dot_first(_mm256_setzero_si256(), u128, q);
}
INLINE AVXVNNI __m256i q8_end(dacc s, dacc b) { return _mm256_sub_epi32(dot_end(s, b.a), dot_end(b, b.a)); }

// madd16 adds the int16 pairs of a, each times sc's, into i's int32 lanes.
INLINE AVXVNNI __m256i madd16(__m256i i, __m256i a, __m256i sc) { return _mm256_dpwssd_avx_epi32(i, a, sc); }

#include "simd_packed256.h"
