//go:build amd64 && cgo

// The kernels over repacked F16 and BF16 weights (repack.go has the
// layout), at AVX-512: a group's column is 16 rows' halves, one vcvtph2ps
// from a vector (for BF16 a widening and a shift), which then feeds one FMA
// for each activation row of a tile, the activation broadcast. The
// activations are the F16 (or BF16) rows of kindF16 (kindBF16, xquant.go),
// converted to float32 a chunk of columns at a time into a scratch on the
// stack, where the FMAs broadcast them from.
//
// Each (weight row, activation row) sum is one chain of FMAs, from zero,
// over the columns in order, whatever the tile, the groups beside it or
// the number of activation rows (a partial sum that waits in dst between
// chunks is a float32 stored and loaded back as it was): a request's
// result does not depend on the batch it runs in.

#include "simd.h"

// F16_KC is the columns of a chunk of converted activations.
#define F16_KC 128

// F16_T is the most activation rows of a tile: with 2 groups, its 24
// accumulators, 2 weight vectors and a broadcast fit AVX-512's 32
// registers.
#define F16_T 12

// F16_XB is the most activation rows converted at once: a chunk of them
// takes 32 KiB of the stack, which stays in L1 beside a pair of groups'
// chunk of weights (8 KiB).
#define F16_XB 64

// F16_PREFETCH is how far ahead a few activation rows prefetch each of
// the 4 streams of groups they read at once.
#define F16_PREFETCH 2048

// wide16 widens the 16 halves at p (32-byte aligned) to float32, or with
// bf 16 bfloat16s.
INLINE AVX512 __m512 wide16(const uint8_t *p, int bf) {
	__m256i h = _mm256_load_si256((const __m256i *)p);
	return bf ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
}

// f16_cvt converts columns c … c+kc-1 (kc a multiple of 16) of n F16 (or
// with bf BF16) rows at x (xs bytes apart) into xf, rows F16_KC floats
// apart.
INLINE AVX512 void f16_cvt(const uint8_t *x, int64_t xs, int n, int c, int kc, float *xf, int bf) {
	for (int i = 0; i < n; i++)
		for (int j = 0; j < kc; j += 16)
			_mm512_store_ps(xf + i * F16_KC + j, wide16(x + i * xs + 2 * (c + j), bf));
}

// pf16_fma adds the dot products of columns 0 … kc-1 (even) of G groups at
// w (gb bytes apart) with T rows of xf into acc[G·i + g]. When pfo, each
// group's stream is prefetched pfo bytes ahead, and from end bytes past w
// on in the group G further (the next pass's).
INLINE AVX512 void pf16_fma(const uint8_t *w, int64_t gb, int G, int kc, const float *xf, int T, __m512 *acc,
                            int64_t pfo, int64_t end, int bf) {
	for (int j = 0; j < kc; j += 2) {
		int64_t o = 32 * j + pfo;
		if (pfo)
			for (int g = 0; g < G; g++)
				__builtin_prefetch(w + g * gb + o + (o < end ? 0 : (G - 1) * gb), 0, 3);
		for (int u = 0; u < 2; u++) {
			__m512 wv[4];
			for (int g = 0; g < G; g++)
				wv[g] = wide16(w + g * gb + 32 * (j + u), bf);
			for (int i = 0; i < T; i++) {
				__m512 xb = _mm512_set1_ps(xf[i * F16_KC + j + u]);
				for (int g = 0; g < G; g++)
					acc[G * i + g] = _mm512_fmadd_ps(wv[g], xb, acc[G * i + g]);
			}
		}
	}
}

// pf16_rows sets dst[i·ds + 16g + r] to the dot products of G groups at w
// (columns 0 … kp-1) with T F16 rows at x, all the columns at a time: a
// few rows (a decode step, bound by the weights' bandwidth) stream each
// group once, its accumulators in registers, prefetched F16_PREFETCH ahead.
INLINE AVX512 void pf16_rows(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T,
                             float *dst, int64_t ds, const __mmask16 *m, int bf) {
	float xf[4 * F16_KC] __attribute__((aligned(64)));
	__m512 acc[4 * 4];
	for (int a = 0; a < G * T; a++)
		acc[a] = _mm512_setzero_ps();
	for (int c = 0; c < kp; c += F16_KC) {
		int kc = kp - c < F16_KC ? kp - c : F16_KC; // a multiple of 32
		f16_cvt(x, xs, T, c, kc, xf, bf);
		pf16_fma(w + 32 * (int64_t)c, gb, G, kc, xf, T, acc, F16_PREFETCH, gb - 32 * (int64_t)c, bf);
	}
	for (int i = 0; i < T; i++)
		for (int g = 0; g < G; g++)
			_mm512_mask_storeu_ps(dst + i * ds + 16 * g, m[g], acc[G * i + g]);
}

// pf16_step adds the dot products of kc columns of G groups at w with T
// rows of xf to the partial sums in dst (zero when first), masked to the
// rows that exist (m[g]).
INLINE AVX512 void pf16_step(const uint8_t *w, int64_t gb, int G, int kc, const float *xf, int T, float *dst,
                             int64_t ds, const __mmask16 *m, int first, int64_t pfo, int bf) {
	__m512 acc[2 * F16_T];
	for (int i = 0; i < T; i++)
		for (int g = 0; g < G; g++)
			acc[G * i + g] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m[g], dst + i * ds + 16 * g);
	pf16_fma(w, gb, G, kc, xf, T, acc, pfo, INT64_MAX, bf);
	for (int i = 0; i < T; i++)
		for (int g = 0; g < G; g++)
			_mm512_mask_storeu_ps(dst + i * ds + 16 * g, m[g], acc[G * i + g]);
}

