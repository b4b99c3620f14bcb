//go:build amd64 && cgo

// The attention kernel of the amx level over a half or Q8_0 K/V cache: the
// bfloat16 flash attention of simd_attn_bf16.h (what it computes, the
// tiles' layout) with its two products on AMX-BF16 tiles (TDPBF16PS,
// float32 sums of bfloat16 products): S = Q (16 × 32 dims) times Kᵀ, a
// chunk of 32 dims at a time, and O += P · V, 32 positions at a time.
// Tiles: C 0-3 (S's four groups of 16 positions, or O's 16-column groups),
// A 4 (a chunk of Q, or of P), B 5-7.

#include "simd_attn_bf16.h"

#define AMXBF                                                                                            \
	__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512bf16," \
	                      "avx2,fma,f16c")))

// amx_attn_config sets every tile to 16 rows of 64 bytes.
static AMXBF void amx_attn_config(void) {
	tilecfg c;
	memset(&c, 0, sizeof c);
	c.palette = 1;
	for (int t = 0; t < 8; t++)
		c.colsb[t] = 64, c.rows[t] = 16;
	tile_config(&c);
}

// scores4 sets S's columns of groups g0 … g0+ng-1 (ng ≤ 4; S 16 rows of
// akb floats) to query tile qt's raw q·k over the Kᵀ tiles.
static AMXBF void scores4(const uint16_t *qt, const uint16_t *kt_, int nck, int g0, int ng, float *S) {
	const uint16_t *k = kt_ + 512 * (int64_t)g0 * nck;
	_tile_zero(0);
	if (ng > 1)
		_tile_zero(1);
	if (ng > 2)
		_tile_zero(2);
	if (ng > 3)
		_tile_zero(3);
	for (int c = 0; c < nck; c++) {
		_tile_loadd(4, qt + 512 * c, 64);
		_tile_loadd(5, k + 512 * c, 64);
		if (ng > 1)
			_tile_loadd(6, k + 512 * (nck + c), 64);
		_tile_dpbf16ps(0, 4, 5);
		if (ng > 2)
			_tile_loadd(7, k + 512 * (2 * nck + c), 64);
		if (ng > 1)
			_tile_dpbf16ps(1, 4, 6);
		if (ng > 3)
			_tile_loadd(5, k + 512 * (3 * nck + c), 64);
		if (ng > 2)
			_tile_dpbf16ps(2, 4, 7);
		if (ng > 3)
			_tile_dpbf16ps(3, 4, 5);
	}
	float *s = S + 16 * g0;
	_tile_stored(0, s, 4 * akb);
	if (ng > 1)
		_tile_stored(1, s + 16, 4 * akb);
	if (ng > 2)
		_tile_stored(2, s + 32, 4 * akb);
	if (ng > 3)
		_tile_stored(3, s + 48, 4 * akb);
}

// pv_load loads columns 16j0 … 16(j0+nj)-1 of O (16 rows, os bytes apart)
// into C tiles 0 … nj-1, nj ≤ 4; pv_chunk adds chunk ch of P · V to them,
// pv_store stores them back. Nothing between uses the tiles.
static AMXBF void pv_load(const float *o, int64_t os, int nj) {
	_tile_loadd(0, o, os);
	if (nj > 1)
		_tile_loadd(1, o + 16, os);
	if (nj > 2)
		_tile_loadd(2, o + 32, os);
	if (nj > 3)
		_tile_loadd(3, o + 48, os);
}

static AMXBF void pv_chunk(const uint16_t *P, const uint16_t *vv, int ncv, int ch, int j0, int nj) {
	const uint16_t *v = vv + 512 * ((int64_t)ch * ncv + j0);
	_tile_loadd(4, P + 32 * ch, 2 * akb);
	_tile_loadd(5, v, 64);
	if (nj > 1)
		_tile_loadd(6, v + 512, 64);
	_tile_dpbf16ps(0, 4, 5);
	if (nj > 2)
		_tile_loadd(7, v + 1024, 64);
	if (nj > 1)
		_tile_dpbf16ps(1, 4, 6);
	if (nj > 3)
		_tile_loadd(5, v + 1536, 64);
	if (nj > 2)
		_tile_dpbf16ps(2, 4, 7);
	if (nj > 3)
		_tile_dpbf16ps(3, 4, 5);
}

