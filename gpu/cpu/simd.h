// Shared by the cgo kernels of package cpu (simd_*.c). The layouts of the
// quantized activation rows are described in xquant.go, which sizes them;
// the offsets below must agree with it (TestQuantizeX checks the bytes).
// The x86 kernels' part is under __x86_64__; the rest serves arm64's
// (simd_neon*.c) too: the enums, sizes, the scalar steps of the quantizers
// and MM_DRIVER.
#ifndef FOLIO_SIMD_H
#define FOLIO_SIMD_H

#include <stdint.h>
#include <string.h>
#ifdef __x86_64__
#include <immintrin.h>
#endif

// INLINE marks the helpers that must be inlined into their callers (whose
// target they then take).
#define INLINE static inline __attribute__((always_inline))

// b2f reads the little-endian bfloat16 at p: its bits are a float32's top
// half.
static inline float b2f(const uint8_t *p) {
	uint32_t u = (uint32_t)(p[0] | p[1] << 8) << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// iq4_xs_scale is the 6-bit scale of sub-block ib of the IQ4_XS block at
// wb, less 32 (gguf.IQ4XSScale).
static inline int iq4_xs_scale(const uint8_t *wb, int ib) {
	int h = wb[2] | wb[3] << 8;
	return ((wb[4 + ib / 2] >> (4 * (ib % 2)) & 15) | (h >> (2 * ib) & 3) << 4) - 32;
}

// f2b rounds v to bfloat16 as ggml's GGML_FP32_TO_BF16 does: to nearest
// even, a NaN quieted.
static inline uint16_t f2b(float v) {
	uint32_t u;
	memcpy(&u, &v, 4);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)(u >> 16 | 64);
	return (uint16_t)((u + (0x7fff + (u >> 16 & 1))) >> 16);
}

// quant_bf16_tail writes x[j … k-1] as bfloat16 at out + 2j and pads the
// row with zeros to 64 bytes.
static inline void quant_bf16_tail(const float *x, int j, int k, uint8_t *out) {
	for (; j < k; j++) {
		uint16_t b = f2b(x[j]);
		memcpy(out + 2 * j, &b, 2);
	}
	memset(out + 2 * k, 0, ((2 * k + 63) & ~63) - 2 * k);
}

// Kernel kinds: the weight type, which also fixes the activation format.
enum { KIND_Q8_0 = 0, KIND_Q4_0 = 1, KIND_Q4_K = 2, KIND_Q6_K = 3, KIND_F16 = 4, KIND_MXFP4 = 5, KIND_Q5_0 = 6, KIND_Q5_K = 7,
       KIND_BF16 = 8, KIND_Q3_K = 9, KIND_Q2_K = 10,
       KIND_IQ4_NL = 11, KIND_IQ4_XS = 12, KIND_Q4_1 = 13, KIND_Q5_1 = 14,
       KIND_IQ4_XSK = 15, // IQ4_XS on XK activations (AVX2)
       KIND_Q8_0S = 16, KIND_IQ4_NLS = 17 }; // Q8_0 and IQ4_NL on X8P without its bias (AVX2: x8s)

// The kinds that run Q8_0's packed kernels on X8P activations: Q8_0 itself
// and, in Q4_0's layout, the 4-bit codes looked up in a table (q80_lut):
// IQ4_NL with halves for scales, IQ4_XS with a half a super-block and an
// int8 a block, MXFP4 with E8M0 bytes (repack.go).
static inline int q80_lut(int kind) { return kind != KIND_Q8_0 && kind != KIND_Q8_0S; }
// x8s reports whether kind's X8P activations are stored without their
// bias (AVX2's Q8_0 and IQ4_NL kernels, whose sign trick wants them
// signed: each step's vpxor saved).
static inline int x8s(int kind) { return kind == KIND_Q8_0S || kind == KIND_IQ4_NLS; }
// Dispatch levels (Go's simdLevel). Go passes LEVEL_AMX to the packed
// matmul and attention only, LEVEL_AVX512BF16 to attention only: their
// other kernels are AVX-512's.
enum {
	LEVEL_SCALAR = 0,
	LEVEL_AVX2 = 1,
	LEVEL_AVXVNNI = 2,
	LEVEL_AVX512 = 3,
	LEVEL_AVX512BF16 = 4,
	LEVEL_AMX = 5,
	LEVEL_NEON = 6,
	LEVEL_I8MM = 7
};

