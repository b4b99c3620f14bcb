//go:build amd64 && cgo

// The attention kernel of the amx level over a half or Q8_0 K/V cache: the
// online softmax of simd_attn_avx512.c with its two products on AMX-BF16
// tiles (TDPBF16PS, float32 sums of bfloat16 products). For a block of
// akb positions B and a tile of 16 queries (rows of the tiles):
//
//	S[qi][p]  = q_qi · K[p]          Q (16 × 32 dims) times Kᵀ, a chunk of 32 dims at a time
//	m'_qi     = max(m_qi, scale·S[qi][p] over the p in B it reads)
//	P[qi][p]  = bf16(e^(scale·S[qi][p] - m'_qi)), 0 where masked
//	l_qi      = l_qi · e^(m_qi - m'_qi) + Σ_p P[qi][p]
//	o_qi      = o_qi · e^(m_qi - m'_qi) + P · V    (32 positions at a time)
//
// and at the end out_qi = o_qi / (l_qi + e^(sink_qi - m_qi)). Q, K, V and P
// are rounded to bfloat16 (8 significant bits) on the way into the tiles;
// sums are float32. Its error against the float32 kernels is that
// rounding's (attentionTolBF16 in the tests), which is why the amx level
// takes this kernel for half and Q8_0 caches only: a float32 cache asks for
// float32 attention and gets attn_avx512.
//
// Every query's arithmetic is its own row of the tiles, at positions laid
// out from multiples of akb whatever the unit: decode (one row) and prefill
// take this kernel alike and agree bit for bit, as the float32 kernels do.
// Positions a query does not read are 0 in P; rows of K and V outside the
// unit's reach are 0 in the tiles.
//
// Per block, the unit's K rows become Kᵀ tiles (a chunk of a row is 16
// pairs of dims, one dword each; 16 rows' chunks transposed as 16×16
// dwords) and its V rows V tiles (row r of a tile: the pairs of positions
// 2r, 2r+1 of 16 columns), shared by all of the unit's query tiles.
// Tiles: C 0-3 (S's four groups of 16 positions, or O's 16-column groups),
// A 4 (a chunk of Q, or of P), B 5-7.

#include "simd_attn.h"

#define AMXBF                                                                                            \
	__attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx512bf16," \
	                      "avx2,fma,f16c")))

// akb is the positions of a block (attnKBAMX in attention_simd.go):
// four groups of 16, two chunks of 32.
enum { akb = 64 };

// tile_at is tile i of a run of 1 KiB tiles (512 bfloat16s).
static inline uint16_t *tile_at(uint16_t *base, int64_t i) { return base + i * 512; }

// mask16 keeps the first left lanes (none for left ≤ 0).
static inline __mmask16 mask16(int left) { return left <= 0 ? 0 : tail16(left); }

// elems16 is elements j … j+15 of the row at element at of a K or V layer
// (or of queries: KV_F32) as floats, 0 from d on.
INLINE AMXBF __m512 elems16(const void *base, int kt, int64_t at, int j, int d) {
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
INLINE AMXBF __m512i chunk32(const void *base, int kt, int64_t at, int j, int d) {
	return (__m512i)_mm512_cvtne2ps_pbh(elems16(base, kt, at, j + 16, d), elems16(base, kt, at, j, d));
}

// pairs16 interleaves the bfloat16s of a and b: dword i is (a_i, b_i).
INLINE AMXBF __m512i pairs16(__m512 a, __m512 b) {
	__m512i lo = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(a));
	__m512i hi = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(b));
	return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

// transpose16 transposes 16 rows of 16 dwords: r[i] dword j becomes r[j]
// dword i.
INLINE AMXBF void transpose16(__m512i r[16]) {
	__m512i t[16], u[16];
	for (int i = 0; i < 16; i += 2) { // pairs of rows, dwords interleaved
		t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	for (int i = 0; i < 16; i += 4) { // u[i+k], lane L: column 4L+k of rows i … i+3
		u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
		u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
		u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
		u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
	}
	for (int k = 0; k < 4; k++) { // a 4×4 transpose of 128-bit lanes
		__m512i v0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44), v1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xee);
		__m512i v2 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44),
		        v3 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xee);
		r[k] = _mm512_shuffle_i32x4(v0, v2, 0x88);
		r[4 + k] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
		r[8 + k] = _mm512_shuffle_i32x4(v1, v3, 0x88);
		r[12 + k] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
	}
}

