// Shared by the bfloat16 attention kernels over half and Q8_0 caches: the
// amx level's on AMX-BF16 tiles (simd_attn_amx.c) and the avx512bf16
// level's on vdpbf16ps (simd_attn_bf16.c). Both run the online softmax of
// simd_attn_avx512.c over blocks of akb positions, for tiles of 16 queries:
//
//	S[qi][p]  = q_qi · K[p]          bfloat16 pairs of dims, float32 sums
//	m'_qi     = max(m_qi, scale·S[qi][p] over the p in B it reads)
//	P[qi][p]  = bf16(e^(scale·S[qi][p] - m'_qi)), 0 where masked
//	l_qi      = l_qi · e^(m_qi - m'_qi) + Σ_p P[qi][p]
//	o_qi      = o_qi · e^(m_qi - m'_qi) + P · V    (bfloat16 pairs of positions)
//
// and at the end out_qi = o_qi / (l_qi + e^(sink_qi - m_qi)). Q, K, V and P
// are rounded to bfloat16 (8 significant bits) on their way in; sums are
// float32. Their error against the float32 kernels is that rounding's
// (attentionTolBF16 in the tests), which is why these levels take them for
// half and Q8_0 caches only: a float32 cache asks for float32 attention
// and gets attn_avx512.
//
// Every query's arithmetic is its own, at positions laid out from
// multiples of akb whatever the unit: decode (one row) and prefill take the
// same kernel and agree bit for bit, as the float32 kernels do. Positions a
// query does not read are 0 in P; rows of K and V outside the unit's reach
// are 0 in the tiles.
//
// Per block, the unit's K rows become Kᵀ tiles (a chunk of a row is 16
// pairs of dims, one dword each; 16 rows' chunks transposed as 16×16
// dwords) and its V rows V tiles (row r of a tile: the pairs of positions
// 2r, 2r+1 of 16 columns), shared by all of the unit's query tiles. A tile
// is 1 KiB, 16 rows of 64 bytes: what an AMX tile register holds.
#ifndef FOLIO_SIMD_ATTN_BF16_H
#define FOLIO_SIMD_ATTN_BF16_H

#include "simd_attn.h"

// BF16 is the target of the helpers both kernels inline (a subset of the
// amx kernel's).
#define BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512bf16,avx2,fma,f16c")))

// akb is the positions of a block (attnKBBF16 in attention_simd.go): 16
// groups of 16 (Kᵀ tiles, S's columns), 8 chunks of 32 (V tiles, P's).
// A block's P · V runs over all of its chunks before O's tiles go back to
// memory, and a query's running max and sum step once a block.
enum { akb = 256 };

// tile_at is tile i of a run of 1 KiB tiles (512 bfloat16s).
static inline uint16_t *tile_at(uint16_t *base, int64_t i) { return base + i * 512; }

// mask16 keeps the first left lanes (none for left ≤ 0).
static inline __mmask16 mask16(int left) { return left <= 0 ? 0 : tail16(left); }

// elems16 is elements j … j+15 of the row at element at of a K or V layer
// (or of queries: KV_F32) as floats, 0 from d on.
INLINE BF16 __m512 elems16(const void *base, int kt, int64_t at, int j, int d) {
	__mmask16 mk = mask16(d - j);
	if (!mk)
		return _mm512_setzero_ps();
	if (kt == KV_F32)
		return _mm512_maskz_loadu_ps(mk, (const float *)base + at + j);
	if (kt == KV_Q8) // d is a multiple of 32
		return q8x16_512(base, at + j);
	return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mk, (const uint16_t *)base + at + j));
}

// chunk32 is elements j … j+31 of that row as bfloat16s, as 16 dwords of
// pairs (element j+2i in the low half of dword i).
INLINE BF16 __m512i chunk32(const void *base, int kt, int64_t at, int j, int d) {
	return (__m512i)_mm512_cvtne2ps_pbh(elems16(base, kt, at, j + 16, d), elems16(base, kt, at, j, d));
}

// pairs16 interleaves the bfloat16s of a and b: dword i is (a_i, b_i).
// Both rounded by one vcvtne2ps2bf16 (a in words 0-15, b in 16-31), then
// interleaved by one vpermw.
INLINE BF16 __m512i pairs16(__m512 a, __m512 b) {
	const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21, 5,
	                                     20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
	return _mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh(b, a));
}