// Kinds of K/V element (KVCache.kvKind): float32s, halves, Q8_0 blocks.
enum { KV_F32 = 0, KV_F16 = 1, KV_Q8 = 2 };

// Weight block sizes (ggml's block_q8_0, block_q4_0, block_q4_K, block_q6_K,
// block_mxfp4).
#define Q8_0_BYTES 34
#define Q4_0_BYTES 18
#define Q4_K_BYTES 144
#define Q6_K_BYTES 210
#define Q3_K_BYTES 110
#define Q2_K_BYTES 84
#define Q5_0_BYTES 22
#define Q4_1_BYTES 20 // half d, half m, qs[16]
#define Q5_1_BYTES 24 // half d, half m, qh[4], qs[16]
#define Q5_K_BYTES 176
#define MXFP4_BYTES 17
#define IQ4_NL_BYTES 18 // ggml's block_iq4_nl: half d, 16 code bytes
#define IQ4_XS_BYTES 136 // block_iq4_xs: half d, scales_h, scales_l[4], qs[128]
_Static_assert(Q8_0_BYTES == 2 + 32, "a Q8_0 block is a half scale and 32 int8 quants");

// Activation formats. X8P: a pair of 32-element blocks (Q8_0 and MXFP4 weights),
// the quants biased by 128 (q ^ 0x80): vpdpbusd's unsigned side.
#define X8P_BYTES 128 // qs[64], then float d[16]: each block's scale 8 times
// X4G: a group of 4 blocks (Q4_0 weights): qs[128] with elements 0-15 of
// blocks 0-3, then elements 16-31 of blocks 0-3; float d[16], each block's
// scale 4 times; int32 bias[16], lane 4j holding -8 * sum(q of block j).
#define X4G_BYTES 256
// XK: a 256-element super-block (K-quants): qs[256], float d at 256, int16
// sums of 32 quants at 260 (packed Q4_K), int16 bsums[16] (sums of 16
// quants) at 288.
#define XK_BYTES 320
#define XK_D 256
#define XK_BS32 260
#define XK_BSUMS 288

// Repacked weights (repack.go): the bytes of a Q4_K super-block of a group
// of 16 rows (Q4_0 and Q8_0 groups keep their quants and scales apart).
#define Q4_KP_BYTES 2368
// ... and of a Q6_K super-block.
#define Q6_KP_BYTES 3392
// ... and of a Q3_K one: its quants' low two bits, their third bits, the
// scales and d, at these offsets (Q6_K's at 0, 2048, 3072, 3328).
#define Q3_KP_BYTES 1856
#define Q3_KP_HI 1024
#define Q3_KP_SC 1536
#define Q3_KP_D 1792
// ... and of a Q2_K one: its quants (Q3_K's low bits), each sub-block's
// scale and min (a byte, as ggml's), d and dmin.
#define Q2_KP_BYTES 1408
#define Q2_KP_SC 1024
#define Q2_KP_D 1280
#define Q2_KP_DMIN 1344
// ... and of a Q5_K one: Q4_K's, then the fifth bits.
#define Q5_KP_BYTES 2880

