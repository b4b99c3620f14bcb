//go:build amd64 && cgo

// The packed Q4_0, Q5_0, Q4_K, Q5_K, Q6_K and Q8_0 kernels at AVX2 (simd_packed256.h),
// and the kinds of AVX2 alone (AVX2_KINDS): IQ4_XS on XK activations, Q8_0
// and IQ4_NL on X8P without its bias.
// Without VNNI, vpmaddubsw sums pairs of q·x into int16 (at most 2·15·127
// = 3810 for 4-bit quants), eight steps of them add up without overflow
// (30480), and vpmaddwd turns them into int32. Q8_0 takes the sign trick
// of the unpacked kernel (simd_avx2.c) on a lane's four quants, |w|
// against x with w's signs, the activations' bias taken off before the
// broadcast; a pair can reach 2·128·127, so each step's pairs go to int32
// at once. MXFP4's small values need no sign trick (SMALL_Q8).

#include "simd.h"

#define LVL AVX2
#define PM256 folio_pm256_avx2
#define SMALL_Q8 1
#define AVX2_KINDS 1
#define HI_SHUFFLE 0

// A chain is one vector of int16 pair sums, a register at each step
// (keep): GCC would otherwise reassociate the sums into trees whose many
// partial sums spill to the stack.
typedef __m256i dacc;
#define keep(v) __asm__("" : "+x"(v))

INLINE AVX2 dacc dot_zero(void) { return _mm256_setzero_si256(); }
INLINE AVX2 __m256i dot_first(__m256i a0, __m256i u, __m256i s) {
	(void)a0;
	return _mm256_maddubs_epi16(u, s);
}
INLINE AVX2 __m256i dot_next(__m256i a, __m256i u, __m256i s) { return _mm256_add_epi16(a, _mm256_maddubs_epi16(u, s)); }
INLINE AVX2 __m256i dot_first2(__m256i a0, __m256i u, __m256i s, __m256i u2, __m256i s2) {
	(void)a0;
	return _mm256_add_epi16(_mm256_maddubs_epi16(u, s), _mm256_maddubs_epi16(u2, s2));
}
INLINE AVX2 __m256i dot_next2(__m256i a, __m256i u, __m256i s, __m256i u2, __m256i s2) {
	return _mm256_add_epi16(a, _mm256_add_epi16(_mm256_maddubs_epi16(u, s), _mm256_maddubs_epi16(u2, s2)));
}
INLINE AVX2 __m256i dot_end(__m256i a, __m256i a0) { return _mm256_add_epi32(a0, _mm256_madd_epi16(a, _mm256_set1_epi16(1))); }
// vpmaddwd by (scale, scale) pairs takes a chain's int16 sums to int32
// times the scale.
INLINE AVX2 __m256i dot_scale(__m256i sc) { return _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16)); }
INLINE AVX2 __m256i dot_scaled(__m256i i, __m256i a, __m256i sc) {
	return _mm256_add_epi32(i, _mm256_madd_epi16(a, sc));
}

INLINE AVX2 __m256i q8_w(__m256i q) { return _mm256_sign_epi8(q, q); }
// q8_x broadcasts the four activation bytes at p without their bias: a
// load's broadcast and a vpxor (the bias taken off a general register
// first cost a vmovd and a vpbroadcastd from it besides).
INLINE AVX2 __m256i q8_x(const uint8_t *p, int kind) {
	__m256i x = _mm256_broadcastd_epi32(_mm_loadu_si32(p));
	return x8s(kind) ? x : _mm256_xor_si256(x, _mm256_set1_epi8((char)0x80));
}
INLINE AVX2 __m256i q8_dot(__m256i s, int u, __m256i a, __m256i q, __m256i x) {
	__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(x, q)), _mm256_set1_epi16(1));
	return u ? _mm256_add_epi32(s, p) : p;
}
INLINE AVX2 __m256i q8_bias(__m256i b, int u, __m256i q) {
	(void)u, (void)q;
	return b;
}
INLINE AVX2 __m256i q8_end(__m256i s, __m256i b) {
	(void)b;
	return s;
}

// madd16 adds the int16 pairs of a, each times sc's, into i's int32 lanes.
INLINE AVX2 __m256i madd16(__m256i i, __m256i a, __m256i sc) { return _mm256_add_epi32(i, _mm256_madd_epi16(a, sc)); }

#include "simd_packed256.h"
