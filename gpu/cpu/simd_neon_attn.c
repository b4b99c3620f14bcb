//go:build arm64 && cgo

// Causal paged attention at the NEON level: folio_attention's units as
// simd_attn.c defines them (a tile of nr consecutive rows of one sequence,
// one K/V head h and its g query heads; K/V element layout, windows,
// soft-cap and sinks as there), computed row by row: each K and V row a
// row reads is converted to float32 once for the row's g queries. Every
// query's sums run in one order whatever its tile (a dot over j in 4
// lanes, then over p), so a token's attention is bit for bit the same
// alone (decode) or in a prompt. Scratch holds g·n + 2·d floats, n the
// positions a row reads: within attnScratch's.

#include <arm_neon.h>
#include <math.h>

#include "simd.h"

// kv_row returns row p of head h of a layer's K or V (kind kt) as d
// float32s: in place for float32, else converted into buf.
static const float *kv_row(const void *base, int kt, const int32_t *blocks, int bs, int kvheads, int h, int d, int p,
                           float *buf) {
	int64_t at = (((int64_t)blocks[p / bs] * kvheads + h) * bs + p % bs) * d;
	if (kt == KV_F32)
		return (const float *)base + at;
	if (kt == KV_F16) {
		const __fp16 *s = (const __fp16 *)base + at;
		int j = 0;
		for (; j + 4 <= d; j += 4)
			vst1q_f32(buf + j, vcvt_f32_f16(vld1_f16(s + j)));
		for (; j < d; j++)
			buf[j] = (float)s[j];
		return buf;
	}
	// Q8_0: d is a multiple of 32; quant times scale is exact in float32
	const uint8_t *blk = (const uint8_t *)base + at / 32 * Q8_0_BYTES;
	for (int j = 0; j < d; j += 32, blk += Q8_0_BYTES) {
		__fp16 hd;
		memcpy(&hd, blk, 2);
		float32x4_t s = vdupq_n_f32((float)hd);
		for (int t = 0; t < 32; t += 8) {
			int16x8_t v = vmovl_s8(vld1_s8((const int8_t *)blk + 2 + t));
			vst1q_f32(buf + j + t, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(v))), s));
			vst1q_f32(buf + j + t + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(v)), s));
		}
	}
	return buf;
}

// dot is a · b over d elements: four lanes over j, then their sum.
static inline float dot(const float *a, const float *b, int d) {
	float32x4_t acc = vdupq_n_f32(0);
	int j = 0;
	for (; j + 4 <= d; j += 4)
		acc = vfmaq_f32(acc, vld1q_f32(a + j), vld1q_f32(b + j));
	float s = vaddvq_f32(acc);
	for (; j < d; j++)
		s += a[j] * b[j];
	return s;
}

// attn_row attends the g queries of one row (q, out: g·d floats) at
// position pos to positions low … pos.
static void attn_row(const float *q, float *out, int g, int d, const void *kl, const void *vl, int kt,
                     const int32_t *blocks, int bs, int kvheads, int h, int low, int pos, float scale, float cap,
                     const float *sinks, float *scratch) {
	int n = pos - low + 1;
	float *S = scratch, *buf = S + (int64_t)g * n; // S[j·n + p-low]
	for (int p = low; p <= pos; p++) {
		const float *k = kv_row(kl, kt, blocks, bs, kvheads, h, d, p, buf);
		for (int j = 0; j < g; j++) {
			float s = dot(q + j * d, k, d);
			// soft-cap: cap·tanh(s/cap)·scale, each step rounded to float
			// as the Go kernel (softcapGo, then the scale) does it
			S[j * n + p - low] = cap > 0 ? (float)tanh((double)(s * (1.f / cap))) * cap * scale : s * scale;
		}
	}
	float inv[g];
	for (int j = 0; j < g; j++) {
		float *s = S + j * n, m = sinks ? sinks[j] : -__builtin_inff();
		for (int p = 0; p < n; p++)
			m = s[p] > m ? s[p] : m;
		float sum = 0;
		for (int p = 0; p < n; p++) {
			s[p] = expf(s[p] - m);
			sum += s[p];
		}
		if (sinks)
			sum += expf(sinks[j] - m);
		inv[j] = 1.f / sum;
	}
	memset(out, 0, sizeof(float) * g * d);
	for (int p = low; p <= pos; p++) {
		const float *v = kv_row(vl, kt, blocks, bs, kvheads, h, d, p, buf + d);
		for (int j = 0; j < g; j++) {
			float *o = out + j * d, e = S[j * n + p - low];
			int t = 0;
			for (; t + 4 <= d; t += 4)
				vst1q_f32(o + t, vfmaq_n_f32(vld1q_f32(o + t), vld1q_f32(v + t), e));
			for (; t < d; t++)
				o[t] += e * v[t];
		}
	}
	for (int j = 0; j < g; j++)
		for (int t = 0; t < d; t++)
			out[j * d + t] *= inv[j];
}

// folio_attention runs units lo … hi-1 of a: unit u is run u % a.parts of
// the query heads of K/V head u / a.parts % a.kvheads of tile u /
// (a.kvheads·a.parts).
void folio_attention(int level, folio_attn a, int lo, int hi) {
	(void)level;
	int per = a.kvheads * a.parts, g = a.g / a.parts;
	for (int u = lo; u < hi; u++) {
		const folio_tile *t = a.tiles + u / per;
		int h = u % per / a.parts, j0 = h * a.g + u % a.parts * g; // the run's first query head
		const float *sinks = a.sinks ? a.sinks + j0 : NULL;          // the run's query heads'
		for (int r = 0; r < t->rows; r++) {
			int pos = t->pos + r, low = a.window > 0 && pos - a.window + 1 > 0 ? pos - a.window + 1 : 0;
			int64_t at = (t->row + r) * a.qstride + (int64_t)j0 * a.d;
			attn_row(a.q + at, a.out + at, g, a.d, a.kl, a.vl, a.kt, a.blocks + t->blocks, a.bs, a.kvheads, h,
			         low, pos, a.scale, a.cap, sinks, a.scratch);
		}
	}
}