// q4k_scales unpacks the 12 scale bytes of a Q4_K super-block into its 8
// 6-bit scales (bytes 0-7 of u) and 8 6-bit mins (bytes 8-15), as ggml's
// kernels do with 32-bit words (ggml's get_scale_min_k4 one at a time).
INLINE void q4k_scales(const uint8_t *s, uint32_t u[4]) {
	const uint32_t kmask1 = 0x3f3f3f3f, kmask2 = 0x0f0f0f0f, kmask3 = 0x03030303;
	memcpy(u, s, 12);
	u[3] = ((u[2] >> 4) & kmask2) | (((u[1] >> 6) & kmask3) << 4);
	uint32_t mins03 = u[1] & kmask1;
	u[1] = (u[2] & kmask2) | (((u[0] >> 6) & kmask3) << 4);
	u[2] = mins03;
	u[0] &= kmask1;
}

// ld32 and ldf read the 4 bytes at p (any alignment) as a uint32 or a float.
INLINE uint32_t ld32(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

INLINE float ldf(const uint8_t *p) {
	float v;
	memcpy(&v, p, 4);
	return v;
}

#ifdef __x86_64__
// Every function with intrinsics carries the target of its level, so that
// one binary holds all levels and runs on any x86-64 CPU.
#define AVX2 __attribute__((target("avx2,fma,f16c")))
// AVX-VNNI (Alder Lake and later, Zen 5): the VEX vpdpbusd and vpdpwssd
// on AVX2's 256-bit vectors.
#define AVXVNNI __attribute__((target("avxvnni,avx2,fma,f16c")))
#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c")))

// hsum8 is the sum of v's lanes: halves, then quarters, then pairs (every
// 256-bit kernel's, and AVX-512's on a half vector).
INLINE AVX2 float hsum8(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

// tilecfg is the 64-byte operand of ldtilecfg (palette 1), which AMX
// kernels load by tile_config: gcc 12's _tile_loadconfig does not tell the
// compiler it reads its operand, and at -O2 the stores that fill it were
// dropped.
typedef struct {
	uint8_t palette, start_row, reserved[14];
	uint16_t colsb[16];
	uint8_t rows[16];
} tilecfg;

static inline void tile_config(const tilecfg *c) { __asm__ volatile("ldtilecfg %0" : : "m"(*c)); }

// h2f reads the little-endian half at p.
static inline AVX2 float h2f(const uint8_t *p) {
	uint16_t h;
	memcpy(&h, p, 2);
	return _cvtsh_ss(h);
}

// q8_bias512 returns -128·Σw over a packed Q8_0 block's 16 rows (its
// vectors q): what the activations' bias of 128 adds to each row's sum.
INLINE AVX512 __m512i q8_bias512(const __m512i *q) {
	const __m512i u128 = _mm512_set1_epi8((char)0x80), z = _mm512_setzero_si512();
	__m512i b[4];
	for (int j = 0; j < 4; j++)
		b[j] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(z, u128, q[j]), u128, q[j + 4]);
	return _mm512_sub_epi32(_mm512_sub_epi32(z, _mm512_add_epi32(b[0], b[1])), _mm512_add_epi32(b[2], b[3]));
}

// q4k_finish512 adds a packed Q4_K super-block (at wb) to acc[i] for nx
// XK activation rows (their super-block at xb, xs bytes apart) whose
// integer sums of q·x times the sub-blocks' scales are isum[i]:
// d·dx·isum − dmin·dx·Σ min·Σx, the float steps of the Q4_K kernels at
// avx512 (pq4_k_512) and amx (simd_amx.c) alike.
INLINE AVX512 void q4k_finish512(const uint8_t *wb, const uint8_t *xb, int64_t xs, int nx, const __m512i *isum,
                                 __m512 *acc) {
	__m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)wb));
	__m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wb + 32)));
	__m512i mins[4];
	for (int p = 0; p < 4; p++)
		mins[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(wb + 192 + 32 * p)));
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = xb + i * xs;
		__m512i ms = _mm512_setzero_si512();
		for (int p = 0; p < 4; p++)
			ms = _mm512_dpwssd_epi32(ms, mins[p], _mm512_set1_epi32((int)ld32(xp + XK_BS32 + 4 * p)));
		__m512 dx = _mm512_set1_ps(ldf(xp + XK_D));
		acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, dx), acc[i]);
		acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(dmin, dx), acc[i]);
	}
}

