//go:build amd64 && cgo

// The attention kernel of the avx512bf16 level over a half or Q8_0 K/V
// cache: the bfloat16 flash attention of simd_attn_bf16.h (what it
// computes, the tiles' layout) with its two products on vdpbf16ps, which
// adds two bfloat16 products to each float32 lane: twice the
// multiply-adds of a float32 FMA in one instruction. A row of a Kᵀ tile is
// 16 positions' pair of dims; a row of a V tile 16 columns' pair of
// positions; the other side of each product, a query's pair of dims or
// pair of P's positions, is broadcast to every lane. A query's sum over a
// lane runs in the same order in any tile (over the chunks and pairs in
// order, a block's P · V after its softmax), so decode and prefill agree
// bit for bit.

#include "simd_attn_bf16.h"

// bcast2 is the pair of bfloat16s at p in every dword.
INLINE BF16 __m512bh bcast2(const uint16_t *p) {
	int32_t v;
	memcpy(&v, p, 4);
	return (__m512bh)_mm512_set1_epi32(v);
}

// scores_bf16 sets row r0+r, columns of groups g0 … g0+GN-1, of S (16
// rows of akb floats) to the raw q·k of query row r0+r of a query tile qt
// (nck tiles of chunks) for r < QN: QN·GN accumulators, each a chain of
// vdpbf16ps over the chunks and their 16 pairs.
INLINE BF16 void scores_bf16(int QN, int GN, const uint16_t *qt, int r0, const uint16_t *kb, int nck, int g0,
                             float *S) {
	__m512 acc[6][4];
	UNROLL for (int r = 0; r < QN; r++)
		UNROLL for (int gg = 0; gg < GN; gg++)
			acc[r][gg] = _mm512_setzero_ps();
	for (int c = 0; c < nck; c++) {
		const uint16_t *qc = tile_at((uint16_t *)qt, c) + 32 * r0, *k = kb + 512 * ((int64_t)g0 * nck + c);
		for (int i = 0; i < 16; i++) {
			__m512bh kv[4];
			UNROLL for (int gg = 0; gg < GN; gg++)
				kv[gg] = (__m512bh)_mm512_load_si512(k + 512 * (int64_t)nck * gg + 32 * i);
			UNROLL for (int r = 0; r < QN; r++) {
				__m512bh qv = bcast2(qc + 32 * r + 2 * i);
				UNROLL for (int gg = 0; gg < GN; gg++)
					acc[r][gg] = _mm512_dpbf16_ps(acc[r][gg], qv, kv[gg]);
			}
		}
	}
	UNROLL for (int r = 0; r < QN; r++)
		UNROLL for (int gg = 0; gg < GN; gg++)
			_mm512_store_ps(S + akb * (r0 + r) + 16 * (g0 + gg), acc[r][gg]);
}

// pv_bf16 adds P · V of chunks c0 … c1-1 to columns 16j0 … 16(j0+JN)-1
// of O's rows r0 … r0+QN-1 (dvp floats apart; P's rows akb bfloat16s
// apart): QN·JN accumulators, each a chain of vdpbf16ps over the chunks
// and their 16 pairs of positions.
INLINE BF16 void pv_bf16(int QN, int JN, const uint16_t *P, int r0, const uint16_t *vv, int ncv, int c0, int c1, int j0,
                         float *O, int dvp) {
	__m512 acc[6][4];
	UNROLL for (int r = 0; r < QN; r++)
		UNROLL for (int jj = 0; jj < JN; jj++)
			acc[r][jj] = _mm512_load_ps(O + (int64_t)(r0 + r) * dvp + 16 * (j0 + jj));
	for (int ch = c0; ch < c1; ch++) {
		const uint16_t *v = vv + 512 * ((int64_t)ch * ncv + j0), *p = P + akb * r0 + 32 * ch;
		for (int i = 0; i < 16; i++) {
			__m512bh vk[4];
			UNROLL for (int jj = 0; jj < JN; jj++)
				vk[jj] = (__m512bh)_mm512_load_si512(v + 512 * jj + 32 * i);
			UNROLL for (int r = 0; r < QN; r++) {
				__m512bh pv = bcast2(p + akb * r + 2 * i);
				UNROLL for (int jj = 0; jj < JN; jj++)
					acc[r][jj] = _mm512_dpbf16_ps(acc[r][jj], pv, vk[jj]);
			}
		}
	}
	UNROLL for (int r = 0; r < QN; r++)
		UNROLL for (int jj = 0; jj < JN; jj++)
			_mm512_store_ps(O + (int64_t)(r0 + r) * dvp + 16 * (j0 + jj), acc[r][jj]);
}