// k_tiles fills the Kᵀ tiles of a block: tile g·nck + c holds chunk c of
// the rows at[16g … 16g+15] (-1: a row of zeros), row i of it dword n
// being pair i of row n's chunk.
static AMXBF void k_tiles(const void *kl, int kt, const int64_t *at, int d, int nck, uint16_t *kt_) {
	for (int g = 0; g < akb / 16; g++)
		for (int c = 0; c < nck; c++) {
			__m512i r[16];
			for (int n = 0; n < 16; n++)
				r[n] = at[16 * g + n] < 0 ? _mm512_setzero_si512() : chunk32(kl, kt, at[16 * g + n], 32 * c, d);
			transpose16(r);
			uint16_t *t = tile_at(kt_, (int64_t)g * nck + c);
			for (int i = 0; i < 16; i++)
				_mm512_store_si512(t + 32 * i, r[i]);
		}
}

// v_tiles fills the V tiles of a block: tile ch·ncv + jt holds, in row i,
// columns 16jt … 16jt+15 of the rows at[32ch + 2i] and at[32ch + 2i + 1]
// as pairs.
static AMXBF void v_tiles(const void *vl, int kt, const int64_t *at, int d, int ncv, uint16_t *vv) {
	const __m512 z = _mm512_setzero_ps();
	for (int ch = 0; ch < akb / 32; ch++)
		for (int i = 0; i < 16; i++) {
			int64_t a = at[32 * ch + 2 * i], b = at[32 * ch + 2 * i + 1];
			for (int jt = 0; jt < ncv; jt++) {
				__m512 va = a < 0 ? z : elems16(vl, kt, a, 16 * jt, d);
				__m512 vb = b < 0 ? z : elems16(vl, kt, b, 16 * jt, d);
				_mm512_store_si512(tile_at(vv, (int64_t)ch * ncv + jt) + 32 * i, pairs16(va, vb));
			}
		}
}

// bf16_sum is the sum of the float32 values of the 32 bfloat16s in v.
INLINE AMXBF __m512 bf16_sum(__m512i v) {
	__m512 lo = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
	__m512 hi = _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32((int)0xffff0000u)));
	return _mm512_add_ps(lo, hi);
}

// softmax_row turns row S (akb raw scores of a query at limit lim and
// window start low, in a block from b0) into its P row (bf16) and steps
// the query's m and l; it returns e^(m - m').
static AMXBF float softmax_row(float *S, uint16_t *P, int b0, int lim, int low, float scale, float cap, float *m,
                               float *l) {
	if (lim < b0 || b0 + akb - 1 < low) { // the block is past the query: nothing changes
		memset(P, 0, 2 * akb);
		return 1.f;
	}
	if (cap > 0)
		softcap_scores(S, akb, cap, scale);
	const __m512 sv = _mm512_set1_ps(cap > 0 ? 1.f : scale), ninf = _mm512_set1_ps(-__builtin_inff());
	const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	int full = b0 >= low && b0 + akb - 1 <= lim;
	__m512 s[4], mx = ninf;
	__mmask16 ok[4];
	UNROLL for (int k = 0; k < 4; k++) {
		s[k] = _mm512_mul_ps(_mm512_loadu_ps(S + 16 * k), sv);
		if (full) {
			ok[k] = 0xffff;
		} else {
			__m512i pv = _mm512_add_epi32(iota, _mm512_set1_epi32(b0 + 16 * k));
			ok[k] = _mm512_cmple_epi32_mask(pv, _mm512_set1_epi32(lim)) &
			        _mm512_cmple_epi32_mask(_mm512_set1_epi32(low), pv);
		}
		mx = _mm512_mask_max_ps(mx, ok[k], mx, s[k]);
	}
	float mo = *m, bm = _mm512_reduce_max_ps(mx), mn = bm > mo ? bm : mo;
	__m512 mnv = _mm512_set1_ps(mn), t = _mm512_setzero_ps();
	UNROLL for (int k = 0; k < 4; k += 2) {
		__m512 e0 = _mm512_maskz_mov_ps(ok[k], exp512(_mm512_sub_ps(s[k], mnv)));
		__m512 e1 = _mm512_maskz_mov_ps(ok[k + 1], exp512(_mm512_sub_ps(s[k + 1], mnv)));
		__m512i p = (__m512i)_mm512_cvtne2ps_pbh(e1, e0);
		_mm512_storeu_si512(P + 16 * k, p);
		t = _mm512_add_ps(t, bf16_sum(p));
	}
	// The sum of the block's P as rounded (the weights of P · V), in a fixed
	// order; e^(m - m') is 1 where the max stayed, 0 where nothing was read
	// before (m = -inf, l and o 0), and 1 while nothing at all was.
	float a = mo == mn ? 1.f : expf(mo - mn);
	*l = *l * a + _mm512_reduce_add_ps(t);
	*m = mn;
	return a;
}

