//go:build amd64 && cgo

// Kernels over repacked Q4_0, Q5_0, Q4_K, Q5_K, Q6_K and Q8_0 weights (repack.go has the
// layout): one weight row per 32-bit lane, 16 rows a group, the
// activations broadcast four bytes at a time. vpdpbusd (AVX-512 VNNI,
// AVX-VNNI) or vpmaddubsw and vpmaddwd (AVX2) multiply a row's unsigned
// 4-bit quants by four signed 8-bit activations into its lane (Q8_0: with
// vpdpbusd its signed quants by four biased activations, at AVX2 their
// magnitudes by the activations with their signs); a block's scales are
// then one vector op for all 16 rows. Every row's sums are taken in the
// same order whatever the tile or the level, so a row's result does not
// depend on the rows computed with it. This file has the AVX-512 kernels
// and the dispatch; simd_packed256.h the 256-bit ones, compiled at AVX2
// and AVX-VNNI; simd_packed_f16.c F16's.

#include "simd.h"
#include "simd_mxfp4.h"

// ---- AVX-512: a group's 16 rows in one vector ----

// bitto_512 moves bit n (0-7) of each byte of h to bit t (the other bits
// are the caller's to mask); bit4_512 to bit 4: where the packed Q5_0 and
// Q5_K layouts keep their quants' fifth bits and Q6_K its fifth and sixth.
INLINE AVX512 __m512i bitto_512(__m512i h, int n, int t) {
	return n < t ? _mm512_slli_epi16(h, t - n) : n == t ? h : _mm512_srli_epi16(h, n - t);
}
INLINE AVX512 __m512i bit4_512(__m512i h, int n) { return bitto_512(h, n, 4); }

// Q4_0_TILE is the activation rows of a Q4_0 (or Q5_0) tile: the 8 vectors
// of a block's quants, its scales and one accumulator a row fit 32
// registers.
#define Q4_0_TILE 16

// pq40_512 adds the dot products of a Q4_0 group (nb blocks, quants at w,
// scales at w + 256·nb) with nx X4G activation rows into acc; with five,
// of a packed Q5_0 group (blocks of 320 bytes, scales after them): the
// same steps on 5-bit quants (0-31), each a nibble and its fifth bit
// joined by vpternlogd, and the activations' bias -8·Σq doubled.
// With one, the groups are Q4_1's or Q5_1's: no offset, and each block's
// min m (halves after the scales) adds m·dx·Σq, Σq = -bias/8.
INLINE AVX512 void pq40_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf,
                            int five, int one) {
	const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
	const int64_t bb = five ? 320 : 256; // a block's bytes before the scales
	const uint8_t *ds = w + bb * nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + bb * b;
		if (pf)
			mm_prefetch(wb + MM_PREFETCH, bb);
		__m512i lo[4], hi[4];
		for (int j = 0; j < 4; j++) {
			__m512i v = _mm512_load_si512(wb + 64 * j);
			lo[j] = _mm512_and_si512(v, m4);
			hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
			if (five) { // A | (B & C)
				__m512i h = _mm512_load_si512(wb + 256);
				lo[j] = _mm512_ternarylogic_epi32(lo[j], bit4_512(h, 2 * j), m10, 0xf8);
				hi[j] = _mm512_ternarylogic_epi32(hi[j], bit4_512(h, 2 * j + 1), m10, 0xf8);
			}
		}
		__m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ds + 32 * b)));
		__m512 mw = one ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ds + 32 * (nb + b)))) : dw;
		const uint8_t *xb = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
#pragma GCC unroll 16
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			int bias = (int)ld32(xp + 192); // -8·Σq
			__m512i s = _mm512_set1_epi32(one ? 0 : (five ? 2 : 1) * bias); // -8·Σq, -16·Σq
			for (int j = 0; j < 4; j++)
				s = _mm512_dpbusd_epi32(s, lo[j], _mm512_set1_epi32((int)ld32(xp + 4 * j)));
			for (int j = 0; j < 4; j++)
				s = _mm512_dpbusd_epi32(s, hi[j], _mm512_set1_epi32((int)ld32(xp + 64 + 4 * j)));
			float dx = ldf(xp + 128);
			acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), acc[i]);
			if (one)
				acc[i] = _mm512_fmadd_ps(mw, _mm512_set1_ps((float)(-bias / 8) * dx), acc[i]);
		}
	}
}

