//go:build amd64 && cgo

// Causal paged attention for one unit of work: nr consecutive query rows of
// one sequence and one K/V head with its g query heads, nq = nr·g queries.
// Query qi is head qi % g of row qi / g, at position lim_qi = pos0 + qi / g,
// and attends to positions low_qi … its own: 0 …, or with a sliding
// window win, lim_qi-win+1 …. The unit reads positions lo … pos0+nr-1 only
// (lo is the first row's low), so the blocks before a window are never
// touched; with a soft-cap the raw q·k is capped before the scale.
// Position p's K/V is at element ((blocks[p/bs]·kvheads + h)·bs + p%bs)·d
// of the layer's K and V, of kind kt: float32, halves, or Q8_0 blocks (34
// bytes for 32 elements, d a multiple of 32), which decode to float32
// exactly (quant times scale), so a Q8_0 cache's attention is the float32
// one over the values it holds.
//
// The kernels are flash attention over blocks of attnKB positions with an
// online softmax (simd_attn_avx2.c, simd_attn_avx512.c): the queries in
// the lanes of vectors, each K and V row converted once for all of them.
// This file holds the AVX-512 one for a single row (decode), positions in
// the lanes, and folio_attention. Each query's sums run in the same order
// whatever the tile it is in (over j, then over p, rescaled at the same
// blocks), so a token's attention is bit for bit the same alone (decode)
// or in a prompt: with activations quantized to 8 bits, the least
// difference could flip a quant. attnScratch sizes the scratch.

#include "simd_attn.h"

// ---- AVX-512

// exp512 is e^x (ggml's ggml_v_expf, within 1.5 ulp): 0 below e^-104,
// +inf above e^89.
AVX512 __m512 exp512(__m512 x) {
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.f)), _mm512_set1_ps(89.f));
	const __m512 r = _mm512_set1_ps(0x1.8p23f);
	__m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
	__m512 n = _mm512_sub_ps(z, r);
	__m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
	__m512 u = _mm512_mul_ps(b, b);
	__m512 j = _mm512_fmadd_ps(
		_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
	                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
		u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.f)));
	return _mm512_scalef_ps(j, n);
}

// krow512 loads elements at… (masked by m) of a K or V row as floats. A
// Q8_0 row has no tail (d is a multiple of 32): its mask is all or none.
static inline AVX512 __m512 krow512(const void *base, int kt, int64_t at, __mmask16 m) {
	if (kt == KV_Q8)
		return m ? q8x16_512(base, at) : _mm512_setzero_ps();
	if (kt == KV_F16)
		return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)base + at));
	return _mm512_maskz_loadu_ps(m, (const float *)base + at);
}

// ---- AVX-512, one row (decode) of g ≤ 8 query heads
//
// With one row the lanes of the tiles above hold only g queries (3 for
// smollm), so most of their work is padding. Here positions fill the
// lanes instead: K rows are transposed 16 at a time (F16 ones as halves),
// so that each score is still one FMA chain over j in order, then times
// scale. The values take each V row once for all g queries, converted in
// registers, and sum the exponentials on the way. The softmax and value
// sums run in the same order as above: the results equal the tiles' bit
// for bit (TestAttentionDecodeEqualsPrefill). Scores are query-major,
// S1[qi·ns + p], ns = n rounded up to 16.

// ktile512 transposes the np ≤ 16 rows of K starting at element at (rows
// d apart) into kt[j·16 + i] = row i's element j, zero past np.
static inline AVX512 void ktile512(const void *kl, int kk, int64_t at, int np, int d, float *kt) {
	for (int j0 = 0; j0 < d; j0 += 16) {
		int dc = d - j0 < 16 ? d - j0 : 16;
		__mmask16 m = tail16(dc);
		__m512 r[16];
		for (int i = 0; i < 16; i++)
			r[i] = i < np ? krow512(kl, kk, at + (int64_t)i * d + j0, m) : _mm512_setzero_ps();
		transpose16(r);
		for (int c = 0; c < dc; c++)
			_mm512_storeu_ps(kt + (int64_t)(j0 + c) * 16, r[c]);
	}
}