// halves32 is the 32 halves at p as floats: elements 0-15 and 16-31.
INLINE BF16 void halves32(const uint16_t *p, __m512 *lo, __m512 *hi) {
	__m512i h = _mm512_loadu_si512(p);
	*lo = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
	*hi = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
}

// k_tiles fills the Kᵀ tiles of groups g0 … g1-1 of a block: tile g·nck +
// c holds chunk c of the rows at[16g … 16g+15] (-1: a row of zeros), row
// i of it dword n being pair i of row n's chunk. Half rows of a multiple
// of 32 (every model's) take one load a chunk and no masks.
static BF16 void k_tiles(const void *kl, int kt, const int64_t *at, int d, int nck, int g0, int g1, uint16_t *kt_) {
	int whole = kt == KV_F16 && d % 32 == 0;
	for (int g = g0; g < g1; g++)
		for (int c = 0; c < nck; c++) {
			__m512 r[16]; // dword pairs, transposed as floats' bits
			for (int n = 0; n < 16; n++) {
				int64_t a = at[16 * g + n];
				if (a < 0) {
					r[n] = _mm512_setzero_ps();
				} else if (whole) {
					__m512 lo, hi;
					halves32((const uint16_t *)kl + a + 32 * c, &lo, &hi);
					r[n] = (__m512)_mm512_cvtne2ps_pbh(hi, lo);
				} else
					r[n] = _mm512_castsi512_ps(chunk32(kl, kt, a, 32 * c, d));
			}
			transpose16(r);
			uint16_t *t = tile_at(kt_, (int64_t)g * nck + c);
			for (int i = 0; i < 16; i++)
				_mm512_store_ps(t + 32 * i, r[i]);
		}
}

// v_tiles fills the V tiles of chunks c0 … c1-1 of a block: tile ch·ncv +
// jt holds, in row i, columns 16jt … 16jt+15 of the rows at[32ch + 2i] and
// at[32ch + 2i + 1] as pairs.
static BF16 void v_tiles(const void *vl, int kt, const int64_t *at, int d, int ncv, int c0, int c1, uint16_t *vv) {
	const __m512 z = _mm512_setzero_ps();
	int whole = kt == KV_F16 && d % 32 == 0;
	for (int ch = c0; ch < c1; ch++)
		for (int i = 0; i < 16; i++) {
			int64_t a = at[32 * ch + 2 * i], b = at[32 * ch + 2 * i + 1];
			uint16_t *t = tile_at(vv, (int64_t)ch * ncv) + 32 * i;
			if (whole && a >= 0 && b >= 0) { // 32 columns of each row a load
				const uint16_t *ra = (const uint16_t *)vl + a, *rb = (const uint16_t *)vl + b;
				for (int j = 0; j < d; j += 32) {
					__m512 a0, a1, b0, b1;
					halves32(ra + j, &a0, &a1);
					halves32(rb + j, &b0, &b1);
					_mm512_store_si512(t + 512 * (j / 16), pairs16(a0, b0));
					_mm512_store_si512(t + 512 * (j / 16 + 1), pairs16(a1, b1));
				}
				continue;
			}
			for (int jt = 0; jt < ncv; jt++) {
				__m512 va = a < 0 ? z : elems16(vl, kt, a, 16 * jt, d);
				__m512 vb = b < 0 ? z : elems16(vl, kt, b, 16 * jt, d);
				_mm512_store_si512(tile_at(vv, (int64_t)ch * ncv + jt) + 32 * i, pairs16(va, vb));
			}
		}
}

// exp2c is 2^t within 1.1e-4 (a cubic fit to 2^f on |f| ≤ 1/2, then
// scalef; 0 far below 2^-126, as scalef goes): enough for weights rounded
// to bfloat16 next, at half exp512's work.
INLINE BF16 __m512 exp2c(__m512 t) {
	__m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), f = _mm512_sub_ps(t, n);
	__m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0x1.c2a284p-5f), f, _mm512_set1_ps(0x1.f00c5cp-3f));
	p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0x1.62f5fap-1f));
	return _mm512_scalef_ps(_mm512_fmadd_ps(p, f, _mm512_set1_ps(1.f)), n);
}

