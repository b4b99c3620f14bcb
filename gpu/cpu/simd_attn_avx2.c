//go:build amd64 && cgo

// The AVX2 attention kernel: flash attention over the unit's positions in
// blocks of attnKB, with the nq = nr·g queries in the lanes of vectors
// (chunks of 8), so that every step is vertical and each K and V row is
// converted once for all of them. For each block of positions B:
//
//	S[p][qi]  = scale · q_qi · K[p]                    p in B, FMA chains over j
//	m'_qi     = max(m_qi, S[p][qi] over p in B it reads)
//	P[p][qi]  = e^(S[p][qi] - m'_qi), 0 where masked
//	l_qi      = l_qi · e^(m_qi - m'_qi) + Σ_p P[p][qi]  (in order of p)
//	o_qi      = o_qi · e^(m_qi - m'_qi) + Σ_p P[p][qi] · V[p]  (FMA chains over p)
//
// and at the end out_qi = o_qi / (l_qi + e^(sink_qi - m_qi)). The blocks
// start at multiples of attnKB whatever the tile, and a block a query
// masks wholly leaves its m, l and o as they were (e^0 = 1, sums of 0), so
// each query's arithmetic is the same in any tile: decode and prefill stay
// bit for bit equal. Only the scores and products of one block are held
// (simd_attn.c's kernels hold a unit's scores for all its positions).

#include "simd_attn.h"

// exp256 is e^x (ggml's ggml_v_expf for AVX2, without its range
// extension), with x clamped to [-87, 88] where 2^n stays normal.
AVX2 __m256 exp256(__m256 x) {
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.f)), _mm256_set1_ps(88.f));
	const __m256 r = _mm256_set1_ps(0x1.8p23f);
	__m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
	__m256 n = _mm256_sub_ps(z, r);
	__m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
	__m256 k = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(z), 23), _mm256_castps_si256(_mm256_set1_ps(1.f))));
	__m256 u = _mm256_mul_ps(b, b);
	__m256 j = _mm256_fmadd_ps(
		_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
	                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
		u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
	return _mm256_fmadd_ps(j, k, k);
}

// rows256 converts rows p0 … p1-1 of head h of a K or V layer (kind kt)
// to float32s, row p at buf + (p-p0)·stride, zero from d to stride.
static AVX2 void rows256(const void *base, int kt, const int32_t *blocks, int bs, int kvheads, int h, int d, int p0,
                         int p1, float *buf, int stride) {
	for (int p = p0; p < p1; p++) {
		int64_t at = kv_at(blocks, bs, kvheads, h, d, p);
		float *o = buf + (int64_t)(p - p0) * stride;
		int j = 0;
		if (kt == KV_F32) {
			memcpy(o, (const float *)base + at, sizeof(float) * d);
			j = d;
		} else if (kt == KV_Q8) {
			for (; j < d; j += 8) {
				const uint8_t *blk = (const uint8_t *)base + ((at + j) >> 5) * Q8_0_BYTES;
				uint16_t hs;
				memcpy(&hs, blk, 2);
				__m256 qv = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + ((at + j) & 31)))));
				_mm256_storeu_ps(o + j, _mm256_mul_ps(qv, _mm256_set1_ps(_cvtsh_ss(hs))));
			}
		} else {
			const uint16_t *s = (const uint16_t *)base + at;
			for (; j + 8 <= d; j += 8)
				_mm256_storeu_ps(o + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + j))));
			for (; j < d; j++)
				o[j] = _cvtsh_ss(s[j]);
		}
		for (; j < stride; j++)
			o[j] = 0;
	}
}

// qk256 sets S[p·nqp + 8(c0+c)] = sv · Σ_j kb[p·d + j] · qt[j·nqp + 8(c0+c)]
// for PN positions from p0 and CN chunks from c0: CN·PN accumulators,
// each an FMA chain over j.
INLINE AVX2 void qk256(int CN, int PN, const float *qt, int nqp, int c0, const float *kb, int d, int p0, __m256 sv,
                       float *S) {
	__m256 acc[12][3];
	UNROLL for (int pp = 0; pp < PN; pp++)
		UNROLL for (int c = 0; c < CN; c++)
			acc[pp][c] = _mm256_setzero_ps();
	const float *k = kb + (int64_t)p0 * d;
	for (int j = 0; j < d; j++) {
		__m256 qv[3];
		UNROLL for (int c = 0; c < CN; c++)
			qv[c] = _mm256_loadu_ps(qt + (int64_t)j * nqp + 8 * (c0 + c));
		UNROLL for (int pp = 0; pp < PN; pp++) {
			__m256 kv = _mm256_broadcast_ss(k + pp * d + j);
			UNROLL for (int c = 0; c < CN; c++)
				acc[pp][c] = _mm256_fmadd_ps(kv, qv[c], acc[pp][c]);
		}
	}
	UNROLL for (int pp = 0; pp < PN; pp++)
		UNROLL for (int c = 0; c < CN; c++)
			_mm256_storeu_ps(S + (int64_t)(p0 + pp) * nqp + 8 * (c0 + c), _mm256_mul_ps(acc[pp][c], sv));
}