// ktile8_512 is ktile512 for Q8_0 K: each row's 16 elements decoded in
// registers (quant times its block's scale, as krow512) and transposed,
// 16 rows at a time; rows past np are zero and not read. The 16 rows'
// scales of a block are decoded once for its two chunks.
static inline AVX512 void ktile8_512(const void *kl, int64_t at, int np, int d, float *kt) {
	const uint8_t *base = (const uint8_t *)kl + (at >> 5) * Q8_0_BYTES;
	int64_t rowb = d / 32 * Q8_0_BYTES;
	float sc[16];
	for (int j0 = 0; j0 < d; j0 += 16) {
		if ((j0 & 31) == 0)
			for (int i = 0; i < 16; i++) {
				uint16_t h = 0;
				if (i < np)
					memcpy(&h, base + i * rowb + (j0 >> 5) * Q8_0_BYTES, 2);
				sc[i] = _cvtsh_ss(h);
			}
		__m512 r[16];
		UNROLL for (int i = 0; i < 16; i++) {
			r[i] = _mm512_setzero_ps();
			if (i < np) {
				const uint8_t *qs = base + i * rowb + (j0 >> 5) * Q8_0_BYTES + 2 + (j0 & 31);
				__m512 q = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)qs)));
				r[i] = _mm512_mul_ps(q, _mm512_set1_ps(sc[i]));
			}
		}
		transpose16(r);
		UNROLL for (int c = 0; c < 16; c++)
			_mm512_storeu_ps(kt + (int64_t)(j0 + c) * 16, r[c]);
	}
}

// ktile16_512 is ktile512 for F16 K, transposed as halves (half the
// shuffles of floats): kt[j·16 + i] = row i's element j for j < d rounded
// up to 32, zero past np rows or d. The score loop converts each column.
static inline AVX512 void ktile16_512(const uint16_t *k, int np, int d, uint16_t *kt) {
	const __m512i lo = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), hi = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
	for (int j0 = 0; j0 < d; j0 += 32) {
		__mmask32 m = d - j0 >= 32 ? ~0u : (1u << (d - j0)) - 1;
		__m512i r[16], a[16];
		for (int i = 0; i < 16; i++)
			r[i] = i < np ? _mm512_maskz_loadu_epi16(m, k + (int64_t)i * d + j0) : _mm512_setzero_si512();
		// In each 128-bit lane L (columns 8L … 8L+7): a[i], a[i+1] hold
		// columns 0-3 and 4-7 of rows i, i+1 interleaved (i even) …
		for (int i = 0; i < 16; i += 2) {
			a[i] = _mm512_unpacklo_epi16(r[i], r[i + 1]);
			a[i + 1] = _mm512_unpackhi_epi16(r[i], r[i + 1]);
		}
		// … r[i+c] columns 2c, 2c+1 of rows i … i+3 (i a multiple of 4) …
		for (int i = 0; i < 16; i += 4) {
			r[i] = _mm512_unpacklo_epi32(a[i], a[i + 2]);
			r[i + 1] = _mm512_unpackhi_epi32(a[i], a[i + 2]);
			r[i + 2] = _mm512_unpacklo_epi32(a[i + 1], a[i + 3]);
			r[i + 3] = _mm512_unpackhi_epi32(a[i + 1], a[i + 3]);
		}
		// … a[c] column c of rows 0-7, a[8+c] of rows 8-15.
		for (int c = 0; c < 4; c++) {
			a[2 * c] = _mm512_unpacklo_epi64(r[c], r[4 + c]);
			a[2 * c + 1] = _mm512_unpackhi_epi64(r[c], r[4 + c]);
			a[8 + 2 * c] = _mm512_unpacklo_epi64(r[8 + c], r[12 + c]);
			a[8 + 2 * c + 1] = _mm512_unpackhi_epi64(r[8 + c], r[12 + c]);
		}
		// Rows 0-7 and 8-15 of a column side by side: columns c, 8+c
		// (lanes 0, 1 of a[c]) and 16+c, 24+c (lanes 2, 3).
		for (int c = 0; c < 8; c++) {
			__m512i x = _mm512_permutex2var_epi64(a[c], lo, a[8 + c]), y = _mm512_permutex2var_epi64(a[c], hi, a[8 + c]);
			uint16_t *o = kt + (int64_t)(j0 + c) * 16;
			_mm256_storeu_si256((__m256i *)o, _mm512_castsi512_si256(x));
			_mm256_storeu_si256((__m256i *)(o + 8 * 16), _mm512_extracti64x4_epi64(x, 1));
			_mm256_storeu_si256((__m256i *)(o + 16 * 16), _mm512_castsi512_si256(y));
			_mm256_storeu_si256((__m256i *)(o + 24 * 16), _mm512_extracti64x4_epi64(y, 1));
		}
	}
}

