//go:build amd64 && cgo

// Kernels over repacked Q4_0, Q4_K and Q8_0 weights (repack.go has the
// layout): one weight row per 32-bit lane, 16 rows a group, the
// activations broadcast four bytes at a time. vpdpbusd (AVX-512 VNNI) or
// vpmaddubsw and vpmaddwd (AVX2) multiply a row's unsigned 4-bit quants by
// four signed 8-bit activations into its lane (Q8_0: at AVX-512 its signed
// quants by four biased activations, at AVX2 their magnitudes by the
// activations with their signs); a block's scales are then one
// vector op for all 16 rows. Every row's sums are taken in the same order
// whatever the tile or the level, so a row's result does not depend on the
// rows computed with it. (F16's kernel is simd_packed_f16.c.)

#include "simd.h"

INLINE uint32_t ld32(const uint8_t *p) {
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

INLINE float ldf(const uint8_t *p) {
	float v;
	memcpy(&v, p, 4);
	return v;
}

// ---- AVX-512: a group's 16 rows in one vector ----

// Q4_0_TILE is the activation rows of a Q4_0 tile: the 8 vectors of a
// block's quants, its scales and one accumulator a row fit 32 registers.
#define Q4_0_TILE 16

// pq4_0_512 adds the dot products of a Q4_0 group (nb blocks, quants at w,
// scales at w + 256·nb) with nx X4G activation rows into acc.
INLINE AVX512 void pq4_0_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	const uint8_t *ds = w + 256 * (int64_t)nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 256 * (int64_t)b;
		if (pf)
			mm_prefetch(wb + MM_PREFETCH, 256);
		__m512i lo[4], hi[4];
		for (int j = 0; j < 4; j++) {
			__m512i v = _mm512_load_si512(wb + 64 * j);
			lo[j] = _mm512_and_si512(v, m4);
			hi[j] = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
		}
		__m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ds + 32 * b)));
		const uint8_t *xb = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
#pragma GCC unroll 16
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m512i s = _mm512_set1_epi32((int)ld32(xp + 192)); // -8·Σq
			for (int j = 0; j < 4; j++)
				s = _mm512_dpbusd_epi32(s, lo[j], _mm512_set1_epi32((int)ld32(xp + 4 * j)));
			for (int j = 0; j < 4; j++)
				s = _mm512_dpbusd_epi32(s, hi[j], _mm512_set1_epi32((int)ld32(xp + 64 + 4 * j)));
			acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(ldf(xp + 128))), acc[i]);
		}
	}
}

// pq8_0_512 sets acc[G·i + g] to the dot products of G (1 or 2) Q8_0
// groups, gb bytes apart (nb blocks, quants at w + g·gb, scales 512·nb
// after them), with nx X8P activation rows: the first block's products
// start each sum (zeroing the tile first compiled to a rep stos, a
// measurable part of the kernel's time at 16 rows). The weights are the signed side:
// each sum starts at q8_bias. With G = 2, one broadcast of four
// activations feeds both groups' vpdpbusd, and a row's two chains of 8
// interleave.
INLINE AVX512 void pq8_0_512(const uint8_t *w, int64_t gb, int G, int nb, const uint8_t *x, int64_t xs, int nx,
                             __m512 *acc, int pf) {
	for (int b = 0; b < nb; b++) {
		__m512i q[2][8], bias[2];
		__m512 dw[2];
		for (int g = 0; g < G; g++) {
			const uint8_t *wg = w + g * gb, *wb = wg + 512 * (int64_t)b;
			if (pf) {
				// this group's stream, which past its end goes on
				// in the next pass's group g
				const uint8_t *p = wb + MM_PREFETCH;
				mm_prefetch(p < wg + gb ? p : p + (G - 1) * gb, 512);
			}
			for (int j = 0; j < 8; j++)
				q[g][j] = _mm512_load_si512(wb + 64 * j);
			bias[g] = q8_bias(q[g]);
			dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wg + 512 * (int64_t)nb + 32 * b)));
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

// Q8_0_TILE is the activation rows of a packed Q8_0 tile. Its
// accumulators stay in memory: a row's one or two are loaded and stored
// once a block, beside its 8 or 16 vpdpbusd.
#define Q8_0_TILE 64