// span is the part of a block a unit reads: positions b0+16·g0 … of groups
// g0 … g1-1 (their Kᵀ tiles and S's columns hold them), within chunks
// c0 … c1-1 (V tiles and P), which may begin or end with a group outside.
typedef struct {
	int b0, g0, g1, c0, c1;
} span;

// softmax_row turns the span's scores in row S (of a query at limit lim
// and window start low) into its P row (bfloat16s; 0 where masked) and
// steps the query's m and its 16 lanes of l; it returns e^(m - m'). Scores
// outside g0 … g1-1 are stale: the masks leave them out, as every position
// there is before the query's window start or past its limit.
static BF16 float softmax_row(const float *S, uint16_t *P, span b, int lim, int low, float scale, float cap,
                               float *m, float *l) {
	int k0 = 2 * b.c0, k1 = 2 * b.c1; // vectors of 16 positions
	int first = b.b0 + 16 * k0, last = b.b0 + 16 * k1 - 1;
	if (lim < first || last < low) { // nothing in the span is the query's
		memset(P + 16 * k0, 0, 32 * (k1 - k0));
		return 1.f;
	}
	float sc[akb] __attribute__((aligned(64)));
	if (cap > 0) { // cap·tanh(s/cap)·scale, and no scale after
		memcpy(sc + 16 * k0, S + 16 * k0, 64 * (k1 - k0));
		softcap_scores(sc + 16 * k0, 16 * (k1 - k0), cap, scale);
		S = sc, scale = 1.f;
	}
	const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	const __m512i limv = _mm512_set1_epi32(lim), lowv = _mm512_set1_epi32(low);
	int full = first >= low && last <= lim;
	__mmask16 ok[akb / 16];
	__m512 mx = _mm512_set1_ps(-__builtin_inff());
	for (int k = k0; k < k1; k++) {
		__m512i pv = _mm512_add_epi32(iota, _mm512_set1_epi32(b.b0 + 16 * k));
		ok[k] = full ? 0xffff : _mm512_cmple_epi32_mask(pv, limv) & _mm512_cmple_epi32_mask(lowv, pv);
		mx = _mm512_mask_max_ps(mx, ok[k], mx, _mm512_load_ps(S + 16 * k));
	}
	// The scale is positive: the max of the scaled scores is the scaled max.
	float mo = *m, bm = _mm512_reduce_max_ps(mx) * scale, mn = bm > mo ? bm : mo;
	// e^(scale·s - m') as 2^(s·scale·log2 e - m'·log2 e): one multiply-add
	// before the power of 2.
	const float log2e = 0x1.715476p+0f;
	__m512 c = _mm512_set1_ps(scale * log2e), ml = _mm512_set1_ps(mn * log2e), t = _mm512_setzero_ps();
	const __m512bh ones = (__m512bh)_mm512_set1_epi32(0x3f803f80); // bfloat16 1s
	for (int k = k0; k < k1; k += 2) {
		__m512 e0 = _mm512_maskz_mov_ps(ok[k], exp2c(_mm512_fmsub_ps(_mm512_load_ps(S + 16 * k), c, ml)));
		__m512 e1 = _mm512_maskz_mov_ps(ok[k + 1], exp2c(_mm512_fmsub_ps(_mm512_load_ps(S + 16 * k + 16), c, ml)));
		__m512bh p = _mm512_cvtne2ps_pbh(e1, e0);
		_mm512_store_si512(P + 16 * k, (__m512i)p);
		t = _mm512_dpbf16_ps(t, p, ones);
	}
	// l sums P as rounded (the weights of P · V), lane by lane, in a fixed
	// order; e^(m - m') is 1 where the max stayed, 0 where nothing was read
	// before (m = -inf, l and o 0), and 1 while nothing at all was.
	float a = mo == mn ? 1.f : expf(mo - mn);
	_mm512_store_ps(l, _mm512_fmadd_ps(_mm512_load_ps(l), _mm512_set1_ps(a), t));
	*m = mn;
	return a;
}

// sm is a tile of queries' softmax in a pipeline step: its scores S and P
// rows, the first query q0, and its rows of O (dvp floats apart).
typedef struct {
	const float *S;
	uint16_t *P;
	float *O;
	int q0;
} sm;