// scores1_512 sets S1[qi·ns + p] for the T tiles of transposed K rows in
// kt (tstride floats or halves apart) at positions p0[t]…: for each query
// of G, its FMA chain over j, with T·G chains in flight.
INLINE AVX512 void scores1_512(const float *q, int G, int T, int d, const void *kt, int f16, int64_t tstride,
                               const int *p0, const int *np, __m512 sv, float *S1, int64_t ns) {
	__m512 acc[4][8];
	for (int t = 0; t < T; t++)
		for (int qi = 0; qi < G; qi++)
			acc[t][qi] = _mm512_setzero_ps();
	for (int j = 0; j < d; j++)
		for (int t = 0; t < T; t++) {
			__m512 kv = f16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)kt + t * tstride + j * 16)))
			                : _mm512_loadu_ps((const float *)kt + t * tstride + j * 16);
			for (int qi = 0; qi < G; qi++)
				acc[t][qi] = _mm512_fmadd_ps(kv, _mm512_set1_ps(q[qi * d + j]), acc[t][qi]);
		}
	for (int t = 0; t < T; t++)
		for (int qi = 0; qi < G; qi++)
			_mm512_mask_storeu_ps(S1 + qi * ns + p0[t], tail16(np[t]), _mm512_mul_ps(acc[t][qi], sv));
}

// values1_512 sets out_qi = o_qi · inv[qi] for G queries, o_qi being the
// flash kernel's o (simd_attn_avx512.c) over p in lo … n-1: at each block
// of attnKB positions o = o·A[qi·nb + b] (the block's e^(m - m')), then
// Σ_p S1[qi·ns + p-lo]·V[p], an FMA chain over p in order. It takes the
// 16-float chunks c0 … c0+CW-1 of each V row (a mask of 0 past d). With
// sum, it first sets inv[qi] to 1/(l_qi + sink[qi]), l as the flash
// kernel's (sink: each query's e^(sink - m), or 0).
INLINE AVX512 void values1_512(float *out, int G, int CW, int c0, int sum, int full, int d, const void *vl, int kt,
                               const int32_t *blocks, int bs, int kvheads, int h, int lo, int n, const float *S1,
                               int64_t ns, const float *A, int nb, const float *sink, float *inv) {
	__mmask16 m[4];
	UNROLL for (int c = 0; c < CW; c++) {
		int left = d - 16 * (c0 + c);
		m[c] = left <= 0 ? 0 : tail16(left);
	}
	__m512 acc[8][4], sv[8];
	UNROLL for (int qi = 0; qi < G; qi++) {
		sv[qi] = _mm512_setzero_ps();
		UNROLL for (int c = 0; c < CW; c++)
			acc[qi][c] = _mm512_setzero_ps();
	}
	float l[8] = {0};
	// One loop over p (not blocks, then rows), which keeps gcc from
	// spilling the accumulators every row.
	int64_t at = 0;
	for (int p = lo, left = 0, kleft = 0, b = -1; p < n; p++, left--, kleft--, at += d) {
		if (kleft == 0) { // a block of the online softmax: l and o rescaled
			kleft = attnKB - p % attnKB, b++;
			UNROLL for (int qi = 0; qi < G; qi++) {
				__m512 a = _mm512_set1_ps(A[qi * nb + b]);
				if (sum && b > 0) {
					l[qi] = _mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(l[qi]), _mm_set_ss(A[qi * nb + b - 1]),
					                                   _mm512_castps512_ps128(sv[qi])));
					sv[qi] = _mm512_setzero_ps();
				}
				UNROLL for (int c = 0; c < CW; c++)
					acc[qi][c] = _mm512_mul_ps(acc[qi][c], a);
			}
		}
		if (left == 0) {
			at = kv_at(blocks, bs, kvheads, h, d, p) + 16 * c0, left = bs - p % bs;
			if (p + vAhead < n) {
				int e = p + vAhead + bs;
				prefetch_rows(vl, kt, blocks, bs, kvheads, h, d, p + vAhead, e < n ? e : n, 16 * c0,
				              16 * (c0 + CW) < d ? 16 * (c0 + CW) : d);
			}
		}
		__m512 v[4];
		if (full && kt == KV_Q8 && (c0 & 1) == 0) { // chunks 2i and 2i+1 share a block and its scale
			UNROLL for (int c = 0; c < CW; c += 2) {
				const uint8_t *blk = (const uint8_t *)vl + ((at + 16 * c) >> 5) * Q8_0_BYTES;
				uint16_t hs;
				memcpy(&hs, blk, 2);
				__m512 sc = _mm512_set1_ps(_cvtsh_ss(hs));
				v[c] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)))), sc);
				if (c + 1 < CW)
					v[c + 1] = _mm512_mul_ps(
						_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 18)))), sc);
			}
		} else
		UNROLL for (int c = 0; c < CW; c++)
			if (full && kt == KV_F16)
				v[c] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)vl + at + 16 * c)));
			else if (full && kt == KV_F32)
				v[c] = _mm512_loadu_ps((const float *)vl + at + 16 * c);
			else
				v[c] = krow512(vl, kt, at + 16 * c, m[c]);
		UNROLL for (int qi = 0; qi < G; qi++) {
			__m512 s = _mm512_set1_ps(S1[qi * ns + p - lo]);
			if (sum)
				sv[qi] = _mm512_add_ps(sv[qi], s);
			UNROLL for (int c = 0; c < CW; c++)
				acc[qi][c] = _mm512_fmadd_ps(s, v[c], acc[qi][c]);
		}
	}
	UNROLL for (int qi = 0; qi < G; qi++) {
		if (sum)
			inv[qi] = 1.f / (_mm_cvtss_f32(_mm_fmadd_ss(_mm_set_ss(l[qi]), _mm_set_ss(A[qi * nb + nb - 1]),
			                                             _mm512_castps512_ps128(sv[qi]))) +
			                 sink[qi]);
		UNROLL for (int c = 0; c < CW; c++)
			_mm512_mask_storeu_ps(out + qi * d + 16 * (c0 + c), m[c], _mm512_mul_ps(acc[qi][c], _mm512_set1_ps(inv[qi])));
	}
}