// pm_q8_0_512 runs pq8_0_512 over pairs of groups (32 rows), a last odd
// group alone; one activation row (a decode step, bound by the weights'
// bandwidth) streams one group at a time, its accumulator in a register.
static AVX512 void pm_q8_0_512(PM_ARGS) {
	__m512 acc[2 * Q8_0_TILE];
	for (int r = 0; r < rows;) {
		const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes;
		int G = nx > 1 && rows - r > 16 ? 2 : 1;
		__mmask16 m[2];
		for (int g = 0; g < G; g++) {
			int left = rows - r - 16 * g;
			m[g] = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
		}
		if (nx == 1) {
			__m512 a = _mm512_setzero_ps();
			pq8_0_512(wg, group_bytes, 1, nb, x, xs, 1, &a, 1);
			_mm512_mask_storeu_ps(dst + r, m[0], a);
		}
		for (int i = 0; i < nx && nx > 1; i += Q8_0_TILE) {
			int t = nx - i < Q8_0_TILE ? nx - i : Q8_0_TILE;
			if (G == 2)
				pq8_0_512(wg, group_bytes, 2, nb, x + i * xs, xs, t, acc, i == 0);
			else
				pq8_0_512(wg, group_bytes, 1, nb, x + i * xs, xs, t, acc, i == 0);
			for (int a = 0; a < t; a++)
				for (int g = 0; g < G; g++)
					_mm512_mask_storeu_ps(dst + (i + a) * ds + r + 16 * g, m[g], acc[G * a + g]);
		}
		r += 16 * G;
	}
}

// pq4_k_512 adds the dot products of a Q4_K group (nb super-blocks at w)
// with nx XK activation rows into acc: per sub-block, the integer sum of
// q·x times its scale; per super-block, d·dx·that − dmin·dx·Σ min·Σx.
INLINE AVX512 void pq4_k_512(const uint8_t *w, int nb, const uint8_t *x, int64_t xs, int nx, __m512 *acc, int pf) {
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q4_KP_BYTES;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		if (pf)
			mm_prefetch(wb + MM_PREFETCH, Q4_KP_BYTES);
		__m512i isum[16]; // nx ≤ XT; sized for the tile switch
		for (int i = 0; i < nx; i++)
			isum[i] = _mm512_setzero_si512();
		for (int j = 0; j < 8; j++) {
			const uint8_t *qb = wb + 320 + 512 * (j / 2);
			__m512i q[8];
			for (int t = 0; t < 8; t++) {
				__m512i v = _mm512_load_si512(qb + 64 * t);
				q[t] = _mm512_and_si512(j % 2 ? _mm512_srli_epi16(v, 4) : v, m4);
			}
			__m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wb + 64 + 16 * j)));
			for (int i = 0; i < nx; i++) {
				const uint8_t *xp = xb + i * xs + 32 * j;
				__m512i t = _mm512_setzero_si512();
				for (int u = 0; u < 8; u++)
					t = _mm512_dpbusd_epi32(t, q[u], _mm512_set1_epi32((int)ld32(xp + 4 * u)));
				isum[i] = _mm512_add_epi32(isum[i], _mm512_mullo_epi32(t, sc));
			}
		}
		__m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)wb));
		__m512 dmin = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wb + 32)));
		__m512i mins[4];
		for (int p = 0; p < 4; p++)
			mins[p] = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(wb + 192 + 32 * p)));
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m512i ms = _mm512_setzero_si512();
			for (int p = 0; p < 4; p++)
				ms = _mm512_dpwssd_epi32(ms, mins[p], _mm512_set1_epi32((int)ld32(xp + XK_BS32 + 4 * p)));
			__m512 dx = _mm512_set1_ps(ldf(xp + XK_D));
			acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[i]), _mm512_mul_ps(d, dx), acc[i]);
			acc[i] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(ms), _mm512_mul_ps(dmin, dx), acc[i]);
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

PACKED512(pm_q4_0_512, pq4_0_512, Q4_0_TILE)
PACKED512(pm_q4_k_512, pq4_k_512, XT)

// ---- AVX2: a group as two halves of 8 rows (a vector's bytes 0-31 or
// 32-63), each in one 256-bit vector. Without VNNI, vpmaddubsw sums pairs
// of q·x into int16 (at most 2·15·127 = 3810), eight steps of them add up
// without overflow (30480), and vpmaddwd turns them into int32. ----

#define XT2 4 // activation rows per tile: AVX2 has 16 vectors

