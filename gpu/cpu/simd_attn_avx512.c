//go:build amd64 && cgo

// The AVX-512 attention kernel of a unit of many queries: the flash
// attention of simd_attn_avx2.c (blocks of attnKB positions, an online
// softmax, see there), with 16 queries in the lanes of a vector and twice
// the registers for its tiles. For each block of positions B:
//
//	S[p][qi]  = scale · q_qi · K[p]                    p in B, FMA chains over j
//	m'_qi     = max(m_qi, S[p][qi] over p in B it reads)
//	P[p][qi]  = e^(S[p][qi] - m'_qi), 0 where masked
//	l_qi      = l_qi · e^(m_qi - m'_qi) + Σ_p P[p][qi]  (in order of p)
//	o_qi      = o_qi · e^(m_qi - m'_qi) + Σ_p P[p][qi] · V[p]  (FMA chains over p)
//
// and at the end out_qi = o_qi / (l_qi + e^(sink_qi - m_qi)). Each query's
// arithmetic is the same in any tile (blocks start at multiples of
// attnKB, a block a query masks wholly leaves its m, l and o as they were)
// and the same as attn1_avx512's (simd_attn.c), which does decode rows with
// positions in the lanes: decode and prefill stay bit for bit equal.

#include "simd_attn.h"

// UNROLL24 is UNROLL for the 24 positions of a one-chunk score tile.
#define UNROLL24 _Pragma("GCC unroll 24")

// rows512 converts rows p0 … p1-1 of head h of a K or V layer (kind kt)
// to float32s, row p at buf + (p-p0)·stride, zero from d to stride.
static AVX512 void rows512(const void *base, int kt, const int32_t *blocks, int bs, int kvheads, int h, int d, int p0,
                           int p1, float *buf, int stride) {
	int64_t at = 0;
	for (int p = p0, left = 0; p < p1; p++, left--, at += d) {
		if (left == 0) // a run of rows d apart, to the end of p's block
			at = kv_at(blocks, bs, kvheads, h, d, p), left = bs - p % bs;
		float *o = buf + (int64_t)(p - p0) * stride;
		if (kt == KV_F32) {
			memcpy(o, (const float *)base + at, sizeof(float) * d);
		} else if (kt == KV_Q8) {
			for (int j = 0; j < d; j += 16)
				_mm512_storeu_ps(o + j, q8x16_512(base, at + j));
		} else {
			const uint16_t *s = (const uint16_t *)base + at;
			for (int j = 0; j < d; j += 16) {
				__mmask16 m = tail16(d - j);
				_mm512_mask_storeu_ps(o + j, m, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, s + j)));
			}
		}
		for (int j = d; j < stride; j++)
			o[j] = 0;
	}
}

// qk512 sets S[p·nqp + 16(c0+c)] = sv · Σ_j kb[p·d + j] · qt[j·nqp + 16(c0+c)]
// for PN positions from p0 and CN chunks from c0: CN·PN accumulators,
// each an FMA chain over j.
INLINE AVX512 void qk512(int CN, int PN, const float *qt, int nqp, int c0, const float *kb, int d, int p0, __m512 sv,
                         float *S) {
	__m512 acc[24][3];
	UNROLL24 for (int pp = 0; pp < PN; pp++)
		UNROLL for (int c = 0; c < CN; c++)
			acc[pp][c] = _mm512_setzero_ps();
	const float *k = kb + (int64_t)p0 * d;
	for (int j = 0; j < d; j++) {
		__m512 qv[3];
		UNROLL for (int c = 0; c < CN; c++)
			qv[c] = _mm512_loadu_ps(qt + (int64_t)j * nqp + 16 * (c0 + c));
		UNROLL24 for (int pp = 0; pp < PN; pp++) {
			__m512 kv = _mm512_set1_ps(k[pp * d + j]);
			UNROLL for (int c = 0; c < CN; c++)
				acc[pp][c] = _mm512_fmadd_ps(kv, qv[c], acc[pp][c]);
		}
	}
	UNROLL24 for (int pp = 0; pp < PN; pp++)
		UNROLL for (int c = 0; c < CN; c++)
			_mm512_storeu_ps(S + (int64_t)(p0 + pp) * nqp + 16 * (c0 + c), _mm512_mul_ps(acc[pp][c], sv));
}