#define F16_ROWS(g, t)                                                                                        \
	case 10 * g + t:                                                                                       \
		pf16_rows(w, gb, g, kp, x, xs, t, dst, ds, m, bf);                                               \
		break;
#define F16_STEP(g, t)                                                                                        \
	case 100 * g + t:                                                                                      \
		pf16_step(w, gb, g, kc, xf, t, dst, ds, m, first, pfo, bf);                                      \
		break;

// PF16_FEW(name, BF) defines name, which runs pf16_rows with G (1, 2 or 4)
// and T ≤ 3 constants; PF16_STEPS(name, BF) name, which runs pf16_step
// with G (1 or 2) and T ≤ F16_T constants: each once for halves and once
// for bfloat16s.
#define PF16_FEW(name, BF)                                                                                    \
	static AVX512 void name(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T, \
	                        float *dst, int64_t ds, const __mmask16 *m) {                                     \
		const int bf = BF;                                                                             \
		switch (10 * G + T) {                                                                          \
			F16_ROWS(1, 1) F16_ROWS(1, 2) F16_ROWS(1, 3) F16_ROWS(2, 1) F16_ROWS(2, 2) F16_ROWS(2, 3)     \
			F16_ROWS(4, 1) F16_ROWS(4, 2) F16_ROWS(4, 3)                                                 \
		}                                                                                              \
	}
#define PF16_STEPS(name, BF)                                                                                  \
	static AVX512 void name(const uint8_t *w, int64_t gb, int G, int kc, const float *xf, int T, float *dst,  \
	                        int64_t ds, const __mmask16 *m, int first, int64_t pfo) {                         \
		const int bf = BF;                                                                             \
		switch (100 * G + T) {                                                                         \
			F16_STEP(1, 1) F16_STEP(1, 2) F16_STEP(1, 3) F16_STEP(1, 4) F16_STEP(1, 5) F16_STEP(1, 6)     \
			F16_STEP(1, 7) F16_STEP(1, 8) F16_STEP(1, 9) F16_STEP(1, 10) F16_STEP(1, 11) F16_STEP(1, 12) \
			F16_STEP(2, 1) F16_STEP(2, 2) F16_STEP(2, 3) F16_STEP(2, 4) F16_STEP(2, 5) F16_STEP(2, 6)     \
			F16_STEP(2, 7) F16_STEP(2, 8) F16_STEP(2, 9) F16_STEP(2, 10) F16_STEP(2, 11) F16_STEP(2, 12) \
		}                                                                                              \
	}
PF16_FEW(pf16_few, 0)
PF16_FEW(pbf16_few, 1)
PF16_STEPS(pf16_steps, 0)
PF16_STEPS(pbf16_steps, 1)

// masks sets m[g] to the rows of group g that exist, of the rows left.
INLINE void masks(__mmask16 *m, int G, int left) {
	for (int g = 0; g < G; g++) {
		int n = left - 16 * g;
		m[g] = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
	}
}

// pm_half_512: dst[i·ds + r] = w row r · x row i, w packed F16 (with bf
// BF16) groups of nb blocks of 32 columns. Up to 3 activation rows take 4 groups
// at a time over all the columns (4 chains of FMAs in flight). More are
// taken F16_XB at a time, a chunk of F16_KC columns converted once for all
// the groups: each pair of groups then runs tiles of at most F16_T rows, of
// even sizes, whose partial sums wait in dst for the next chunk.
INLINE AVX512 void pm_half_512(PM_ARGS, int bf) {
	int kp = 32 * nb;
	__mmask16 m[4];
	if (nx <= 3) {
		for (int r = 0; r < rows;) {
			int left = (rows - r + 15) / 16, G = left >= 4 ? 4 : left >= 2 ? 2 : 1;
			masks(m, G, rows - r);
			(bf ? pbf16_few : pf16_few)(w + (int64_t)(r / 16) * group_bytes, group_bytes, G, kp, x, xs, nx, dst + r, ds, m);
			r += 16 * G;
		}
		return;
	}
	float xf[F16_XB * F16_KC] __attribute__((aligned(64)));
	for (int i0 = 0; i0 < nx; i0 += F16_XB) {
		int n = nx - i0 < F16_XB ? nx - i0 : F16_XB, tiles = (n + F16_T - 1) / F16_T;
		for (int c = 0; c < kp; c += F16_KC) {
			int kc = kp - c < F16_KC ? kp - c : F16_KC;
			f16_cvt(x + i0 * xs, xs, n, c, kc, xf, bf);
			for (int r = 0; r < rows;) {
				int G = rows - r > 16 ? 2 : 1;
				masks(m, G, rows - r);
				const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes + 32 * (int64_t)c;
				for (int t = 0, i = 0; t < tiles; t++) {
					int T = (n - i) / (tiles - t); // the rows left, shared evenly
					// the first tile prefetches the next pair's chunk
					int64_t pfo = t == 0 && i0 == 0 ? G * group_bytes : 0;
					(bf ? pbf16_steps : pf16_steps)(wg, group_bytes, G, kc, xf + i * F16_KC, T, dst + (i0 + i) * ds + r, ds, m, c == 0,
					           pfo);
					i += T;
				}
				r += 16 * G;
			}
		}
	}
}

AVX512 void folio_pm_f16_512(PM_ARGS) { pm_half_512(w, group_bytes, nb, rows, x, xs, nx, dst, ds, 0); }
AVX512 void folio_pm_bf16_512(PM_ARGS) { pm_half_512(w, group_bytes, nb, rows, x, xs, nx, dst, ds, 1); }