// in_reg makes the compiler have v in a register here: the kernels' sums
// then stay running chains, where GCC would otherwise reassociate them into
// trees whose many partial sums spill to the stack.
#define in_reg(v) __asm__("" : "+x"(v))


// sum8 returns lane r's Σ over a 32-element block of q·x as int16 pairs:
// q[u] holds steps u (four quants a lane), xp the block's 32 activations.
INLINE AVX2 __m256i sum8(const __m256i *q, const uint8_t *xp, int64_t hi) {
	__m256i s = _mm256_maddubs_epi16(q[0], _mm256_set1_epi32((int)ld32(xp)));
	for (int u = 1; u < 8; u++) {
		s = _mm256_add_epi16(s, _mm256_maddubs_epi16(q[u], _mm256_set1_epi32((int)ld32(xp + (u < 4 ? 4 * u : hi + 4 * (u - 4))))));
		in_reg(s);
	}
	return s;
}

// pq4_0_256 is pq4_0_512 for half h of a group.
INLINE AVX2 void pq4_0_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	const uint8_t *ds = w + 256 * (int64_t)nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 256 * (int64_t)b + 32 * h;
		__m256i q[8];
		for (int j = 0; j < 4; j++) {
			__m256i v = _mm256_load_si256((const __m256i *)(wb + 64 * j));
			q[j] = _mm256_and_si256(v, m4);
			q[4 + j] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
		}
		__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * b + 16 * h)));
		const uint8_t *xb = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m256i s = _mm256_add_epi32(_mm256_set1_epi32((int)ld32(xp + 192)), _mm256_madd_epi16(sum8(q, xp, 64), ones));
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xp + 128))), acc[i]);
		}
	}
}

// pq4_k_256 is pq4_k_512 for half h of a group; vpmaddwd by (scale,
// scale) pairs takes a sub-block's int16 sums to int32 times its scale.
INLINE AVX2 void pq4_k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q4_KP_BYTES;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		__m256i isum[XT2];
		for (int i = 0; i < nx; i++)
			isum[i] = _mm256_setzero_si256();
		for (int j = 0; j < 8; j++) {
			const uint8_t *qb = wb + 320 + 512 * (j / 2) + 32 * h;
			__m256i q[8];
			for (int t = 0; t < 8; t++) {
				__m256i v = _mm256_load_si256((const __m256i *)(qb + 64 * t));
				q[t] = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, m4);
			}
			__m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wb + 64 + 16 * j + 8 * h)));
			sc = _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
			for (int i = 0; i < nx; i++)
				isum[i] = _mm256_add_epi32(isum[i], _mm256_madd_epi16(sum8(q, xb + i * xs + 32 * j, 16), sc));
		}
		__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 16 * h)));
		__m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 32 + 16 * h)));
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m256i ms = _mm256_setzero_si256();
			for (int p = 0; p < 4; p++) {
				__m256i mv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192 + 32 * p + 16 * h)));
				ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mv, _mm256_set1_epi32((int)ld32(xp + XK_BS32 + 4 * p))));
			}
			__m256 dx = _mm256_set1_ps(ldf(xp + XK_D));
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_mul_ps(d, dx), acc[i]);
			acc[i] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_mul_ps(dmin, dx), acc[i]);
		}
	}
}

// pq8_0_256 is pq8_0_512 (one group) for half h: the sign trick of the
// unpacked kernel (simd_avx2.c) on a lane's four quants, |w| against x
// with w's signs, the activations' bias taken off before the broadcast.
// A pair can reach 2·128·127, so each step's pairs go to int32 at once.
INLINE AVX2 void pq8_0_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	const __m256i ones = _mm256_set1_epi16(1);
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 512 * (int64_t)b + 32 * h;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		__m256i s[XT2];
		for (int u = 0; u < 8; u++) {
			__m256i q = _mm256_load_si256((const __m256i *)(wb + 64 * u)), a = _mm256_sign_epi8(q, q);
			for (int i = 0; i < nx; i++) {
				__m256i xv = _mm256_set1_epi32((int)(ld32(xb + i * xs + 4 * u) ^ 0x80808080u));
				__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(xv, q)), ones);
				s[i] = u ? _mm256_add_epi32(s[i], p) : p;
				in_reg(s[i]);
			}
		}
		__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 512 * (int64_t)nb + 32 * b + 16 * h)));
		for (int i = 0; i < nx; i++)
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[i]), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xb + i * xs + 64))), acc[i]);
	}
}