// q4k_scales16 is q4k_scales in a vector.
static inline AVX2 __m128i q4k_scales16(const uint8_t *s) {
	uint32_t u[4];
	q4k_scales(s, u);
	return _mm_loadu_si128((const __m128i *)u);
}
#endif

#define MM_ARGS const uint8_t *w, int64_t wstride, int rows, const uint8_t *x, int64_t xstride, int nx, int k, \
	float *dst, int64_t dstride
#ifdef __x86_64__
void folio_mm_q8_0_avx2(MM_ARGS);
void folio_mm_q8_0s_avx2(MM_ARGS);
void folio_mm_q4_0_avx2(MM_ARGS);
void folio_mm_q4_k_avx2(MM_ARGS);
void folio_mm_q6_k_avx2(MM_ARGS);
void folio_mm_f16_avx2(MM_ARGS);
void folio_mm_q8_0_avx512(MM_ARGS);
void folio_mm_q4_0_avx512(MM_ARGS);
void folio_mm_q4_k_avx512(MM_ARGS);
void folio_mm_q6_k_avx512(MM_ARGS);
void folio_mm_f16_avx512(MM_ARGS);
void folio_mm_bf16_avx2(MM_ARGS);
void folio_mm_bf16_avx512(MM_ARGS);

void folio_mm_q6_k_vnni(MM_ARGS);

#define PM_ARGS const uint8_t *w, int64_t group_bytes, int nb, int rows, const uint8_t *x, int64_t xs, int nx, \
	float *dst, int64_t ds
void folio_matmul_packed(int kind, int level, PM_ARGS);
void folio_pm_f16_512(PM_ARGS);
void folio_pm_bf16_512(PM_ARGS);
void folio_pm_f16_256(PM_ARGS);
void folio_pm_bf16_256(PM_ARGS);
int folio_pm_amx(int kind, PM_ARGS);
int folio_amx_usable(void);
void folio_pm256_avx2(int kind, PM_ARGS);
void folio_pm256_vnni(int kind, PM_ARGS);

#define F32_ARGS const float *w, int64_t ws, int rows, const float *x, int64_t xs, int nx, int k, float *dst, int64_t ds
void folio_matmul_f32(int level, F32_ARGS);
#endif

int folio_cpu_level(void);
void folio_quantize(int kind, const float *x, int64_t xstride, int n, int k, uint8_t *out, int64_t ostride);
void folio_matmul(int kind, int level, MM_ARGS);
uint64_t folio_read_sum(const uint8_t *p, int64_t n);
void folio_rmsnorm(int level, const float *x, const float *w, float *y, int64_t n, int g, float eps);
void folio_add(int level, const float *a, const float *b, float *y, int64_t n, int64_t c, int64_t bstride);
void folio_softmax(int level, float *x, int64_t n, int64_t c);
void folio_silu_mul(int level, const float *gate, const float *up, float *dst, int64_t n);
void folio_gelu_mul(const float *tab, const float *gate, const float *up, float *dst, int64_t n);
void folio_mix_rows(float *dst, const float *base, const float *s0, const float *s1, const float *s2, const float *s3,
                    int k, const float *coefs, int64_t wide, const int32_t *cols, float bias, int64_t rows, int64_t n);
void folio_rope_pairs(const float *cs, float *x, int64_t n, int64_t c, int hd, int dims);
void folio_rope_neox(const float *cs, float *x, int64_t n, int64_t c, int hd, int dims);
int64_t folio_argmax(int level, const float *x, int64_t n);
void folio_write_kv_f16(const float *k, const float *v, int n, const int32_t *slots, uint16_t *kd, uint16_t *vd,
                        int bs, int kvheads, int d);
