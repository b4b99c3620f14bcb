// Shared by the attention kernels (simd_attn.c, simd_attn_avx2.c,
// simd_attn_avx512.c); see
// simd_attn.c for what they compute and how K/V is laid out.
#ifndef FOLIO_SIMD_ATTN_H
#define FOLIO_SIMD_ATTN_H

#include <math.h>

#include "simd.h"

// UNROLL unrolls a loop over a tile's registers before gcc places the
// tile's arrays: without it, it keeps some in memory and stores them on
// every step of the loop around them.
#define UNROLL _Pragma("GCC unroll 16")

// A unit reads positions lo … pos0+nr-1 (lo = 0 unless there is a
// window); with win > 0 a query at position p reads p-win+1 … p only,
// with cap > 0 its scores are cap·tanh(q·k/cap)·scale, and with sinks (not
// NULL) query head j of the unit's g has a sink logit sinks[j].
#define ATTN_ARGS                                                                                           \
	const float *q, int64_t qstride, int nr, int g, int d, const void *kl, const void *vl, int kt,           \
		const int32_t *blocks, int bs, int kvheads, int h, int pos0, int lo, int win, float scale, float cap, \
		const float *sinks, float *out, float *scratch

static inline int64_t kv_at(const int32_t *blocks, int bs, int kvheads, int h, int d, int p) {
	return (((int64_t)blocks[p / bs] * kvheads + h) * bs + p % bs) * d;
}

// prefetch_rows_to is prefetch_rows into L2 (l2) or L1: a block of rows
// that a kernel reads only after some tens of microseconds of work would
// be evicted from L1 by then.
static inline void prefetch_rows_to(int l2, const void *base, int kt, const int32_t *blocks, int bs, int kvheads,
                                    int h, int d, int p0, int p1, int o0, int o1) {
#define PF(a) (l2 ? _mm_prefetch((a), _MM_HINT_T1) : _mm_prefetch((a), _MM_HINT_T0))
	// the row's bytes, and those of elements o0 … o1-1 in it (for Q8_0,
	// their blocks'), rows starting at a multiple of 32 elements
	int esz = kt == KV_F32 ? 4 : 2;
	int64_t rb = (int64_t)d * esz, b0 = (int64_t)o0 * esz, b1 = (int64_t)o1 * esz - 1;
	if (kt == KV_Q8)
		rb = d / 32 * Q8_0_BYTES, b0 = o0 / 32 * Q8_0_BYTES, b1 = (o1 - 1) / 32 * Q8_0_BYTES + Q8_0_BYTES - 1;
	for (int p = p0; p < p1;) {
		int e = (p / bs + 1) * bs;
		e = e < p1 ? e : p1;
		const char *a = (const char *)base + kv_at(blocks, bs, kvheads, h, d, p) / d * rb;
		if (b0 == 0 && b1 == rb - 1) { // whole rows: one run of the block, each line once
			for (int64_t o = 0; o < (e - p) * rb; o += 64)
				PF(a + o);
		} else {
			for (int64_t r = 0; r < e - p; r++)
				for (int64_t o = b0; o <= b1; o += 64)
					PF(a + r * rb + o);
		}
		PF(a + (e - p - 1) * rb + b1);
		p = e;
	}
}
#undef PF

// prefetch_rows asks L1 for elements o0 … o1-1 of the rows p0 … p1-1 of
// head h of a layer's K or V (of kind kt). A decode unit reads each
// row once, from blocks spread over the pool, where the hardware
// prefetchers find a block only after missing on it; decode therefore asks
// for rows kAhead (K) or vAhead (V) positions before it reads them.
static inline void prefetch_rows(const void *base, int kt, const int32_t *blocks, int bs, int kvheads, int h, int d,
                                 int p0, int p1, int o0, int o1) {
	prefetch_rows_to(0, base, kt, blocks, bs, kvheads, h, d, p0, p1, o0, o1);
}

enum { kAhead = 64, vAhead = 64 };