INLINE AVX512 void pq4_0_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pq40_512(w, nb, x, xs, nx, acc, pf, 0, 0);
}
INLINE AVX512 void pq5_0_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pq40_512(w, nb, x, xs, nx, acc, pf, 1, 0);
}
INLINE AVX512 void pq4_1_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pq40_512(w, nb, x, xs, nx, acc, pf, 0, 1);
}
INLINE AVX512 void pq5_1_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pq40_512(w, nb, x, xs, nx, acc, pf, 1, 1);
}

// pq40x2_512 sets acc[G·i + g] to the dot products of G (1 or 2) Q4_0
// groups, gb bytes apart, with nx X4G activation rows, for tiles of many
// rows: as pq8_0_512 does for Q8_0, one broadcast of four activations
// feeds both groups' vpdpbusd (pq4_0_512 broadcasts them for one group),
// and the accumulators stay in memory. A row's integer sum and its float
// steps are pq4_0_512's, so the two agree bit for bit. With five, the
// groups are Q5_0's and the sums pq5_0_512's.
INLINE AVX512 void pq40x2_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                              __m512 *acc, int pf, int five) {
	const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
	const int64_t bb = five ? 320 : 256; // a block's bytes before the scales
	for (int b = 0; b < nb; b++) {
		__m512i lo[2][4], hi[2][4];
		__m512 dw[2];
		for (int g = 0; g < G; g++) {
			const uint8_t *wg = w + g * gb, *wb = wg + bb * b;
			if (pf) {
				const uint8_t *p = wb + MM_PREFETCH;
				mm_prefetch(p < wg + gb ? p : p + (G - 1) * gb, bb);
			}
			for (int j = 0; j < 4; j++) {
				__m512i v = _mm512_load_si512(wb + 64 * j);
				lo[g][j] = _mm512_and_si512(v, m4);
				hi[g][j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
				if (five) { // A | (B & C)
					__m512i h = _mm512_load_si512(wb + 256);
					lo[g][j] = _mm512_ternarylogic_epi32(lo[g][j], bit4_512(h, 2 * j), m10, 0xf8);
					hi[g][j] = _mm512_ternarylogic_epi32(hi[g][j], bit4_512(h, 2 * j + 1), m10, 0xf8);
				}
			}
			dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wg + bb * nb + 32 * b)));
		}
		const uint8_t *xb = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m512i s[2];
			s[0] = s[1] = _mm512_set1_epi32((int)((five ? 2 : 1) * ld32(xp + 192))); // -8·Σq, -16·Σq
			for (int j = 0; j < 4; j++) {
				__m512i xj = _mm512_set1_epi32((int)ld32(xp + 4 * j));
				for (int g = 0; g < G; g++)
					s[g] = _mm512_dpbusd_epi32(s[g], lo[g][j], xj);
			}
			for (int j = 0; j < 4; j++) {
				__m512i xj = _mm512_set1_epi32((int)ld32(xp + 64 + 4 * j));
				for (int g = 0; g < G; g++)
					s[g] = _mm512_dpbusd_epi32(s[g], hi[g][j], xj);
			}
			__m512 dx = _mm512_set1_ps(ldf(xp + 128));
			for (int g = 0; g < G; g++)
				acc[G * i + g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g]), _mm512_mul_ps(dw[g], dx),
				                                 b ? acc[G * i + g] : _mm512_setzero_ps());
		}
	}
}

INLINE AVX512 void pq4_0x2_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                               __m512 *acc, int pf) {
	pq40x2_512(w, gb, G, nb, x, xs, nx, acc, pf, 0);
}
INLINE AVX512 void pq5_0x2_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                               __m512 *acc, int pf) {
	pq40x2_512(w, gb, G, nb, x, xs, nx, acc, pf, 1);
}