void folio_write_kv_q8(const float *k, const float *v, int n, const int32_t *slots, uint8_t *kd, uint8_t *vd,
                       int bs, int kvheads, int d);

// The scalar steps of the activation quantizers of both architectures
// (simd_quant.c, simd_neon.c).

// x4g_pad zeroes blocks nb … of an X4G row's last group (k/32 = nb blocks
// leave them empty).
INLINE void x4g_pad(uint8_t *out, int nb) {
	for (int b = nb; b % 4; b++) {
		uint8_t *g = out + (b / 4) * X4G_BYTES;
		int j = b % 4;
		memset(g + 16 * j, 0, 16);
		memset(g + 64 + 16 * j, 0, 16);
		memset(g + 128 + 16 * j, 0, 16);
		memset(g + 192 + 16 * j, 0, 16);
	}
}

// xk_max is the first of an XK super-block's 256 floats whose magnitude
// is amax (> 0): the element that quantize_row_q8_K maps to -127.
INLINE float xk_max(const float *x, float amax) {
	float max = 0;
	for (int j = 0; j < 256; j++) {
		if (__builtin_fabsf(x[j]) == amax) {
			max = x[j];
			break;
		}
	}
	return max;
}

// xk_close ends an XK super-block whose quants and sums of 16 are written:
// its scale d = 1/iscale and its sums of 32.
INLINE void xk_close(uint8_t *out, float iscale) {
	float d = 1.f / iscale;
	memcpy(out + XK_D, &d, 4);
	memset(out + XK_D + 4, 0, XK_BSUMS - XK_D - 4);
	const int16_t *bsums = (const int16_t *)(out + XK_BSUMS);
	int16_t *bs32 = (int16_t *)(out + XK_BS32);
	for (int j = 0; j < 8; j++)
		bs32[j] = (int16_t)(bsums[2 * j] + bsums[2 * j + 1]);
}

// quantize_rows is folio_quantize over an architecture's quantizers of
// one row of k floats into each activation format: n rows of x (xstride
// apart) in kind's format, ostride bytes apart.
// x8p also takes the byte its quants are stored xor'd with: 0x80, or 0
// for the x8s kinds.
typedef void quant_row(const float *x, int k, uint8_t *out);
typedef void quant_row8(const float *x, int k, uint8_t *out, uint8_t bias);
INLINE void quantize_rows(int kind, const float *x, int64_t xstride, int n, int k, uint8_t *out, int64_t ostride,
                          quant_row8 *x8p, quant_row *x4g, quant_row *xk, quant_row *f16, quant_row *bf16) {
	for (int i = 0; i < n; i++, x += xstride, out += ostride) {
		switch (kind) {
		case KIND_Q8_0:
		case KIND_MXFP4:
		case KIND_IQ4_NL:
		case KIND_IQ4_XS:
		case KIND_Q8_0S:
		case KIND_IQ4_NLS:
			x8p(x, k, out, x8s(kind) ? 0 : 0x80);
			break;
		case KIND_Q4_0:
		case KIND_Q5_0:
		case KIND_Q4_1:
		case KIND_Q5_1:
			x4g(x, k, out);
			break;
		case KIND_Q4_K:
		case KIND_Q5_K:
		case KIND_Q6_K:
		case KIND_Q3_K:
		case KIND_Q2_K:
		case KIND_IQ4_XSK:
			xk(x, k, out);
			break;
		case KIND_F16:
			f16(x, k, out);
			break;
		case KIND_BF16:
			bf16(x, k, out);
			break;
		}
	}
}

#ifdef __x86_64__
AVX512 __m512 exp512(__m512 x);
AVX2 __m256 exp256(__m256 x);
#endif
// folio_tile is a tile of attention rows (Go's attnTile is this type): its
// first row of q and out, its row count, the position of that row and where
// its sequence's block table starts in folio_attn.blocks.
typedef struct {
	int32_t row, rows, pos, blocks;
} folio_tile;
_Static_assert(sizeof(folio_tile) == 16, "folio_tile is four int32s");

