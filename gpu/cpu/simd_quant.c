//go:build amd64 && cgo

// CPU detection, the entry points Go calls, and the activation quantizers.
// The quantizers need no more than AVX2, so every SIMD level uses them.

#include "simd.h"

int folio_cpu_level(void) {
	__builtin_cpu_init();
	int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
	if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512vnni"))
		// The amx kernels use AVX-512 BF16 too (simd_attn_bf16.h).
		return !__builtin_cpu_supports("avx512bf16") ? LEVEL_AVX512 : folio_amx_usable() ? LEVEL_AMX : LEVEL_AVX512BF16;
	if (avx2 && __builtin_cpu_supports("avxvnni"))
		return LEVEL_AVXVNNI;
	return avx2 ? LEVEL_AVX2 : LEVEL_SCALAR;
}

// folio_matmul: dst[i*dstride + r] = w row r · x row i for r < rows, i < nx,
// at SIMD level level (AVX2, AVX-VNNI or AVX-512). AVX-VNNI has kernels
// of its own where vpdpbusd or vpdpwssd shortens AVX2's (simd_vnni.c).
void folio_matmul(int kind, int level, MM_ARGS) {
	// MXFP4, Q5_0, Q5_K, Q3_K, Q2_K, IQ4_NL, IQ4_XS, Q4_1 and Q5_1 have
	// packed kernels only (repack.go)
	static void (*const fns[3][18])(MM_ARGS) = {
		{folio_mm_q8_0_avx2, folio_mm_q4_0_avx2, folio_mm_q4_k_avx2, folio_mm_q6_k_avx2, folio_mm_f16_avx2,
		 0, 0, 0, folio_mm_bf16_avx2, 0, 0, 0, 0, [KIND_Q8_0S] = folio_mm_q8_0s_avx2},
		{folio_mm_q8_0_avx2, folio_mm_q4_0_avx2, folio_mm_q4_k_avx2, folio_mm_q6_k_vnni, folio_mm_f16_avx2,
		 0, 0, 0, folio_mm_bf16_avx2, 0, 0, 0, 0},
		{folio_mm_q8_0_avx512, folio_mm_q4_0_avx512, folio_mm_q4_k_avx512, folio_mm_q6_k_avx512, folio_mm_f16_avx512,
		 0, 0, 0, folio_mm_bf16_avx512, 0, 0, 0, 0},
	};
	fns[level == LEVEL_AVX512 ? 2 : level == LEVEL_AVXVNNI][kind](w, wstride, rows, x, xstride, nx, k, dst, dstride);
}

static inline AVX2 float hmax8(__m256 v) {
	__m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	m = _mm_max_ps(m, _mm_movehl_ps(m, m));
	m = _mm_max_ss(m, _mm_movehdup_ps(m));
	return _mm_cvtss_f32(m);
}

static inline AVX2 int hsum8i(__m256i v) {
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
	s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
	return _mm_cvtsi128_si32(s);
}

static inline AVX2 __m256 abs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// pack32 narrows four vectors of 8 int32 (each within int8) to 32 bytes in
// order.
static inline AVX2 __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d) {
	__m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
	return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(ab, cd), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// quant32 quantizes 32 floats as ggml's quantize_row_q8_0 does on x86: d =
// amax/127 stored as a half, quants x·(127/amax) rounded to nearest even.
// It returns the half's value and stores the quants and their sum.
static inline AVX2 float quant32(const float *x, int8_t q[32], int *sum) {
	__m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
	__m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
	float amax = hmax8(_mm256_max_ps(_mm256_max_ps(abs8(v0), abs8(v1)), _mm256_max_ps(abs8(v2), abs8(v3))));
	float d = amax / 127.f;
	__m256 id = _mm256_set1_ps(amax != 0.f ? 127.f / amax : 0.f);
	__m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(v0, id)), i1 = _mm256_cvtps_epi32(_mm256_mul_ps(v1, id));
	__m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(v2, id)), i3 = _mm256_cvtps_epi32(_mm256_mul_ps(v3, id));
	*sum = hsum8i(_mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3)));
	_mm256_storeu_si256((__m256i *)q, pack32(i0, i1, i2, i3));
	return _cvtsh_ss(_cvtss_sh(d, 0));
}

// quant_x8p stores the quants xor'd with bias: 0x80 makes them the
// unsigned side vpdpbusd wants (simd.h), 0 leaves them int8 (x8s kinds).
static AVX2 void quant_x8p(const float *x, int k, uint8_t *out, uint8_t bias) {
	int nb = k / 32;
	for (int b = 0; b < nb; b++) {
		uint8_t *p = out + (b / 2) * X8P_BYTES;
		int h = b % 2, sum;
		float d = quant32(x + 32 * b, (int8_t *)p + 32 * h, &sum);
		__m256i *q = (__m256i *)(p + 32 * h);
		_mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), _mm256_set1_epi8((char)bias)));
		_mm256_storeu_ps((float *)(p + 64) + 8 * h, _mm256_set1_ps(d));
	}
	if (nb % 2) {
		uint8_t *p = out + (nb / 2) * X8P_BYTES;
		memset(p + 32, bias, 32);
		memset(p + 96, 0, 32);
	}
}