// q80_dw_512 is the 16 rows' scales of block b of a Q8_0's packed group
// of nb blocks at w, or of a table kind's (repack.go): halves (Q8_0,
// IQ4_NL), the super-block's half times the block's int8 (IQ4_XS: the
// float32 product gguf.Dequantize takes) or the E8M0 byte's power of two
// halved (MXFP4: gguf.E8M0Half, 2^-128 and 2^-127 subnormal).
INLINE AVX512 __m512 q80_dw_512(const uint8_t *w, int nb, int b, int kind) {
	const uint8_t *ds = w + (int64_t)(q80_lut(kind) ? 256 : 512) * nb;
	if (kind == KIND_IQ4_XS) {
		__m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ds + 32 * (b / 8))));
		__m128i sc = _mm_loadu_si128((const __m128i *)(ds + 32 * (nb / 8) + 16 * b));
		return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc)));
	}
	if (kind == KIND_MXFP4) {
		__m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(ds + 16 * b)));
		__m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
		__m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
		return _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, sub));
	}
	return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ds + 32 * b)));
}

// pq8_0_512 sets acc[G·i + g] to the dot products of G (1 or 2) Q8_0
// groups, gb bytes apart (nb blocks, quants at w + g·gb, scales 512·nb
// after them), with nx X8P activation rows: the first block's products
// start each sum (zeroing the tile first compiled to a rep stos, a
// measurable part of the kernel's time at 16 rows). The weights are the signed side:
// each sum starts at q8_bias512. With G = 2, one broadcast of four
// activations feeds both groups' vpdpbusd, and a row's two chains of 8
// interleave.
// For kind IQ4_NL, IQ4_XS or MXFP4 (q80_lut) the groups are in Q4_0's
// layout: a block's codes become its 8 vectors of int8 values by a byte
// shuffle of the kind's table, its scales q80_dw_512's.
INLINE AVX512 void pq80_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                            __m512 *acc, int pf, int kind) {
	const int lut = q80_lut(kind);
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const __m512i table =
	    _mm512_broadcast_i32x4(kind == KIND_MXFP4 ? _mm_setr_epi8(MXFP4_TABLE) : _mm_setr_epi8(IQ4NL_TABLE));
	const int64_t bb = lut ? 256 : 512; // a block's bytes before the scales
	for (int b = 0; b < nb; b++) {
		__m512i q[2][8], bias[2];
		__m512 dw[2];
		for (int g = 0; g < G; g++) {
			const uint8_t *wg = w + g * gb, *wb = wg + bb * b;
			if (pf) {
				// this group's stream, which past its end goes on
				// in the next pass's group g
				const uint8_t *p = wb + MM_PREFETCH;
				mm_prefetch(p < wg + gb ? p : p + (G - 1) * gb, bb);
			}
			for (int j = 0; j < (lut ? 4 : 8); j++) {
				__m512i v = _mm512_load_si512(wb + 64 * j);
				if (!lut) {
					q[g][j] = v;
					continue;
				}
				q[g][j] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, m4));
				q[g][4 + j] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
			}
			bias[g] = q8_bias512(q[g]);
			dw[g] = q80_dw_512(wg, nb, b, kind);
		}
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m512i s[2] = {bias[0], bias[1]};
			for (int j = 0; j < 8; j++) {
				__m512i xj = _mm512_set1_epi32((int)ld32(xp + 4 * j));
				for (int g = 0; g < G; g++)
					s[g] = _mm512_dpbusd_epi32(s[g], xj, q[g][j]);
			}
			__m512 dx = _mm512_set1_ps(ldf(xp + 64));
			for (int g = 0; g < G; g++)
				acc[G * i + g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[g]), _mm512_mul_ps(dw[g], dx),
				                                 b ? acc[G * i + g] : _mm512_setzero_ps());
		}
	}
}