// unit is what a unit's steps share.
typedef struct {
	span b;
	int nq, g, pos0, lo, win, dvp;
	float scale, cap, *m, *l;
} unit;

// softmax_rows runs softmax_row over rows r0 … r1-1 of t (P rows past nq
// are 0) and rescales their rows of O.
static BF16 void softmax_rows(const unit *u, sm t, int r0, int r1) {
	for (int i = r0; i < r1; i++) {
		int qi = t.q0 + i;
		if (qi >= u->nq) {
			memset(t.P + akb * i + 32 * u->b.c0, 0, 64 * (u->b.c1 - u->b.c0));
			continue;
		}
		int lim = u->pos0 + qi / u->g, low = u->win > 0 && lim - u->win + 1 > u->lo ? lim - u->win + 1 : u->lo;
		float a = softmax_row(t.S + akb * i, t.P + akb * i, u->b, lim, low, u->scale, u->cap, u->m + qi, u->l + 16 * qi);
		if (a != 1.f)
			for (int j = 0; j < u->dvp; j += 16)
				_mm512_store_ps(t.O + (int64_t)i * u->dvp + j,
				                _mm512_mul_ps(_mm512_load_ps(t.O + (int64_t)i * u->dvp + j), _mm512_set1_ps(a)));
	}
}

// bf16_unit is a unit's scratch, laid out by bf16_begin, and the
// positions of the block at hand (at: each row's first element, -1 for a
// row outside the unit's reach).
typedef struct {
	int nq, nt, nck, ncv, dvp;
	uint16_t *qb, *kb, *vv, *P;
	float *S, *O, *l, *m;
	int64_t at[akb];
} bf16_unit;