// A decode step (one activation row) is bound by the weights' bandwidth:
// its kernels take a group's two halves in one pass, each 64-byte line of
// weights loaded once and used whole, the activations broadcast once for
// both halves, and fetch the weights MM_PREFETCH bytes ahead (the hardware
// prefetchers stop at 4 KiB pages). A row's sums are those of the tiled
// kernels, in the same order.

// pq4_0_256_1 is pq4_0_256 for one activation row and both halves of a
// group, acc[h] the sums of half h.
INLINE AVX2 void pq4_0_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), ones = _mm256_set1_epi16(1);
	const uint8_t *ds = w + 256 * (int64_t)nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 256 * (int64_t)b;
		mm_prefetch(wb + MM_PREFETCH, 256);
		const uint8_t *xp = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		__m256i s16[2];
		for (int j = 0; j < 4; j++) {
			__m256i xl = _mm256_set1_epi32((int)ld32(xp + 4 * j)), xh = _mm256_set1_epi32((int)ld32(xp + 64 + 4 * j));
			for (int h = 0; h < 2; h++) {
				__m256i v = _mm256_load_si256((const __m256i *)(wb + 64 * j + 32 * h));
				__m256i t = _mm256_add_epi16(_mm256_maddubs_epi16(_mm256_and_si256(v, m4), xl),
				                             _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), xh));
				s16[h] = j ? _mm256_add_epi16(s16[h], t) : t;
				in_reg(s16[h]);
			}
		}
		__m256i bias = _mm256_set1_epi32((int)ld32(xp + 192));
		__m256 dx = _mm256_set1_ps(ldf(xp + 128));
		for (int h = 0; h < 2; h++) {
			__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * b + 16 * h)));
			__m256i s = _mm256_add_epi32(bias, _mm256_madd_epi16(s16[h], ones));
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, dx), acc[h]);
		}
	}
}

// pq4_k_256_1 is pq4_k_256 for one activation row and both halves of a
// group: a 64-byte line of quants holds sub-blocks 2p and 2p+1 of 16 rows.
INLINE AVX2 void pq4_k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q4_KP_BYTES;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		mm_prefetch(wb + MM_PREFETCH, Q4_KP_BYTES);
		__m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
		for (int p = 0; p < 4; p++) {
			const uint8_t *qb = wb + 320 + 512 * p, *xp = xb + 64 * p;
			// lo[h], hi[h]: half h's int16 pair sums of sub-blocks 2p, 2p+1
			__m256i lo[2], hi[2];
			for (int u = 0; u < 8; u++) {
				__m256i xl = _mm256_set1_epi32((int)ld32(xp + 4 * u));
				__m256i xh = _mm256_set1_epi32((int)ld32(xp + 32 + 4 * u));
				for (int h = 0; h < 2; h++) {
					__m256i v = _mm256_load_si256((const __m256i *)(qb + 64 * u + 32 * h));
					__m256i l = _mm256_maddubs_epi16(_mm256_and_si256(v, m4), xl);
					__m256i g = _mm256_maddubs_epi16(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), xh);
					lo[h] = u ? _mm256_add_epi16(lo[h], l) : l;
					hi[h] = u ? _mm256_add_epi16(hi[h], g) : g;
					in_reg(lo[h]);
					in_reg(hi[h]);
				}
			}
			for (int h = 0; h < 2; h++) {
				__m256i s0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wb + 64 + 32 * p + 8 * h)));
				__m256i s1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wb + 80 + 32 * p + 8 * h)));
				s0 = _mm256_or_si256(s0, _mm256_slli_epi32(s0, 16));
				s1 = _mm256_or_si256(s1, _mm256_slli_epi32(s1, 16));
				isum[h] = _mm256_add_epi32(isum[h], _mm256_madd_epi16(lo[h], s0));
				isum[h] = _mm256_add_epi32(isum[h], _mm256_madd_epi16(hi[h], s1));
			}
		}
		__m256 dx = _mm256_set1_ps(ldf(xb + XK_D));
		for (int h = 0; h < 2; h++) {
			__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 16 * h)));
			__m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 32 + 16 * h)));
			__m256i ms = _mm256_setzero_si256();
			for (int p = 0; p < 4; p++) {
				__m256i mv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192 + 32 * p + 16 * h)));
				ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mv, _mm256_set1_epi32((int)ld32(xb + XK_BS32 + 4 * p))));
			}
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h]), _mm256_mul_ps(d, dx), acc[h]);
			acc[h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_mul_ps(dmin, dx), acc[h]);
		}
	}
}