// values1g_512 is values1_512 over all of d for G queries, CW chunks at a
// time (G·CW accumulators); kt and full (no chunk past d) are constants
// in each copy of the loop.
INLINE AVX512 void values1g_512(float *out, int G, int CW, int d, const void *vl, int kt, const int32_t *blocks, int bs,
                                int kvheads, int h, int lo, int n, const float *S1, int64_t ns, const float *A, int nb,
                                const float *sink) {
	float inv[8];
#define V1ALL(KT, FULL)                                                                                                    \
	do {                                                                                                               \
		values1_512(out, G, CW, 0, 1, FULL, d, vl, KT, blocks, bs, kvheads, h, lo, n, S1, ns, A, nb, sink, inv);   \
		for (int c0 = CW; 16 * c0 < d; c0 += CW)                                                                   \
			values1_512(out, G, CW, c0, 0, FULL, d, vl, KT, blocks, bs, kvheads, h, lo, n, S1, ns, A, nb, sink, inv); \
	} while (0)
	int full = d % (16 * CW) == 0;
	if (kt == KV_Q8 && full)
		V1ALL(KV_Q8, 1);
	else if (kt == KV_Q8)
		V1ALL(KV_Q8, 0);
	else if (kt == KV_F16 && full)
		V1ALL(KV_F16, 1);
	else if (kt == KV_F16)
		V1ALL(KV_F16, 0);
	else if (full)
		V1ALL(KV_F32, 1);
	else
		V1ALL(KV_F32, 0);
#undef V1ALL
}