static AMXBF void pv_store(float *o, int64_t os, int nj) {
	_tile_stored(0, o, os);
	if (nj > 1)
		_tile_stored(1, o + 16, os);
	if (nj > 2)
		_tile_stored(2, o + 32, os);
	if (nj > 3)
		_tile_stored(3, o + 48, os);
}

// step runs a step of the pipeline over a block's query tiles: the scores
// of tile next (if not NULL) into S2, and the P · V of tile prev (its P
// rows and O rows; if prev.P is not NULL), with the softmax of tile cur
// (if cur.S is not NULL) between their tile products, a row or two at a
// time: the vector work runs while the tile unit multiplies, where apart
// each waited for the other (a tile product's operands are loaded from
// the cache, and out of order the core looks only some hundred
// instructions ahead).
static AMXBF void step(const unit *u, const uint16_t *next, float *S2, sm cur, sm prev, const uint16_t *kb,
                       const uint16_t *vv, int nck, int ncv) {
	span b = u->b;
	int slots = (next ? (b.g1 - b.g0 + 3) / 4 : 0) + (prev.P ? (ncv + 3) / 4 * (b.c1 - b.c0) : 0), done = 0, r = 0;
	int rows = cur.S ? 16 : 0;
#define ROWS_TO(k)                                                       \
	do {                                                                 \
		int e = slots ? rows * (k) / slots : rows;                       \
		if (e > r)                                                       \
			softmax_rows(u, cur, r, e), r = e;                           \
	} while (0)
	if (next)
		for (int g = b.g0; g < b.g1; g += 4) {
			scores4(next, kb, nck, g, b.g1 - g < 4 ? b.g1 - g : 4, S2);
			ROWS_TO(++done);
		}
	if (prev.P)
		for (int j0 = 0; j0 < ncv; j0 += 4) {
			int nj = ncv - j0 < 4 ? ncv - j0 : 4;
			float *o = prev.O + 16 * j0;
			int64_t os = 4 * (int64_t)u->dvp;
			pv_load(o, os, nj);
			for (int ch = b.c0; ch < b.c1; ch++) {
				pv_chunk(prev.P, vv, ncv, ch, j0, nj);
				ROWS_TO(++done);
			}
			pv_store(o, os, nj);
		}
	ROWS_TO(slots);
#undef ROWS_TO
}

// folio_attn_amx is the kernel of one unit (ATTN_ARGS, simd_attn.h); its
// scratch is bf16_begin's.
AMXBF void folio_attn_amx(ATTN_ARGS) {
	bf16_unit x;
	bf16_begin(&x, q, qstride, nr, g, d, sinks, scratch);
	int n = pos0 + nr, nck = x.nck, ncv = x.ncv, dvp = x.dvp, live[x.nt];
	amx_attn_config();
	unit u = {{0}, x.nq, g, pos0, lo, win, dvp, scale, cap, x.m, x.l};
	for (int b0 = lo / akb * akb; b0 < n; b0 += akb) {
		int nl = bf16_block(&x, b0, kl, vl, kt, blocks, bs, kvheads, h, g, d, pos0, n, lo, win, &u.b, live);
		// The tiles of queries that read the block, in a pipeline: the
		// scores of the next, the softmax of this one, the P · V of the one
		// before. A tile load waits for the vector stores before it to
		// reach the cache (and the vector loads for a tile store): each
		// buffer is read a step after it is written. S and P alternate.
		float *S = x.S, *O = x.O;
		uint16_t *P = x.P;
		for (int i = -1; i <= nl; i++) {
			sm cur = {0}, prev = {0};
			if (i >= 0 && i < nl)
				cur = (sm){S + 16 * akb * (i & 1), P + 16 * akb * (i & 1), O + (int64_t)16 * live[i] * dvp, 16 * live[i]};
			if (i > 0)
				prev = (sm){NULL, P + 16 * akb * ((i - 1) & 1), O + (int64_t)16 * live[i - 1] * dvp, 0};
			const uint16_t *next = i + 1 < nl ? tile_at(x.qb, (int64_t)live[i + 1] * nck) : NULL;
			step(&u, next, S + 16 * akb * ((i + 1) & 1), cur, prev, x.kb, x.vv, nck, ncv);
		}
	}
	_tile_release();
	bf16_end(&x, qstride, g, d, sinks, out);
}