// pq8_0_256_1 is pq8_0_256 for one activation row and both halves of a
// group.
INLINE AVX2 void pq8_0_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	const __m256i ones = _mm256_set1_epi16(1);
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 512 * (int64_t)b;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		mm_prefetch(wb + MM_PREFETCH, 512);
		__m256i s[2];
		for (int u = 0; u < 8; u++) {
			__m256i xv = _mm256_set1_epi32((int)(ld32(xb + 4 * u) ^ 0x80808080u));
			for (int h = 0; h < 2; h++) {
				__m256i q = _mm256_load_si256((const __m256i *)(wb + 64 * u + 32 * h));
				__m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(xv, q)), ones);
				s[h] = u ? _mm256_add_epi32(s[h], p) : p;
				in_reg(s[h]);
			}
		}
		__m256 dx = _mm256_set1_ps(ldf(xb + 64));
		for (int h = 0; h < 2; h++) {
			__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 512 * (int64_t)nb + 32 * b + 16 * h)));
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[h]), _mm256_mul_ps(dw, dx), acc[h]);
		}
	}
}

// store8 writes the first n ≤ 8 lanes of v to p.
INLINE AVX2 void store8(float *p, __m256 v, int n) {
	if (n >= 8) {
		_mm256_storeu_ps(p, v);
		return;
	}
	__m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
	_mm256_maskstore_ps(p, m, v);
}

// PACKED256 defines name(PM_ARGS) over group (a half of a group of 16
// rows, tiles of XT2 activation rows) and group_1 (one activation row,
// both halves).
#define PACKED256(name, group)                                                                                 \
	INLINE AVX2 void name##_tile(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx,          \
	                             float *dst, int64_t ds, int n) {                                                \
		__m256 acc[XT2];                                                                                     \
		for (int i = 0; i < nx; i++)                                                                         \
			acc[i] = _mm256_setzero_ps();                                                                \
		group(w, nb, h, x, xs, nx, acc);                                                                     \
		for (int i = 0; i < nx; i++)                                                                         \
			store8(dst + i * ds, acc[i], n);                                                             \
	}                                                                                                            \
	static AVX2 void name(PM_ARGS) {                                                                             \
		for (int r = 0; r < rows && nx == 1; r += 16) {                                                      \
			__m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};                                  \
			group##_1(w + (int64_t)(r / 16) * group_bytes, nb, x, acc);                                  \
			store8(dst + r, acc[0], rows - r);                                                           \
			if (rows - r > 8)                                                                            \
				store8(dst + r + 8, acc[1], rows - r - 8);                                           \
		}                                                                                                    \
		for (int r = 0; r < rows && nx > 1; r += 8) {                                                        \
			const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes;                                     \
			int h = r / 8 % 2, n = rows - r < 8 ? rows - r : 8;                                          \
			for (int i = 0; i < nx; i += XT2) {                                                          \
				const uint8_t *xt = x + i * xs;                                                      \
				float *dt = dst + i * ds + r;                                                        \
				switch (nx - i < XT2 ? nx - i : XT2) {                                               \
				case 1: name##_tile(wg, nb, h, xt, xs, 1, dt, ds, n); break;                         \
				case 2: name##_tile(wg, nb, h, xt, xs, 2, dt, ds, n); break;                         \
				case 3: name##_tile(wg, nb, h, xt, xs, 3, dt, ds, n); break;                         \
				default: name##_tile(wg, nb, h, xt, xs, 4, dt, ds, n); break;                        \
				}                                                                                    \
			}                                                                                            \
		}                                                                                                    \
	}

PACKED256(pm_q4_0_256, pq4_0_256)
PACKED256(pm_q4_k_256, pq4_k_256)
PACKED256(pm_q8_0_256, pq8_0_256)

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
		if (kind == KIND_F16)
			folio_pm_f16_512(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		else if (kind == KIND_Q8_0)
			pm_q8_0_512(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		else if (kind == KIND_Q4_K)
			pm_q4_k_512(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		else
			pm_q4_0_512(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	} else {
		if (kind == KIND_Q8_0)
			pm_q8_0_256(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		else if (kind == KIND_Q4_K)
			pm_q4_k_256(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
		else
			pm_q4_0_256(w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	}
}