INLINE AVX512 void pq8_0_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                             __m512 *acc, int pf) {
	pq80_512(w, gb, G, nb, x, xs, nx, acc, pf, KIND_Q8_0);
}
INLINE AVX512 void pq_iq4_nl_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                                 __m512 *acc, int pf) {
	pq80_512(w, gb, G, nb, x, xs, nx, acc, pf, KIND_IQ4_NL);
}
INLINE AVX512 void pq_iq4_xs_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                                 __m512 *acc, int pf) {
	pq80_512(w, gb, G, nb, x, xs, nx, acc, pf, KIND_IQ4_XS);
}
INLINE AVX512 void pq_mxfp4_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                                __m512 *acc, int pf) {
	pq80_512(w, gb, G, nb, x, xs, nx, acc, pf, KIND_MXFP4);
}

// Q8_0_TILE is the activation rows of a packed Q8_0 tile. Its
// accumulators stay in memory: a row's one or two are loaded and stored
// once a block, beside its 8 or 16 vpdpbusd.
#define Q8_0_TILE 64

// PAIRS512 is the body of a packed matmul of nx > 1 activation rows by
// kernel (pq8_0_512, pq4_0x2_512) over pairs of groups (32 rows), a last
// odd group alone, in tiles of Q8_0_TILE activation rows.
#define PAIRS512(kernel)                                                                                      \
	__m512 acc[2 * Q8_0_TILE];                                                                            \
	for (int r = 0; r < rows;) {                                                                          \
		const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes;                                      \
		int G = rows - r > 16 ? 2 : 1;                                                                \
		__mmask16 m[2];                                                                               \
		for (int g = 0; g < G; g++) {                                                                 \
			int left = rows - r - 16 * g;                                                         \
			m[g] = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);                           \
		}                                                                                             \
		for (int i = 0; i < nx; i += Q8_0_TILE) {                                                     \
			int t = nx - i < Q8_0_TILE ? nx - i : Q8_0_TILE;                                      \
			if (G == 2)                                                                           \
				kernel(wg, group_bytes, 2, nb, x + i * xs, xs, t, acc, i == 0);               \
			else                                                                                  \
				kernel(wg, group_bytes, 1, nb, x + i * xs, xs, t, acc, i == 0);               \
			for (int a = 0; a < t; a++)                                                           \
				for (int g = 0; g < G; g++)                                                   \
					_mm512_mask_storeu_ps(dst + (i + a) * ds + r + 16 * g, m[g], acc[G * a + g]); \
		}                                                                                             \
		r += 16 * G;                                                                                  \
	}

// PM80_512 defines name, a packed matmul over kernel (pq8_0_512 or one of
// the table kinds'): pairs of groups; one activation row (a decode step,
// bound by the weights' bandwidth) streams one group at a time, its
// accumulator in a register.
#define PM80_512(name, kernel)                                                                                 \
	static AVX512 void name(PM_ARGS) {                                                                    \
		if (nx == 1) {                                                                                \
			for (int r = 0; r < rows; r += 16) {                                                  \
				__m512 a = _mm512_setzero_ps();                                               \
				kernel(w + (int64_t)(r / 16) * group_bytes, group_bytes, 1, nb, x, xs, 1, &a, 1); \
				_mm512_mask_storeu_ps(dst + r,                                                \
				                      rows - r >= 16 ? 0xffff : (__mmask16)((1u << (rows - r)) - 1), a); \
			}                                                                                     \
			return;                                                                               \
		}                                                                                             \
		PAIRS512(kernel)                                                                              \
	}
PM80_512(pm_q8_0_512, pq8_0_512)
PM80_512(pm_iq4_nl_512, pq_iq4_nl_512)
PM80_512(pm_iq4_xs_512, pq_iq4_xs_512)
PM80_512(pm_mxfp4_512, pq_mxfp4_512)

// Q4_K_TILE is the activation rows of a packed Q4_K tile: a sub-block's 8
// vectors of quants, its scales and one int32 sum a row fit 32 registers.
#define Q4_K_TILE 16