// attnKB is the positions of a block of the flash kernels' online softmax
// (attention_simd.go's attnKB, which sizes their scratch): blocks start at
// its multiples, a multiple of the positions their score tiles take at a
// time (4, 6 and 12 for AVX2; 8, 12 and 24 for AVX-512).
enum { attnKB = 48 };

static inline AVX512 __mmask16 tail16(int left) { return left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1); }

// q8x16_512 decodes elements e … e+15 (e a multiple of 16) of a Q8_0
// layer.
static inline AVX512 __m512 q8x16_512(const void *base, int64_t e) {
	const uint8_t *blk = (const uint8_t *)base + (e >> 5) * Q8_0_BYTES;
	uint16_t h;
	memcpy(&h, blk, 2);
	__m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2 + (e & 31)))));
	return _mm512_mul_ps(q, _mm512_set1_ps(_cvtsh_ss(h)));
}

// transpose16 turns 16 rows of 16 floats into 16 columns: r[c] lane i
// becomes row i's element c.
INLINE AVX512 void transpose16(__m512 r[16]) {
	__m512 t[16];
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) {
		__m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
		__m512d c = _mm512_castps_pd(t[i + 2]), e = _mm512_castps_pd(t[i + 3]);
		r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));     // elements 4L of rows i…i+3
		r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c)); // 4L+1
		r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, e)); // 4L+2
		r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, e)); // 4L+3
	}
	for (int k = 0; k < 4; k++) { // rows 0-7 and 8-15, 128-bit lanes 0,2 and 1,3
		t[k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0x88);
		t[4 + k] = _mm512_shuffle_f32x4(r[k], r[4 + k], 0xdd);
		t[8 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0x88);
		t[12 + k] = _mm512_shuffle_f32x4(r[8 + k], r[12 + k], 0xdd);
	}
	for (int k = 0; k < 4; k++) {
		r[k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0x88);           // elements 0-3
		r[4 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0x88);  // 4-7
		r[8 + k] = _mm512_shuffle_f32x4(t[k], t[8 + k], 0xdd);       // 8-11
		r[12 + k] = _mm512_shuffle_f32x4(t[4 + k], t[12 + k], 0xdd); // 12-15
	}
}

// load_qt transposes the queries into qt[j·nqp + qi], zero past nq.
static inline void load_qt(const float *q, int64_t qstride, int nr, int g, int d, float *qt, int nqp) {
	memset(qt, 0, sizeof(float) * d * nqp);
	for (int qi = 0; qi < nr * g; qi++) {
		const float *src = q + (qi / g) * qstride + (qi % g) * d;
		for (int j = 0; j < d; j++)
			qt[j * nqp + qi] = src[j];
	}
}

// softcap_scores caps the n scores of S (raw q·k): S = cap·tanh(S/cap)·scale,
// each step rounded to float as the Go kernel (softcapGo, then the scale)
// and ggml's scale, tanh, scale do it.
static inline void softcap_scores(float *S, int64_t n, float cap, float scale) {
	float inv = 1.f / cap;
	for (int64_t i = 0; i < n; i++) {
		float t = (float)tanh((double)(S[i] * inv));
		S[i] = t * cap * scale;
	}
}

// sink_of is the sink logit of query qi of a unit with g query heads:
// -inf (none) without sinks or for a lane past the nq queries.
static inline float sink_of(const float *sinks, int qi, int nq, int g) {
	return sinks && qi < nq ? sinks[qi % g] : -__builtin_inff();
}

// folio_attn_avx2 is the AVX2 kernel of one unit (simd_attn_avx2.c).
void folio_attn_avx2(ATTN_ARGS);

// folio_attn_avx512 is the AVX-512 kernel of a unit of many queries
// (simd_attn_avx512.c); simd_attn.c's attn1_avx512 does single rows.
void folio_attn_avx512(ATTN_ARGS);

// folio_attn_bf16 is the avx512bf16 level's kernel of a unit over a half
// or Q8_0 cache, decode rows included (simd_attn_bf16.c).
void folio_attn_bf16(ATTN_ARGS);

// folio_attn_amx is the amx level's kernel of a unit over a half or Q8_0
// cache, decode rows included (simd_attn_amx.c).
void folio_attn_amx(ATTN_ARGS);

#endif