// attn1_avx512 attends one row at position n-1 to positions lo … n-1.
static AVX512 void attn1_avx512(const float *q, int g, int d, const void *kl, const void *vl, int kk,
                                const int32_t *blocks, int bs, int kvheads, int h, int lo, int n, float scale,
                                float cap, const float *sinks, float *out, float *scratch) {
	int m = n - lo; // positions read
	int64_t ns = (m + 15) & ~15;
	// kt: T tiles of 16 transposed K rows (tstride floats, or halves: d
	// rounded up to 32 for F16 K; Q8_0 K is decoded into floats), then S1:
	// g·ns floats, then A: g·nb floats for the nb blocks of attnKB
	// positions the row reads (attnScratch).
	int T = g <= 4 ? 4 : 2, f16 = kk == KV_F16;
	int64_t tstride = f16 ? 16 * ((d + 31) & ~31) : 16 * d;
	float *kt = scratch, *S1 = scratch + (int64_t)T * 16 * (d > 16 ? d : 16), *A = S1 + g * ns;
	int nb = (n - 1) / attnKB - lo / attnKB + 1;
	const __m512 sv = _mm512_set1_ps(cap > 0 ? 1.f : scale); // a cap comes before the scale
	int p0s[4], nps[4], nt = 0;
	for (int b0 = lo / bs * bs; b0 < n; b0 += bs)
		for (int p0 = b0 > lo ? b0 : lo; p0 < n && p0 < b0 + bs; p0 += 16) {
			int np = n - p0 < 16 ? n - p0 : 16;
			np = b0 + bs - p0 < np ? b0 + bs - p0 : np;
			int64_t at = kv_at(blocks, bs, kvheads, h, d, p0);
			if (p0 + kAhead < n)
				prefetch_rows(kl, kk, blocks, bs, kvheads, h, d, p0 + kAhead,
				              p0 + kAhead + np < n ? p0 + kAhead + np : n, 0, d);
			if (f16)
				ktile16_512((const uint16_t *)kl + at, np, d, (uint16_t *)kt + nt * tstride);
			else if (kk == KV_Q8)
				ktile8_512(kl, at, np, d, kt + nt * tstride);
			else
				ktile512(kl, kk, at, np, d, kt + nt * tstride);
			p0s[nt] = p0 - lo, nps[nt] = np, nt++;
			if (nt == T || p0 + np >= n) {
#define S1T(G)                                                                                                      \
	f16 ? scores1_512(q, G, nt, d, kt, 1, tstride, p0s, nps, sv, S1, ns)                                         \
	    : scores1_512(q, G, nt, d, kt, 0, tstride, p0s, nps, sv, S1, ns)
				switch (g) {
				case 1: S1T(1); break;
				case 2: S1T(2); break;
				case 3: S1T(3); break;
				case 4: S1T(4); break;
				case 5: S1T(5); break;
				case 6: S1T(6); break;
				case 7: S1T(7); break;
				default: S1T(8); break;
				}
#undef S1T
				nt = 0;
			}
		}
	// Softmax, online over the flash kernel's blocks and with its
	// exponentials: block b's running max m' (the sink's logit to start),
	// e^(s - m'), and e^(m - m') in A; values1_512 sums them in order of
	// position and rescales as it does, then adds the sink's (sink[qi]).
	float sink[8];
	for (int qi = 0; qi < g; qi++) {
		float *s = S1 + qi * ns;
		if (cap > 0)
			softcap_scores(s, m, cap, scale);
		__m512 mo = _mm512_set1_ps(sink_of(sinks, qi, g, g));
		for (int b = 0, b0 = lo / attnKB * attnKB; b0 < n; b++, b0 += attnKB) {
			int p0 = (b0 > lo ? b0 : lo) - lo, p1 = (n < b0 + attnKB ? n : b0 + attnKB) - lo;
			__m512 mx = mo;
			for (int p = p0; p < p1; p += 16)
				mx = _mm512_mask_max_ps(mx, tail16(p1 - p), mx, _mm512_loadu_ps(s + p));
			mx = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
			A[qi * nb + b] = _mm512_cvtss_f32(exp512(_mm512_sub_ps(mo, mx)));
			for (int p = p0; p < p1; p += 16) {
				__mmask16 k = tail16(p1 - p);
				_mm512_mask_storeu_ps(s + p, k, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + p), mx)));
			}
			mo = mx;
		}
		sink[qi] = sinks && sinks[qi] > -__builtin_inff() ? _mm512_cvtss_f32(exp512(_mm512_sub_ps(_mm512_set1_ps(sinks[qi]), mo)))
		                                                  : 0.f;
	}
	// Values: G·CW accumulators, each V row converted once.