// pv256 sets ot[j·nqp + 8(c0+c)] = ot[…] · alpha[c0+c] + Σ_p P[p·nqp + 8(c0+c)]
// · vb[p·dv + j] for JN columns from j0 and CN chunks from c0, each an
// FMA chain over p in order.
INLINE AVX2 void pv256(int CN, int JN, float *ot, int nqp, int c0, const float *alpha, const float *P, int np,
                       const float *vb, int dv, int j0) {
	__m256 acc[8][3];
	UNROLL for (int c = 0; c < CN; c++) {
		__m256 a = _mm256_loadu_ps(alpha + 8 * (c0 + c));
		UNROLL for (int jj = 0; jj < JN; jj++)
			acc[jj][c] = _mm256_mul_ps(_mm256_loadu_ps(ot + (int64_t)(j0 + jj) * nqp + 8 * (c0 + c)), a);
	}
	for (int p = 0; p < np; p++) {
		__m256 pv[3];
		UNROLL for (int c = 0; c < CN; c++)
			pv[c] = _mm256_loadu_ps(P + (int64_t)p * nqp + 8 * (c0 + c));
		UNROLL for (int jj = 0; jj < JN; jj++) {
			__m256 v = _mm256_broadcast_ss(vb + (int64_t)p * dv + j0 + jj);
			UNROLL for (int c = 0; c < CN; c++)
				acc[jj][c] = _mm256_fmadd_ps(v, pv[c], acc[jj][c]);
		}
	}
	UNROLL for (int jj = 0; jj < JN; jj++)
		UNROLL for (int c = 0; c < CN; c++)
			_mm256_storeu_ps(ot + (int64_t)(j0 + jj) * nqp + 8 * (c0 + c), acc[jj][c]);
}

// The tiles' shapes: for CN chunks of queries, PN positions (qk256) or JN
// columns (pv256) at a time, CN·PN accumulators, CN query vectors and a
// broadcast within the 16 registers.
enum { PN3 = 4, PN2 = 6, PN1 = 12, JN3 = 4, JN1 = 8 };