// pqk_512 adds the dot products of a packed Q4_K group (nb super-blocks at
// w) with nx XK activation rows into acc, or with five those of a packed
// Q5_K group (each quant's fifth bit joined to its nibble by vpternlogd):
// per sub-block, the integer sum of q·x times its scale (two chains of
// four vpdpbusd, added before it: one chain of eight waited on itself);
// per super-block, d·dx·that − dmin·dx·Σ min·Σx.
INLINE AVX512 void pqk_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf,
                           int five) {
	const __m512i m4 = _mm512_set1_epi8(0x0f), m10 = _mm512_set1_epi8(0x10);
	const int64_t sb = five ? Q5_KP_BYTES : Q4_KP_BYTES;
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * sb;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		if (pf)
			mm_prefetch(wb + MM_PREFETCH, sb);
		__m512i isum[Q4_K_TILE]; // nx ≤ Q4_K_TILE
		for (int i = 0; i < nx; i++)
			isum[i] = _mm512_setzero_si512();
		for (int j = 0; j < 8; j++) {
			const uint8_t *qb = wb + 320 + 512 * (j / 2);
			__m512i q[8];
			for (int t = 0; t < 8; t++) {
				__m512i v = _mm512_load_si512(qb + 64 * t);
				q[t] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(v, 4) : v, m4);
				if (five) // A | (B & C)
					q[t] = _mm512_ternarylogic_epi32(q[t], bit4_512(_mm512_load_si512(wb + Q4_KP_BYTES + 64 * t), j),
					                                 m10, 0xf8);
			}
			__m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wb + 64 + 16 * j)));
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = xb + i * xs + 32 * j;
				__m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
				for (int u = 0; u < 8; u += 2) {
					t0 = _mm512_dpbusd_epi32(t0, q[u], _mm512_set1_epi32((int)ld32(xp + 4 * u)));
					t1 = _mm512_dpbusd_epi32(t1, q[u + 1], _mm512_set1_epi32((int)ld32(xp + 4 * u + 4)));
				}
				isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(_mm512_add_epi32(t0, t1), sc));
			}
		}
		q4k_finish512(wb, xb, xs, nx, isum, acc);
	}
}

INLINE AVX512 void pq4_k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pqk_512(w, nb, x, xs, nx, acc, pf, 0);
}
INLINE AVX512 void pq5_k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pqk_512(w, nb, x, xs, nx, acc, pf, 1);
}

// Q6_K_TILE is the activation rows of a packed Q6_K tile: a pair of
// sub-blocks' 8 vectors of quants, their scales and one int32 sum a row.
#define Q6_K_TILE 16