// bf16_begin lays out a unit's scratch (attnScratchBF16 floats,
// attention_simd.go), in this order from the first 64-byte boundary: the
// query tiles (nt·nck), the Kᵀ tiles (akb/16·nck), the V tiles
// (akb/32·ncv), two P (16 × akb bfloat16s), two S (16 × akb), O (nqp ×
// dvp), l (16 lanes a query), m; and fills the query tiles (row qi % 16 of
// tile qi / 16·nck + c: chunk c of query qi), O, l, and m (the sinks'
// logits).
static BF16 void bf16_begin(bf16_unit *x, const float *q, int64_t qstride, int nr, int g, int d, const float *sinks,
                            float *scratch) {
	int nq = nr * g, nt = (nq + 15) / 16, nqp = 16 * nt, nck = (d + 31) / 32, ncv = (d + 15) / 16, dvp = 16 * ncv;
	x->nq = nq, x->nt = nt, x->nck = nck, x->ncv = ncv, x->dvp = dvp;
	x->qb = (uint16_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
	x->kb = tile_at(x->qb, (int64_t)nt * nck), x->vv = tile_at(x->kb, akb / 16 * nck);
	x->P = tile_at(x->vv, akb / 32 * ncv);
	x->S = (float *)(x->P + 2 * 16 * akb), x->O = x->S + 2 * 16 * akb, x->l = x->O + (int64_t)nqp * dvp;
	x->m = x->l + 16 * nqp;
	memset(x->qb, 0, (size_t)nt * nck * 1024);
	for (int qi = 0; qi < nq; qi++) {
		const float *src = q + (qi / g) * qstride + (qi % g) * d;
		for (int c = 0; c < nck; c++)
			_mm512_store_si512(tile_at(x->qb, (int64_t)(qi / 16) * nck + c) + 32 * (qi % 16),
			                   chunk32(src, KV_F32, 0, 32 * c, d));
	}
	memset(x->O, 0, sizeof(float) * nqp * dvp);
	memset(x->l, 0, sizeof(float) * 16 * nqp);
	for (int qi = 0; qi < nqp; qi++)
		x->m[qi] = sink_of(sinks, qi, nq, g);
}

// prefetch_kv asks L2 (l2) or L1 for the K and V rows p0 … p1-1 of head
// h, none if p0 ≥ p1.
static inline void prefetch_kv(int l2, const void *kl, const void *vl, int kt, const int32_t *blocks, int bs,
                               int kvheads, int h, int d, int p0, int p1) {
	if (p0 < p1) {
		prefetch_rows_to(l2, kl, kt, blocks, bs, kvheads, h, d, p0, p1, 0, d);
		prefetch_rows_to(l2, vl, kt, blocks, bs, kvheads, h, d, p0, p1, 0, d);
	}
}

// bf16_block readies the block of positions b0 … b0+akb-1 of a unit
// (ATTN_ARGS): it asks L2 for the next block's rows (32 KiB each of K and
// V at head size 64, read after all of this block's tiles), fills the
// block's Kᵀ and V tiles, and returns its span and the query tiles that
// read it in live (their count the result). A block past all of a tile's queries (the
// causal end of a prompt's first rows) or before their windows changes
// nothing for it.
static BF16 int bf16_block(bf16_unit *x, int b0, const void *kl, const void *vl, int kt, const int32_t *blocks, int bs,
                           int kvheads, int h, int g, int d, int pos0, int n, int lo, int win, span *sp, int *live) {
	int p0 = b0 > lo ? b0 : lo, p1 = n < b0 + akb ? n : b0 + akb;
	span b = {b0, (p0 - b0) / 16, (p1 - b0 + 15) / 16, (p0 - b0) / 32, (p1 - b0 + 31) / 32};
	prefetch_kv(1, kl, vl, kt, blocks, bs, kvheads, h, d, p1, p1 + akb < n ? p1 + akb : n);
	int64_t *at = x->at;
	for (int i = 32 * b.c0; i < 32 * b.c1; i++)
		at[i] = -1;
	for (int p = p0, left = 0; p < p1; p++, left--) { // runs of rows d apart, to the end of p's block
		if (left == 0)
			at[p - b0] = kv_at(blocks, bs, kvheads, h, d, p), left = bs - p % bs;
		else
			at[p - b0] = at[p - b0 - 1] + d;
	}
	// A chunk of 32 positions at a time, its K rows and V rows, asking L1
	// for the next chunk's rows and L2 for the fourth's (the first rows of
	// a decode unit were asked for by folio_attention): decode converts a
	// few microseconds' worth of rows per block, too soon for the block
	// ahead to have come.
	for (int ch = b.c0; ch < b.c1; ch++) {
		int next = b0 + 32 * (ch + 1), fourth = b0 + 32 * (ch + 4);
		prefetch_kv(0, kl, vl, kt, blocks, bs, kvheads, h, d, next, next + 32 < n ? next + 32 : n);
		prefetch_kv(1, kl, vl, kt, blocks, bs, kvheads, h, d, fourth, fourth + 32 < n ? fourth + 32 : n);
		k_tiles(kl, kt, at, d, x->nck, 2 * ch > b.g0 ? 2 * ch : b.g0, 2 * ch + 2 < b.g1 ? 2 * ch + 2 : b.g1, x->kb);
		v_tiles(vl, kt, at, d, x->ncv, ch, ch + 1, x->vv);
	}
	int nl = 0;
	for (int t = 0; t < x->nt; t++) {
		int q0 = 16 * t, rows = x->nq - q0 < 16 ? x->nq - q0 : 16;
		int limhi = pos0 + (q0 + rows - 1) / g, lowlo = pos0 + q0 / g - win + 1;
		if (!(p0 > limhi || (win > 0 && p1 - 1 < lowlo)))
			live[nl++] = t;
	}
	*sp = b;
	return nl;
}

// bf16_end writes out = o / (l + e^(sink - m)), a query without a sink
// adding 0.
static BF16 void bf16_end(const bf16_unit *x, int64_t qstride, int g, int d, const float *sinks, float *out) {
	for (int qi = 0; qi < x->nq; qi++) {
		float sk = sink_of(sinks, qi, x->nq, g), sum = _mm512_reduce_add_ps(_mm512_load_ps(x->l + 16 * qi));
		if (sk > -__builtin_inff())
			sum += expf(sk - x->m[qi]);
		float r = 1.f / sum, *dst = out + (qi / g) * qstride + (qi % g) * d;
		const float *o = x->O + (int64_t)qi * x->dvp;
		for (int j = 0; j < d; j += 16)
			_mm512_mask_storeu_ps(dst + j, tail16(d - j), _mm512_mul_ps(_mm512_load_ps(o + j), _mm512_set1_ps(r)));
	}
}

#endif
