// MXFP4 weights (ggml's block_mxfp4) for the matmul kernels, on X8P
// activations as Q8_0's: a block's 32 4-bit codes become int8 values by a
// byte shuffle from the table of doubled E2M1 values (ggml's
// kvalues_mxfp4, |v| ≤ 12), and from there the dot product is Q8_0's. The
// block's scale is the power of two e8m0_half(e), exact, so each block's
// sum is scaled in float32 as ggml's ggml_vec_dot_mxfp4_q8_0 scales it.
// Included by the x86 kernels (simd_mxfp4.c, simd_rows256.h, simd_packed*).

// The 16 E2M1 codes, doubled (gguf.MXFP4Values).
#define MXFP4_TABLE 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
// The 16 IQ4_NL levels (gguf.IQ4NLValues), for the packed IQ4_NL and
// IQ4_XS kernels' byte shuffles.
#define IQ4NL_TABLE -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113

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