// pq6k_512 adds the dot products of a packed Q6_K group (nb super-blocks
// at w), or with three a packed Q3_K one, with nx XK activation rows into
// acc. Per pair of sub-blocks of 16, each row's two integer sums of q·x
// (q unsigned, 0-63 or 0-7: four vpdpbusd each) times their scales, less
// 32·Σx (4·Σx) times them (vpdpwssd of the scales, times -32 or -4, with
// the activations' sums of 16); per super-block, d·dx·that. The sums are
// integers until then, so a row's result does not depend on its tile.
INLINE AVX512 void pq6k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf,
                            int three) {
	const __m512i m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), m3 = _mm512_set1_epi8(3),
	              b2 = _mm512_set1_epi8(4), neg = _mm512_set1_epi16(three ? -4 : -32);
	const int sbb = three ? Q3_KP_BYTES : Q6_KP_BYTES, sco = three ? Q3_KP_SC : 3072, dof = three ? Q3_KP_D : 3328;
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * sbb;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		if (pf)
			mm_prefetch(wb + MM_PREFETCH, sbb);
		__m512i isum[Q6_K_TILE]; // nx ≤ Q6_K_TILE
		for (int i = 0; i < nx; i++)
			isum[i] = _mm512_setzero_si512();
		for (int p = 0; p < 8; p++) {
			__m512i q[2][4];
			for (int j = 0; j < 4; j++) {
				if (three) {
					// sub-blocks 2p and 2p+1: their low bits at 4(p%2)
					// and 4(p%2)+2, their third bits at 2(p%4) and
					// 2(p%4)+1, moved to 2
					__m512i v = _mm512_load_si512(wb + 256 * (p / 2) + 64 * j);
					__m512i h = _mm512_load_si512(wb + Q3_KP_HI + 256 * (p / 4) + 64 * j);
					__m512i h0 = _mm512_and_si512(bitto_512(h, 2 * (p % 4), 2), b2);
					__m512i h1 = _mm512_and_si512(bitto_512(h, 2 * (p % 4) + 1, 2), b2);
					// A | (B & C)
					q[0][j] = _mm512_ternarylogic_epi32(h0, _mm512_srli_epi16(v, 4 * (p % 2)), m3, 0xf8);
					q[1][j] = _mm512_ternarylogic_epi32(h1, _mm512_srli_epi16(v, 4 * (p % 2) + 2), m3, 0xf8);
					continue;
				}
				// sub-blocks 2p and 2p+1 are m = 2(p%2) and m+1 of
				// their quad: their high bits at 2m and 2m+2, moved to 4
				__m512i v = _mm512_load_si512(wb + 256 * p + 64 * j);
				__m512i h = _mm512_load_si512(wb + 2048 + 256 * (p / 2) + 64 * j);
				__m512i h0 = bit4_512(h, 4 * (p % 2)), h1 = bit4_512(h, 4 * (p % 2) + 2);
				q[0][j] = _mm512_ternarylogic_epi32(_mm512_and_si512(v, m4), h0, m30, 0xf8);
				q[1][j] = _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), h1, m30, 0xf8);
			}
			// lane r: the int16 scales of sub-blocks 2p, 2p+1 of row r
			__m512i sc = _mm512_cvtepi8_epi16(_mm256_load_si256((const __m256i *)(wb + sco + 32 * p)));
			__m512i s0 = _mm512_srai_epi32(_mm512_slli_epi32(sc, 16), 16), s1 = _mm512_srai_epi32(sc, 16);
			__m512i sn = _mm512_mullo_epi16(sc, neg);
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = xb + i * xs;
				__m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
				for (int j = 0; j < 4; j++) {
					t0 = _mm512_dpbusd_epi32(t0, q[0][j], _mm512_set1_epi32((int)ld32(xp + 32 * p + 4 * j)));
					t1 = _mm512_dpbusd_epi32(t1, q[1][j], _mm512_set1_epi32((int)ld32(xp + 32 * p + 16 + 4 * j)));
				}
				__m512i u = _mm512_add_epi32(_mm512_mullo_epi32(t0, s0), _mm512_mullo_epi32(t1, s1));
				u = _mm512_dpwssd_epi32(u, sn, _mm512_set1_epi32((int)ld32(xp + XK_BSUMS + 4 * p)));
				isum[i] = _mm512_add_epi32(isum[i], u);
			}
		}
		__m512 d = _mm512_load_ps((const float *)(wb + dof));
		for (int i = 0; i < nx; i++) {
			__m512 dx = _mm512_set1_ps(ldf(xb + i * xs + XK_D));
			acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, dx), acc[i]);
		}
	}
}

INLINE AVX512 void pq6_k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pq6k_512(w, nb, x, xs, nx, acc, pf, 0);
}
INLINE AVX512 void pq3_k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	pq6k_512(w, nb, x, xs, nx, acc, pf, 1);
}