// pv512 sets ot[j·nqp + 16(c0+c)] = ot[…] · alpha[c0+c] + Σ_p P[p·nqp + 16(c0+c)]
// · vb[p·dv + j] for JN columns from j0 and CN chunks from c0, each an
// FMA chain over p in order.
INLINE AVX512 void pv512(int CN, int JN, float *ot, int nqp, int c0, const float *alpha, const float *P, int np,
                         const float *vb, int dv, int j0) {
	__m512 acc[16][3];
	UNROLL for (int c = 0; c < CN; c++) {
		__m512 a = _mm512_loadu_ps(alpha + 16 * (c0 + c));
		UNROLL for (int jj = 0; jj < JN; jj++)
			acc[jj][c] = _mm512_mul_ps(_mm512_loadu_ps(ot + (int64_t)(j0 + jj) * nqp + 16 * (c0 + c)), a);
	}
	for (int p = 0; p < np; p++) {
		__m512 pv[3];
		UNROLL for (int c = 0; c < CN; c++)
			pv[c] = _mm512_loadu_ps(P + (int64_t)p * nqp + 16 * (c0 + c));
		UNROLL for (int jj = 0; jj < JN; jj++) {
			__m512 v = _mm512_set1_ps(vb[(int64_t)p * dv + j0 + jj]);
			UNROLL for (int c = 0; c < CN; c++)
				acc[jj][c] = _mm512_fmadd_ps(v, pv[c], acc[jj][c]);
		}
	}
	UNROLL for (int jj = 0; jj < JN; jj++)
		UNROLL for (int c = 0; c < CN; c++)
			_mm512_storeu_ps(ot + (int64_t)(j0 + jj) * nqp + 16 * (c0 + c), acc[jj][c]);
}

// The tiles' shapes: for CN chunks of queries, PN positions (qk512) or JN
// columns (pv512) at a time, CN·PN accumulators, CN query vectors and a
// broadcast within the 32 registers. attnKB is a multiple of each PN (a
// block's last tile ends within it) and dv of each JN.
enum { PN3 = 8, PN2 = 12, PN1 = 24, JN3 = 8, JN2 = 8, JN1 = 16 };