#define V1(G, CW) values1g_512(out, G, CW, d, vl, kk, blocks, bs, kvheads, h, lo, n, S1, ns, A, nb, sink)
	switch (g) {
	case 1: V1(1, 4); break;
	case 2: V1(2, 4); break;
	case 3: V1(3, 4); break;
	case 4: V1(4, 4); break;
	case 5: V1(5, 3); break;
	case 6: V1(6, 2); break;
	case 7: V1(7, 2); break;
	default: V1(8, 2); break;
	}
#undef V1
}

static AVX512 void attn_avx512(ATTN_ARGS) {
	if (nr == 1 && g <= 8)
		attn1_avx512(q, g, d, kl, vl, kt, blocks, bs, kvheads, h, lo, pos0 + 1, scale, cap, sinks, out, scratch);
	else
		folio_attn_avx512(q, qstride, nr, g, d, kl, vl, kt, blocks, bs, kvheads, h, pos0, lo, win, scale, cap, sinks,
		                  out, scratch);
}

// prefetch_first asks for the rows of a decode unit that the kernel reads
// before it asks for any itself: lo … n-1, at most kAhead (vAhead) of them.
static void prefetch_first(const void *kl, const void *vl, int kt, const int32_t *blocks, int bs, int kvheads, int h,
                           int d, int lo, int n) {
	prefetch_rows(kl, kt, blocks, bs, kvheads, h, d, lo, n - lo < kAhead ? n : lo + kAhead, 0, d);
	prefetch_rows(vl, kt, blocks, bs, kvheads, h, d, lo, n - lo < vAhead ? n : lo + vAhead, 0, d);
}

// first_read is the first position a tile at position pos reads: 0, or
// the start of its first row's window.
static inline int first_read(int pos, int window) {
	return window > 0 && pos - window + 1 > 0 ? pos - window + 1 : 0;
}

// folio_attention runs units lo … hi-1 of a: unit u is run u % a.parts of
// the query heads of K/V head u / a.parts % a.kvheads of tile u /
// (a.kvheads·a.parts). Each query's sums are the same in any run of
// heads (the kernels' order is per query), so parts only spreads a tile
// of few K/V heads over more threads, each reading its K/V. One call for
// many units spares a cgo call per unit, which is not small beside a
// decode unit's microsecond or less.
void folio_attention(int level, folio_attn a, int lo, int hi) {
	// The kernel: the bfloat16 ones over half and Q8_0 caches at amx and
	// avx512bf16 (simd_attn_bf16.h), else float32 at the level's width.
	void (*kern)(ATTN_ARGS) = level == LEVEL_AMX && a.kt != KV_F32          ? folio_attn_amx
	                          : level == LEVEL_AVX512BF16 && a.kt != KV_F32 ? folio_attn_bf16
	                          : level >= LEVEL_AVX512                       ? attn_avx512
	                                                                        : folio_attn_avx2;
	int per = a.kvheads * a.parts, g = a.g / a.parts;
	for (int u = lo; u < hi; u++) {
		const folio_tile *t = a.tiles + u / per;
		int h = u % per / a.parts, j0 = h * a.g + u % a.parts * g; // the run's first query head
		// The first rows of a decode unit's K and V (the kernel asks for the
		// others on the way), for the next unit while this one computes.
		int first = first_read(t->pos, a.window);
		if (u == lo && t->rows == 1)
			prefetch_first(a.kl, a.vl, a.kt, a.blocks + t->blocks, a.bs, a.kvheads, h, a.d, first, t->pos + 1);
		const folio_tile *tn = a.tiles + (u + 1) / per;
		if (u + 1 < hi && tn->rows == 1 && (u + 1) % a.parts == 0)
			prefetch_first(a.kl, a.vl, a.kt, a.blocks + tn->blocks, a.bs, a.kvheads, (u + 1) % per / a.parts, a.d,
			               first_read(tn->pos, a.window), tn->pos + 1);
		int64_t at = t->row * a.qstride + (int64_t)j0 * a.d;
		const float *sinks = a.sinks ? a.sinks + j0 : NULL; // the run's query heads'
		kern(a.q + at, a.qstride, t->rows, g, a.d, a.kl, a.vl, a.kt, a.blocks + t->blocks, a.bs, a.kvheads, h, t->pos,
		     first, a.window, a.scale, a.cap, sinks, a.out + at, a.scratch);
	}
}