// amx_attn_config sets every tile to 16 rows of 64 bytes.
static AMXBF void amx_attn_config(void) {
	tilecfg c;
	memset(&c, 0, sizeof c);
	c.palette = 1;
	for (int t = 0; t < 8; t++)
		c.colsb[t] = 64, c.rows[t] = 16;
	tile_config(&c);
}

// scores sets S (16 × akb floats) to query tile qt's raw q·k over the
// block's Kᵀ tiles.
static AMXBF void scores(const uint16_t *qt, const uint16_t *kt_, int nck, float *S) {
	_tile_zero(0);
	_tile_zero(1);
	_tile_zero(2);
	_tile_zero(3);
	for (int c = 0; c < nck; c++) {
		_tile_loadd(4, qt + 512 * c, 64);
		_tile_loadd(5, kt_ + 512 * c, 64);
		_tile_loadd(6, kt_ + 512 * (nck + c), 64);
		_tile_dpbf16ps(0, 4, 5);
		_tile_loadd(7, kt_ + 512 * (2 * nck + c), 64);
		_tile_dpbf16ps(1, 4, 6);
		_tile_loadd(5, kt_ + 512 * (3 * nck + c), 64);
		_tile_dpbf16ps(2, 4, 7);
		_tile_dpbf16ps(3, 4, 5);
	}
	_tile_stored(0, S, 4 * akb);
	_tile_stored(1, S + 16, 4 * akb);
	_tile_stored(2, S + 32, 4 * akb);
	_tile_stored(3, S + 48, 4 * akb);
}