static AVX2 void quant_x4g(const float *x, int k, uint8_t *out) {
	int nb = k / 32;
	for (int b = 0; b < nb; b++) {
		uint8_t *g = out + (b / 4) * X4G_BYTES;
		int j = b % 4, sum;
		int8_t q[32];
		float d = quant32(x + 32 * b, q, &sum);
		memcpy(g + 16 * j, q, 16);
		memcpy(g + 64 + 16 * j, q + 16, 16);
		_mm_storeu_ps((float *)(g + 128) + 4 * j, _mm_set1_ps(d));
		_mm_storeu_si128((__m128i *)(g + 192) + j, _mm_setr_epi32(-8 * sum, 0, 0, 0));
	}
	x4g_pad(out, nb);
}

// quant_xk quantizes 256-element super-blocks as ggml's quantize_row_q8_K:
// the element of largest magnitude (the first, on ties), max, maps to
// -127; quants are nearest_int(x·(-127/max)) capped at 127; d = 1/iscale.
static AVX2 void quant_xk(const float *x, int k, uint8_t *out) {
	for (int s = 0; s < k / 256; s++, x += 256, out += XK_BYTES) {
		__m256 m = _mm256_setzero_ps();
		for (int j = 0; j < 256; j += 8)
			m = _mm256_max_ps(m, abs8(_mm256_loadu_ps(x + j)));
		float amax = hmax8(m);
		if (amax == 0.f) {
			memset(out, 0, XK_BYTES);
			continue;
		}
		float iscale = -127.f / xk_max(x, amax);
		__m256 is = _mm256_set1_ps(iscale);
		__m256i cap = _mm256_set1_epi32(127);
		int16_t *bsums = (int16_t *)(out + XK_BSUMS);
		for (int j = 0; j < 256; j += 32) {
			__m256i i[4];
			for (int t = 0; t < 4; t++)
				i[t] = _mm256_min_epi32(cap, _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + j + 8 * t), is)));
			bsums[j / 16] = (int16_t)hsum8i(_mm256_add_epi32(i[0], i[1]));
			bsums[j / 16 + 1] = (int16_t)hsum8i(_mm256_add_epi32(i[2], i[3]));
			_mm256_storeu_si256((__m256i *)(out + j), pack32(i[0], i[1], i[2], i[3]));
		}
		xk_close(out, iscale);
	}
}

static AVX2 void quant_f16(const float *x, int k, uint8_t *out) {
	int j = 0;
	for (; j + 8 <= k; j += 8)
		_mm_storeu_si128((__m128i *)(out + 2 * j), _mm256_cvtps_ph(_mm256_loadu_ps(x + j), 0));
	for (; j < k; j++) {
		uint16_t h = _cvtss_sh(x[j], 0);
		memcpy(out + 2 * j, &h, 2);
	}
	memset(out + 2 * k, 0, ((2 * k + 63) & ~63) - 2 * k);
}

// bf16_round8 rounds 8 floats' bits u to bfloat16 as f2b does, each in
// the low half of its lane.
static inline AVX2 __m256i bf16_round8(__m256i u) {
	__m256i r = _mm256_srli_epi32(
	    _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(_mm256_srli_epi32(u, 16),
	                                                                                     _mm256_set1_epi32(1)))),
	    16);
	__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
	return _mm256_blendv_epi8(r, _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(64)), nan);
}

static AVX2 void quant_bf16(const float *x, int k, uint8_t *out) {
	int j = 0;
	for (; j + 16 <= k; j += 16) {
		__m256i a = bf16_round8(_mm256_loadu_si256((const __m256i *)(x + j)));
		__m256i b = bf16_round8(_mm256_loadu_si256((const __m256i *)(x + j + 8)));
		_mm256_storeu_si256((__m256i *)(out + 2 * j), _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8));
	}
	quant_bf16_tail(x, j, k, out);
}

// folio_quantize writes n rows of x (k floats each, xstride apart) in the
// activation format of kind, ostride bytes apart.
void folio_quantize(int kind, const float *x, int64_t xstride, int n, int k, uint8_t *out, int64_t ostride) {
	quantize_rows(kind, x, xstride, n, k, out, ostride, quant_x8p, quant_x4g, quant_xk, quant_f16, quant_bf16);
}

// folio_read_sum reads n bytes (a multiple of 128) from p, 32-byte
// aligned, and returns a sum of them that the compiler cannot skip: the
// memory bandwidth benchmark.
AVX2 uint64_t folio_read_sum(const uint8_t *p, int64_t n) {
	__m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
	for (int64_t i = 0; i < n; i += 128) {
		a0 = _mm256_add_epi64(a0, _mm256_load_si256((const __m256i *)(p + i)));
		a1 = _mm256_add_epi64(a1, _mm256_load_si256((const __m256i *)(p + i + 32)));
		a2 = _mm256_add_epi64(a2, _mm256_load_si256((const __m256i *)(p + i + 64)));
		a3 = _mm256_add_epi64(a3, _mm256_load_si256((const __m256i *)(p + i + 96)));
	}
	__m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
	uint64_t out[4];
	_mm256_storeu_si256((__m256i *)out, s);
	return out[0] + out[1] + out[2] + out[3];
}