// pq2_k_512 adds the dot products of a packed Q2_K group (nb super-blocks
// at w) with nx XK activation rows into acc: per pair of sub-blocks of 16,
// each row's two integer sums of q·x (q 0-3: four vpdpbusd each) times
// their 4-bit scales, and the sub-blocks' mins times the activations' sums
// of 16 (vpdpwssd); per super-block, d·dx times the first less dmin·dx
// times the second.
INLINE AVX512 void pq2_k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi16(0x0f), lo16 = _mm512_set1_epi32(0xffff);
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q2_KP_BYTES;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		if (pf)
			mm_prefetch(wb + MM_PREFETCH, Q2_KP_BYTES);
		__m512i isum[Q6_K_TILE], imin[Q6_K_TILE]; // nx ≤ Q6_K_TILE
		for (int i = 0; i < nx; i++)
			isum[i] = imin[i] = _mm512_setzero_si512();
		for (int p = 0; p < 8; p++) {
			__m512i q[2][4];
			for (int j = 0; j < 4; j++) {
				// sub-blocks 2p and 2p+1: their bits at 4(p%2), 4(p%2)+2
				__m512i v = _mm512_load_si512(wb + 256 * (p / 2) + 64 * j);
				q[0][j] = _mm512_and_si512(_mm512_srli_epi16(v, 4 * (p % 2)), m3);
				q[1][j] = _mm512_and_si512(_mm512_srli_epi16(v, 4 * (p % 2) + 2), m3);
			}
			// lane r: the int16 scales and mins of sub-blocks 2p, 2p+1
			__m512i sm = _mm512_cvtepu8_epi16(_mm256_load_si256((const __m256i *)(wb + Q2_KP_SC + 32 * p)));
			__m512i sc = _mm512_and_si512(sm, m4), mn = _mm512_srli_epi16(sm, 4);
			__m512i s0 = _mm512_and_si512(sc, lo16), s1 = _mm512_srli_epi32(sc, 16);
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = xb + i * xs;
				__m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
				for (int j = 0; j < 4; j++) {
					t0 = _mm512_dpbusd_epi32(t0, q[0][j], _mm512_set1_epi32((int)ld32(xp + 32 * p + 4 * j)));
					t1 = _mm512_dpbusd_epi32(t1, q[1][j], _mm512_set1_epi32((int)ld32(xp + 32 * p + 16 + 4 * j)));
				}
				isum[i] = _mm512_add_epi32(isum[i], _mm512_add_epi32(_mm512_mullo_epi32(t0, s0), _mm512_mullo_epi32(t1, s1)));
				imin[i] = _mm512_dpwssd_epi32(imin[i], mn, _mm512_set1_epi32((int)ld32(xp + XK_BSUMS + 4 * p)));
			}
		}
		__m512 d = _mm512_load_ps((const float *)(wb + Q2_KP_D)), dm = _mm512_load_ps((const float *)(wb + Q2_KP_DMIN));
		for (int i = 0; i < nx; i++) {
			__m512 dx = _mm512_set1_ps(ldf(xb + i * xs + XK_D));
			acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, dx), acc[i]);
			acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(imin[i]), _mm512_mul_ps(dm, dx), acc[i]);
		}
	}
}