// The rows of a query tile go 6 at a time (24 accumulators and 4 K or V
// rows within the 32 registers), the rest in one piece; groups of
// positions and of columns 4 at a time.
#define QN_SWITCH(QN, CALL)                                                                                            \
	switch (QN) {                                                                                                  \
	case 1: CALL(1); break;                                                                                        \
	case 2: CALL(2); break;                                                                                        \
	case 3: CALL(3); break;                                                                                        \
	case 4: CALL(4); break;                                                                                        \
	case 5: CALL(5); break;                                                                                        \
	default: CALL(6); break;                                                                                       \
	}

// scores_tile sets S's rows 0 … rows-1 over the span's groups.
static BF16 void scores_tile(const uint16_t *qt, int rows, const uint16_t *kb, int nck, span b, float *S) {
	for (int r0 = 0; r0 < rows; r0 += 6)
		for (int g = b.g0; g < b.g1; g += 4) {
			int qn = rows - r0 < 6 ? rows - r0 : 6, gn = b.g1 - g < 4 ? b.g1 - g : 4;
#define SC(Q)                                                               \
	do {                                                                    \
		if (gn == 4)                                                        \
			scores_bf16(Q, 4, qt, r0, kb, nck, g, S);                       \
		else if (gn == 3)                                                   \
			scores_bf16(Q, 3, qt, r0, kb, nck, g, S);                       \
		else if (gn == 2)                                                   \
			scores_bf16(Q, 2, qt, r0, kb, nck, g, S);                       \
		else                                                                \
			scores_bf16(Q, 1, qt, r0, kb, nck, g, S);                       \
	} while (0)
			QN_SWITCH(qn, SC)
#undef SC
		}
}

// pv_tile adds P · V over the span's chunks to O's rows 0 … rows-1.
static BF16 void pv_tile(const uint16_t *P, int rows, const uint16_t *vv, int ncv, span b, float *O, int dvp) {
	for (int r0 = 0; r0 < rows; r0 += 6)
		for (int j = 0; j < ncv; j += 4) {
			int qn = rows - r0 < 6 ? rows - r0 : 6, jn = ncv - j < 4 ? ncv - j : 4;
#define PV(Q)                                                                   \
	do {                                                                        \
		if (jn == 4)                                                            \
			pv_bf16(Q, 4, P, r0, vv, ncv, b.c0, b.c1, j, O, dvp);               \
		else if (jn == 3)                                                       \
			pv_bf16(Q, 3, P, r0, vv, ncv, b.c0, b.c1, j, O, dvp);               \
		else if (jn == 2)                                                       \
			pv_bf16(Q, 2, P, r0, vv, ncv, b.c0, b.c1, j, O, dvp);               \
		else                                                                    \
			pv_bf16(Q, 1, P, r0, vv, ncv, b.c0, b.c1, j, O, dvp);               \
	} while (0)
			QN_SWITCH(qn, PV)
#undef PV
		}
}

// folio_attn_bf16 is the kernel of one unit (ATTN_ARGS, simd_attn.h); its
// scratch is bf16_begin's. Each block's query tiles run one after another:
// scores, softmax, P · V.
BF16 void folio_attn_bf16(ATTN_ARGS) {
	bf16_unit x;
	bf16_begin(&x, q, qstride, nr, g, d, sinks, scratch);
	int n = pos0 + nr, live[x.nt];
	unit u = {{0}, x.nq, g, pos0, lo, win, x.dvp, scale, cap, x.m, x.l};
	for (int b0 = lo / akb * akb; b0 < n; b0 += akb) {
		int nl = bf16_block(&x, b0, kl, vl, kt, blocks, bs, kvheads, h, g, d, pos0, n, lo, win, &u.b, live);
		for (int i = 0; i < nl; i++) {
			int t = live[i], rows = x.nq - 16 * t < 16 ? x.nq - 16 * t : 16;
			sm cur = {x.S, x.P, x.O + (int64_t)16 * t * x.dvp, 16 * t};
			scores_tile(tile_at(x.qb, (int64_t)t * x.nck), rows, x.kb, x.nck, u.b, x.S);
			softmax_rows(&u, cur, 0, rows);
			pv_tile(x.P, rows, x.vv, x.ncv, u.b, cur.O, x.dvp);
		}
	}
	bf16_end(&x, qstride, g, d, sinks, out);
}