// pv adds P · V to columns 16j0 … 16(j0+nj)-1 of O (16 rows, dvp floats
// apart), nj ≤ 4.
static AMXBF void pv(const uint16_t *P, const uint16_t *vv, int ncv, int j0, int nj, float *O, int dvp) {
	float *o = O + 16 * j0;
	int64_t os = 4 * (int64_t)dvp;
	_tile_loadd(0, o, os);
	if (nj > 1)
		_tile_loadd(1, o + 16, os);
	if (nj > 2)
		_tile_loadd(2, o + 32, os);
	if (nj > 3)
		_tile_loadd(3, o + 48, os);
	for (int ch = 0; ch < akb / 32; ch++) {
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
	_tile_stored(0, o, os);
	if (nj > 1)
		_tile_stored(1, o + 16, os);
	if (nj > 2)
		_tile_stored(2, o + 32, os);
	if (nj > 3)
		_tile_stored(3, o + 48, os);
}

// folio_attn_amx is the kernel of one unit (ATTN_ARGS, simd_attn.h); its
// scratch is attnScratchAMX floats (attention_simd.go), in this order from
// the first 64-byte boundary: the query tiles (nt·nck), the Kᵀ tiles
// (4·nck), the V tiles (2·ncv), P (16 × akb bfloat16s), S (16 × akb), O
// (nqp × dvp), m, l.
AMXBF void folio_attn_amx(ATTN_ARGS) {
	int nq = nr * g, nt = (nq + 15) / 16, nqp = 16 * nt, n = pos0 + nr;
	int nck = (d + 31) / 32, ncv = (d + 15) / 16, dvp = 16 * ncv;
	uint16_t *qb = (uint16_t *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
	uint16_t *kb = tile_at(qb, (int64_t)nt * nck), *vv = tile_at(kb, 4 * nck), *P = tile_at(vv, 2 * ncv);
	float *S = (float *)(P + 16 * akb), *O = S + 16 * akb, *m = O + (int64_t)nqp * dvp, *l = m + nqp;

	amx_attn_config();
	memset(qb, 0, (size_t)nt * nck * 1024);
	for (int qi = 0; qi < nq; qi++) {
		const float *src = q + (qi / g) * qstride + (qi % g) * d;
		for (int c = 0; c < nck; c++)
			_mm512_store_si512(tile_at(qb, (int64_t)(qi / 16) * nck + c) + 32 * (qi % 16),
			                   chunk32(src, KV_F32, 0, 32 * c, d));
	}
	memset(O, 0, sizeof(float) * nqp * dvp);
	for (int qi = 0; qi < nqp; qi++)
		m[qi] = sink_of(sinks, qi, nq, g), l[qi] = 0;

	int64_t at[akb];
	for (int b0 = lo / akb * akb; b0 < n; b0 += akb) {
		int p0 = b0 > lo ? b0 : lo, p1 = n < b0 + akb ? n : b0 + akb;
		if (p1 < n) { // the next block's rows, while this one computes
			int e = p1 + akb < n ? p1 + akb : n;
			prefetch_rows(kl, kt, blocks, bs, kvheads, h, d, p1, e, 0, d);
			prefetch_rows(vl, kt, blocks, bs, kvheads, h, d, p1, e, 0, d);
		}
		for (int i = 0; i < akb; i++)
			at[i] = b0 + i >= p0 && b0 + i < p1 ? kv_at(blocks, bs, kvheads, h, d, b0 + i) : -1;
		k_tiles(kl, kt, at, d, nck, kb);
		v_tiles(vl, kt, at, d, ncv, vv);
		for (int t = 0; t < nt; t++) {
			int q0 = 16 * t, rows = nq - q0 < 16 ? nq - q0 : 16;
			// A block past all of the tile's queries (the causal end of a
			// prompt's first rows) or before their windows changes nothing.
			int limhi = pos0 + (q0 + rows - 1) / g, lowlo = pos0 + q0 / g - win + 1;
			if (b0 > limhi || (win > 0 && b0 + akb - 1 < lowlo))
				continue;
			scores(tile_at(qb, (int64_t)t * nck), kb, nck, S);
			float alpha[16];
			int rescale = 0;
			for (int i = 0; i < 16; i++) {
				int qi = q0 + i;
				if (i >= rows) {
					memset(P + akb * i, 0, 2 * akb);
					alpha[i] = 1.f;
					continue;
				}
				int lim = pos0 + qi / g, low = win > 0 && lim - win + 1 > lo ? lim - win + 1 : lo;
				alpha[i] = softmax_row(S + akb * i, P + akb * i, b0, lim, low, scale, cap, m + qi, l + qi);
				rescale |= alpha[i] != 1.f;
			}
			float *o = O + (int64_t)q0 * dvp;
			if (rescale)
				for (int i = 0; i < rows; i++)
					if (alpha[i] != 1.f)
						for (int j = 0; j < dvp; j += 16)
							_mm512_storeu_ps(o + (int64_t)i * dvp + j,
							                 _mm512_mul_ps(_mm512_loadu_ps(o + (int64_t)i * dvp + j), _mm512_set1_ps(alpha[i])));
			for (int j0 = 0; j0 < ncv; j0 += 4)
				pv(P, vv, ncv, j0, ncv - j0 < 4 ? ncv - j0 : 4, o, dvp);
		}
	}
	_tile_release();

	// out = o / (l + e^(sink - m)), a query without a sink adding 0.
	for (int qi = 0; qi < nq; qi++) {
		float sk = sink_of(sinks, qi, nq, g), sum = l[qi];
		if (sk > -__builtin_inff())
			sum += expf(sk - m[qi]);
		float r = 1.f / sum, *dst = out + (qi / g) * qstride + (qi % g) * d;
		const float *o = O + (int64_t)qi * dvp;
		for (int j = 0; j < d; j += 16)
			_mm512_mask_storeu_ps(dst + j, tail16(d - j), _mm512_mul_ps(_mm512_loadu_ps(o + j), _mm512_set1_ps(r)));
	}
}