// folio_attn is what every unit of one folio_attention call shares: the
// tiles, q and out (rows qstride floats apart; g query heads of d elements
// per K/V head, in parts runs of g/parts, a unit each), the layer's K and
// V (kt: KV_*), the block tables, the
// block size, the K/V heads, the scores' scale, the sliding window (0:
// none) and soft-cap (0: none), the sinks (a logit per query head, NULL:
// none; llama.cpp's soft_max with sinks), and a unit's scratch.
typedef struct {
	const folio_tile *tiles;
	const float *q;
	float *out, *scratch;
	const void *kl, *vl;
	const int32_t *blocks;
	const float *sinks;
	int64_t qstride;
	int g, parts, d, kt, bs, kvheads, window;
	float scale, cap;
} folio_attn;
void folio_attention(int level, folio_attn a, int lo, int hi);

// The microkernels take the activation rows in tiles of at most XT: 8
// accumulators (and their temporaries) fit AVX-512's 32 registers; AVX2's 16
// hold 4 (MM_DRIVER's tile).
#define XT 8

// MM_DRIVER defines name(MM_ARGS) over row(w row, k, x tile, xstride, nx,
// out, ostride), which dots one weight row with nx ≤ XT activation rows,
// decoding each weight block once for all of them. The rows are blocked so
// that a run of weight rows (MM_WBLOCK bytes) and a tile of activation
// rows stay in L1 while every pair of them is dotted.
#define MM_WBLOCK 12288
// The weights are mmap'd in 4 KiB pages, which the hardware prefetchers do
// not cross: each row is fetched from MM_PREFETCH bytes ahead by hand.
#define MM_PREFETCH 8192
static inline void mm_prefetch(const uint8_t *p, int64_t n) {
	for (int64_t o = 0; o < n; o += 64)
		__builtin_prefetch(p + o, 0, 3);
}
#define MM_DRIVER(name, row, target, tile)                                                          \
	target void name(MM_ARGS) {                                                                 \
		int rb = wstride < MM_WBLOCK ? (int)(MM_WBLOCK / wstride) : 1;                       \
		mm_prefetch(w, rows * wstride < MM_PREFETCH ? rows * wstride : MM_PREFETCH);          \
		for (int r0 = 0; r0 < rows; r0 += rb) {                                             \
			int r1 = r0 + rb < rows ? r0 + rb : rows;                                   \
			for (int i = 0; i < nx; i += tile) {                                        \
				const uint8_t *xt = x + i * xstride;                                \
				float *dt = dst + i * dstride;                                      \
				int t = nx - i < tile ? nx - i : tile;                              \
				for (int r = r0; r < r1; r++) {                                     \
					const uint8_t *wr = w + r * wstride;                        \
					if (i == 0)                                                 \
						mm_prefetch(wr + MM_PREFETCH, wstride);             \
					switch (t) {                                                \
					case 1: row(wr, k, xt, xstride, 1, dt + r, dstride); break; \
					case 2: row(wr, k, xt, xstride, 2, dt + r, dstride); break; \
					case 3: row(wr, k, xt, xstride, 3, dt + r, dstride); break; \
					case 4: row(wr, k, xt, xstride, 4, dt + r, dstride); break; \
					case 5: row(wr, k, xt, xstride, 5, dt + r, dstride); break; \
					case 6: row(wr, k, xt, xstride, 6, dt + r, dstride); break; \
					case 7: row(wr, k, xt, xstride, 7, dt + r, dstride); break; \
					default: row(wr, k, xt, xstride, 8, dt + r, dstride); break; \
					}                                                           \
				}                                                                   \
			}                                                                           \
		}                                                                                   \
	}

#endif