AVX2 void folio_attn_avx2(ATTN_ARGS) {
	int nq = nr * g, nqp = (nq + 7) & ~7, nc = nqp / 8, n = pos0 + nr;
	int dv = (d + 7) & ~7; // V rows and ot's rows padded to JN1 columns
	// Scratch (attnScratch): qt, ot, then the block's scores S (P in
	// place) and its K and V rows, PN1 rows of slack past attnKB.
	float *qt = scratch, *ot = qt + (int64_t)d * nqp, *S = ot + (int64_t)dv * nqp;
	float *kb = S + (int64_t)(attnKB + PN1) * nqp, *vb = kb + (int64_t)(attnKB + PN1) * d;
	load_qt(q, qstride, nr, g, d, qt, nqp);
	memset(ot, 0, sizeof(float) * dv * nqp);
	const __m256 sv = _mm256_set1_ps(cap > 0 ? 1.f : scale); // a cap comes before the scale

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
		rows256(kl, kt, blocks, bs, kvheads, h, d, p0, p1, kb, d);
		// Scores, PN positions at a time: rows past np are zeros.
		int c0 = 0;
		for (; c0 + 3 <= nc; c0 += 3) {
			memset(kb + (int64_t)np * d, 0, sizeof(float) * d * ((PN3 - np % PN3) % PN3));
			for (int p = 0; p < np; p += PN3)
				qk256(3, PN3, qt, nqp, c0, kb, d, p, sv, S);
		}
		if (nc - c0 == 2) {
			memset(kb + (int64_t)np * d, 0, sizeof(float) * d * ((PN2 - np % PN2) % PN2));
			for (int p = 0; p < np; p += PN2)
				qk256(2, PN2, qt, nqp, c0, kb, d, p, sv, S);
		} else if (nc - c0 == 1) {
			memset(kb + (int64_t)np * d, 0, sizeof(float) * d * ((PN1 - np % PN1) % PN1));
			for (int p = 0; p < np; p += PN1)
				qk256(1, PN1, qt, nqp, c0, kb, d, p, sv, S);
		}
		if (cap > 0)
			for (int p = 0; p < np; p++)
				softcap_scores(S + (int64_t)p * nqp, nq, cap, scale);

		// Online softmax, chunk by chunk; lanes past their limit or before
		// their window are left out where the block reaches them.
		int masked = p1 - 1 > pos0 || p0 < lowmax;
		for (int c = 0; c < nc; c++) {
			__m256 mo = _mm256_loadu_ps(m + 8 * c), mx = mo, t = _mm256_setzero_ps();
			__m256i limv = _mm256_loadu_si256((const __m256i *)(lim + 8 * c));
			__m256i lowv = _mm256_loadu_si256((const __m256i *)(low + 8 * c));
			float *s = S + 8 * c;
			if (masked) {
				for (int p = 0; p < np; p++) {
					__m256i pv = _mm256_set1_epi32(p0 + p);
					__m256 skip = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(pv, limv), _mm256_cmpgt_epi32(lowv, pv)));
					mx = _mm256_blendv_ps(_mm256_max_ps(mx, _mm256_loadu_ps(s + (int64_t)p * nqp)), mx, skip);
				}
				for (int p = 0; p < np; p++) {
					__m256i pv = _mm256_set1_epi32(p0 + p);
					__m256 skip = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(pv, limv), _mm256_cmpgt_epi32(lowv, pv)));
					__m256 e = _mm256_andnot_ps(skip, exp256(_mm256_sub_ps(_mm256_loadu_ps(s + (int64_t)p * nqp), mx)));
					_mm256_storeu_ps(s + (int64_t)p * nqp, e);
					t = _mm256_add_ps(t, e);
				}
			} else {
				for (int p = 0; p < np; p++)
					mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + (int64_t)p * nqp));
				for (int p = 0; p < np; p++) {
					__m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + (int64_t)p * nqp), mx));
					_mm256_storeu_ps(s + (int64_t)p * nqp, e);
					t = _mm256_add_ps(t, e);
				}
			}
			// e^(m - m'): 1 where the max stayed, and (clamped) tiny where
			// nothing was read yet, m = m' = -inf, while l and o are 0.
			__m256 a = exp256(_mm256_sub_ps(mo, mx));
			_mm256_storeu_ps(alpha + 8 * c, a);
			_mm256_storeu_ps(l + 8 * c, _mm256_fmadd_ps(_mm256_loadu_ps(l + 8 * c), a, t));
			_mm256_storeu_ps(m + 8 * c, mx);
		}

		// o = o·alpha + P·V.
		rows256(vl, kt, blocks, bs, kvheads, h, d, p0, p1, vb, dv);
		c0 = 0;
		for (; c0 + 3 <= nc; c0 += 3)
			for (int j0 = 0; j0 < dv; j0 += JN3)
				pv256(3, JN3, ot, nqp, c0, alpha, S, np, vb, dv, j0);
		if (nc - c0 == 2)
			for (int j0 = 0; j0 < dv; j0 += JN3)
				pv256(2, JN3, ot, nqp, c0, alpha, S, np, vb, dv, j0);
		else if (nc - c0 == 1)
			for (int j0 = 0; j0 < dv; j0 += JN1)
				pv256(1, JN1, ot, nqp, c0, alpha, S, np, vb, dv, j0);
	}

	// out = o / (l + e^(sink - m)), a lane without a sink adding 0.
	for (int c = 0; c < nc; c++) {
		__m256 sum = _mm256_loadu_ps(l + 8 * c);
		if (sinks) {
			float sk[8];
			for (int i = 0; i < 8; i++)
				sk[i] = sink_of(sinks, 8 * c + i, nq, g);
			__m256 skv = _mm256_loadu_ps(sk);
			sum = _mm256_add_ps(sum, _mm256_and_ps(_mm256_cmp_ps(skv, _mm256_set1_ps(-__builtin_inff()), _CMP_GT_OQ),
			                                       exp256(_mm256_sub_ps(skv, _mm256_loadu_ps(m + 8 * c)))));
		}
		_mm256_storeu_ps(alpha + 8 * c, _mm256_div_ps(_mm256_set1_ps(1.f), sum));
	}
	for (int qi = 0; qi < nq; qi++) {
		float *o = out + (qi / g) * qstride + (qi % g) * d;
		for (int j = 0; j < d; j++)
			o[j] = ot[(int64_t)j * nqp + qi] * alpha[qi];
	}
}