// PACKED512 defines name(PM_ARGS) over group(w, nb, x, xs, nx, acc, pf):
// for each group of 16 rows, tiles of up to tile activation rows, each
// row's sums in one vector, stored masked to the rows that exist.
#define PACKED512(name, group, tile)                                                                            \
	INLINE AVX512 void name##_tile(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, float *dst,   \
	                               int64_t ds, __mmask16 m, int pf) {                                             \
		__m512 acc[16];                                                                                       \
		for (int i = 0; i < nx; i++)                                                                          \
			acc[i] = _mm512_setzero_ps();                                                                 \
		group(w, nb, x, xs, nx, acc, pf);                                                                     \
		for (int i = 0; i < nx; i++)                                                                          \
			_mm512_mask_storeu_ps(dst + i * ds, m, acc[i]);                                               \
	}                                                                                                             \
	static AVX512 void name(PM_ARGS) {                                                                            \
		for (int r = 0; r < rows; r += 16) {                                                                  \
			const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes;                                      \
			__mmask16 m = rows - r >= 16 ? 0xffff : (__mmask16)((1u << (rows - r)) - 1);                  \
			for (int i = 0; i < nx; i += tile) {                                                          \
				const uint8_t *xt = x + i * xs;                                                       \
				float *dt = dst + i * ds + r;                                                         \
				int t = nx - i < tile ? nx - i : tile, pf = i == 0;                                   \
				CASES16(t, name##_tile(wg, nb, xt, xs, N, dt, ds, m, pf))                             \
			}                                                                                             \
		}                                                                                                     \
	}

// CASES16 runs call with N the constant 1 … 16 equal to t (at most 16).
#define CASE(n, call) case n: { enum { N = n }; call; } break;
#define CASES16(t, call)                                                                                       \
	switch (t) {                                                                                           \
		CASE(1, call) CASE(2, call) CASE(3, call) CASE(4, call) CASE(5, call) CASE(6, call) CASE(7, call)    \
		CASE(8, call) CASE(9, call) CASE(10, call) CASE(11, call) CASE(12, call) CASE(13, call)            \
		CASE(14, call) CASE(15, call) default: { enum { N = 16 }; call; } break;                           \
	}

PACKED512(pm_q4_0_512_rows, pq4_0_512, Q4_0_TILE)

// Q4_0_PAIRS is the fewest activation rows for which pm_q4_0_512 takes
// two groups at a time (pq4_0x2_512); below it, pq4_0_512's tiles with
// their accumulators in registers.
#define Q4_0_PAIRS 16

// pm_q4_0_512 is the packed Q4_0 matmul at AVX-512: for many activation
// rows, pq4_0x2_512 over pairs of groups.
static AVX512 void pm_q4_0_512(PM_ARGS) {
	if (nx < Q4_0_PAIRS) {
		pm_q4_0_512_rows(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		return;
	}
	PAIRS512(pq4_0x2_512)
}
PACKED512(pm_q4_k_512, pq4_k_512, Q4_K_TILE)
PACKED512(pm_q6_k_512, pq6_k_512, Q6_K_TILE)
PACKED512(pm_q3_k_512, pq3_k_512, Q6_K_TILE)
PACKED512(pm_q2_k_512, pq2_k_512, Q6_K_TILE)
PACKED512(pm_q5_0_512_rows, pq5_0_512, Q4_0_TILE)
PACKED512(pm_q4_1_512, pq4_1_512, Q4_0_TILE)
PACKED512(pm_q5_1_512, pq5_1_512, Q4_0_TILE)

// pm_q5_0_512 is pm_q4_0_512 for Q5_0.
static AVX512 void pm_q5_0_512(PM_ARGS) {
	if (nx < Q4_0_PAIRS) {
		pm_q5_0_512_rows(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		return;
	}
	PAIRS512(pq5_0x2_512)
}
PACKED512(pm_q5_k_512, pq5_k_512, Q4_K_TILE)

// folio_matmul_packed: dst[i·ds + r] = w row r · x row i for r < rows and
// i < nx, w being groups of 16 rows of nb blocks (group_bytes apart) in
// kind's packed layout, at SIMD level level.
void folio_matmul_packed(int kind, int level, PM_ARGS) {
	if (level == LEVEL_AMX) {
		// the activation rows the tiles take; the rest at AVX-512
		int done = folio_pm_amx(kind, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		x += done * xs, dst += done * ds, nx -= done, level = LEVEL_AVX512;
		if (nx == 0)
			return;
	}
	if (level == LEVEL_AVX512) {
		// by kind
		static void (*const pm[])(PM_ARGS) = {
			[KIND_Q8_0] = pm_q8_0_512, [KIND_Q4_0] = pm_q4_0_512, [KIND_Q4_K] = pm_q4_k_512,
			[KIND_Q6_K] = pm_q6_k_512, [KIND_F16] = folio_pm_f16_512, [KIND_Q5_0] = pm_q5_0_512,
			[KIND_Q5_K] = pm_q5_k_512, [KIND_BF16] = folio_pm_bf16_512, [KIND_Q3_K] = pm_q3_k_512,
			[KIND_Q2_K] = pm_q2_k_512, [KIND_IQ4_NL] = pm_iq4_nl_512, [KIND_Q4_1] = pm_q4_1_512, [KIND_Q5_1] = pm_q5_1_512,
			[KIND_IQ4_XS] = pm_iq4_xs_512, [KIND_MXFP4] = pm_mxfp4_512,
		};
		pm[kind](w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	} else if (level == LEVEL_AVXVNNI) {
		folio_pm256_vnni(kind, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	} else {
		folio_pm256_avx2(kind, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	}
}