AVX512 void folio_attn_avx512(ATTN_ARGS) {
	int nq = nr * g, nqp = (nq + 15) & ~15, nc = nqp / 16, n = pos0 + nr;
	int dv = (d + 15) & ~15; // V rows and ot's rows padded to JN1 columns
	// Scratch (attnScratch): qt, ot, then the block's scores S (P in
	// place) and its K and V rows.
	float *qt = scratch, *ot = qt + (int64_t)d * nqp, *S = ot + (int64_t)dv * nqp;
	float *kb = S + (int64_t)attnKB * nqp, *vb = kb + (int64_t)attnKB * d;
	load_qt(q, qstride, nr, g, d, qt, nqp);
	memset(ot, 0, sizeof(float) * dv * nqp);
	const __m512 sv = _mm512_set1_ps(cap > 0 ? 1.f : scale); // a cap comes before the scale

	// Per lane: its limit and window start (simd_attn.c), m (the sink's
	// logit to start: it joins the max) and l.
	int lim[nqp], low[nqp];
	float m[nqp], l[nqp], alpha[nqp];
	int lowmax = lo;
	for (int qi = 0; qi < nqp; qi++) {
		lim[qi] = qi < nq ? pos0 + qi / g : n - 1;
		low[qi] = win > 0 && lim[qi] - win + 1 > lo ? lim[qi] - win + 1 : lo;
		lowmax = low[qi] > lowmax ? low[qi] : lowmax;
		m[qi] = sink_of(sinks, qi, nq, g);
		l[qi] = 0;
	}

	for (int b0 = lo / attnKB * attnKB; b0 < n; b0 += attnKB) {
		int p0 = b0 > lo ? b0 : lo, p1 = n < b0 + attnKB ? n : b0 + attnKB, np = p1 - p0;
		if (p1 < n) { // the next block's rows, while this one computes
			int e = p1 + attnKB < n ? p1 + attnKB : n;
			prefetch_rows(kl, kt, blocks, bs, kvheads, h, d, p1, e, 0, d);
			prefetch_rows(vl, kt, blocks, bs, kvheads, h, d, p1, e, 0, d);
		}
		rows512(kl, kt, blocks, bs, kvheads, h, d, p0, p1, kb, d);
		// Scores, PN positions at a time: rows past np (up to attnKB)
		// are zeros.
		int c0 = 0;
		for (; c0 + 3 <= nc; c0 += 3) {
			memset(kb + (int64_t)np * d, 0, sizeof(float) * d * ((PN3 - np % PN3) % PN3));
			for (int p = 0; p < np; p += PN3)
				qk512(3, PN3, qt, nqp, c0, kb, d, p, sv, S);
		}
		if (nc - c0 == 2) {
			memset(kb + (int64_t)np * d, 0, sizeof(float) * d * ((PN2 - np % PN2) % PN2));
			for (int p = 0; p < np; p += PN2)
				qk512(2, PN2, qt, nqp, c0, kb, d, p, sv, S);
		} else if (nc - c0 == 1) {
			memset(kb + (int64_t)np * d, 0, sizeof(float) * d * ((PN1 - np % PN1) % PN1));
			for (int p = 0; p < np; p += PN1)
				qk512(1, PN1, qt, nqp, c0, kb, d, p, sv, S);
		}
		if (cap > 0)
			for (int p = 0; p < np; p++)
				softcap_scores(S + (int64_t)p * nqp, nq, cap, scale);

		// Online softmax, chunk by chunk; lanes past their limit or before
		// their window are left out where the block reaches them.
		int masked = p1 - 1 > pos0 || p0 < lowmax;
		for (int c = 0; c < nc; c++) {
			__m512 mo = _mm512_loadu_ps(m + 16 * c), mx = mo, t = _mm512_setzero_ps();
			__m512i limv = _mm512_loadu_si512(lim + 16 * c), lowv = _mm512_loadu_si512(low + 16 * c);
			float *s = S + 16 * c;
			if (masked) {
				for (int p = 0; p < np; p++) {
					__m512i pv = _mm512_set1_epi32(p0 + p);
					__mmask16 ok = _mm512_cmple_epi32_mask(pv, limv) & _mm512_cmple_epi32_mask(lowv, pv);
					mx = _mm512_mask_max_ps(mx, ok, mx, _mm512_loadu_ps(s + (int64_t)p * nqp));
				}
				for (int p = 0; p < np; p++) {
					__m512i pv = _mm512_set1_epi32(p0 + p);
					__mmask16 ok = _mm512_cmple_epi32_mask(pv, limv) & _mm512_cmple_epi32_mask(lowv, pv);
					__m512 e = _mm512_maskz_mov_ps(ok, exp512(_mm512_sub_ps(_mm512_loadu_ps(s + (int64_t)p * nqp), mx)));
					_mm512_storeu_ps(s + (int64_t)p * nqp, e);
					t = _mm512_add_ps(t, e);
				}
			} else {
				for (int p = 0; p < np; p++)
					mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + (int64_t)p * nqp));
				for (int p = 0; p < np; p++) {
					__m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(s + (int64_t)p * nqp), mx));
					_mm512_storeu_ps(s + (int64_t)p * nqp, e);
					t = _mm512_add_ps(t, e);
				}
			}
			// e^(m - m'): 1 where the max stayed, and (clamped) tiny where
			// nothing was read yet, m = m' = -inf, while l and o are 0.
			__m512 a = exp512(_mm512_sub_ps(mo, mx));
			_mm512_storeu_ps(alpha + 16 * c, a);
			_mm512_storeu_ps(l + 16 * c, _mm512_fmadd_ps(_mm512_loadu_ps(l + 16 * c), a, t));
			_mm512_storeu_ps(m + 16 * c, mx);
		}

		// o = o·alpha + P·V.
		rows512(vl, kt, blocks, bs, kvheads, h, d, p0, p1, vb, dv);
		c0 = 0;
		for (; c0 + 3 <= nc; c0 += 3)
			for (int j0 = 0; j0 < dv; j0 += JN3)
				pv512(3, JN3, ot, nqp, c0, alpha, S, np, vb, dv, j0);
		if (nc - c0 == 2)
			for (int j0 = 0; j0 < dv; j0 += JN2)
				pv512(2, JN2, ot, nqp, c0, alpha, S, np, vb, dv, j0);
		else if (nc - c0 == 1)
			for (int j0 = 0; j0 < dv; j0 += JN1)
				pv512(1, JN1, ot, nqp, c0, alpha, S, np, vb, dv, j0);
	}

	// out = o / (l + e^(sink - m)), a lane without a sink adding 0.
	for (int c = 0; c < nc; c++) {
		__m512 sum = _mm512_loadu_ps(l + 16 * c);
		if (sinks) {
			float sk[16];
			for (int i = 0; i < 16; i++)
				sk[i] = sink_of(sinks, 16 * c + i, nq, g);
			__m512 skv = _mm512_loadu_ps(sk);
			sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(skv, _mm512_set1_ps(-__builtin_inff()), _CMP_GT_OQ),
			                                             exp512(_mm512_sub_ps(skv, _mm512_loadu_ps(m + 16 * c)))));
		}
		_mm512_storeu_ps(alpha + 16 * c, _mm512_div_ps(_mm512_set1_ps(1.f), sum));
	}
	for (int qi = 0; qi < nq; qi++) {
		float *o = out + (qi / g) * qstride + (qi % g) * d;
		for (int j = 0; j < d; j++)
			o[j] = ot[(int64_t)j * nqp + qi] * alpha[qi];
	}
}
