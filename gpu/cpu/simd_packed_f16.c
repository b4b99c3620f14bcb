//go:build amd64 && cgo

// The kernel over repacked F16 weights (repack.go has the layout), at
// AVX-512: a group's column is 16 rows' halves, one vcvtph2ps from a
// vector, which then feeds one FMA for each activation row of a tile,
// the activation broadcast. The activations are the F16 rows of kindF16
// (xquant.go), converted to float32 a chunk of columns at a time into a
// scratch on the stack, where the FMAs broadcast them from.
//
// Each (weight row, activation row) sum is one chain of FMAs, from zero,
// over the columns in order, whatever the tile, the groups beside it or
// the number of activation rows: a request's result does not depend on
// the batch it runs in.

#include "simd.h"

// F16_KC is the columns of a chunk of converted activations: a tile's
// F16_T rows of it take 6 KiB of the stack and stay in L1.
#define F16_KC 128

// F16_T is the most activation rows of a tile: with 2 groups, its 24
// accumulators, 2 weight vectors and a broadcast fit AVX-512's 32
// registers (with 4 groups, F16_T / 2 rows).
#define F16_T 12

// pf16_512 adds the dot products of G groups (gb bytes apart, columns
// 0 … kp-1) with T F16 activation rows (xs bytes apart) into acc[G·i + g].
// Each group's stream is prefetched MM_PREFETCH ahead when pf.
INLINE AVX512 void pf16_512(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T,
                            __m512 *acc, int pf) {
	float xf[F16_T * F16_KC] __attribute__((aligned(64)));
	for (int c = 0; c < kp; c += F16_KC) {
		int kc = kp - c < F16_KC ? kp - c : F16_KC; // a multiple of 32
		for (int i = 0; i < T; i++)
			for (int j = 0; j < kc; j += 16)
				_mm512_store_ps(xf + i * F16_KC + j,
				                _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(x + i * xs + 2 * (c + j)))));
		const uint8_t *wc = w + 32 * (int64_t)c;
		for (int j = 0; j < kc; j += 2) {
			if (pf)
				for (int g = 0; g < G; g++)
					__builtin_prefetch(wc + g * gb + 32 * j + MM_PREFETCH, 0, 3);
			for (int u = 0; u < 2; u++) {
				__m512 wv[4];
				for (int g = 0; g < G; g++)
					wv[g] = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(wc + g * gb + 32 * (j + u))));
				for (int i = 0; i < T; i++) {
					__m512 xb = _mm512_set1_ps(xf[i * F16_KC + j + u]);
					for (int g = 0; g < G; g++)
						acc[G * i + g] = _mm512_fmadd_ps(wv[g], xb, acc[G * i + g]);
				}
			}
		}
	}
}

// pf16_tile sets dst[i·ds + 16g + r] for the G groups at w and T
// activation rows at x, stored masked to the rows that exist (m[g]).
INLINE AVX512 void pf16_tile(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T,
                             float *dst, int64_t ds, const __mmask16 *m, int pf) {
	__m512 acc[2 * F16_T];
	for (int a = 0; a < G * T; a++)
		acc[a] = _mm512_setzero_ps();
	pf16_512(w, gb, G, kp, x, xs, T, acc, pf);
	for (int i = 0; i < T; i++)
		for (int g = 0; g < G; g++)
			_mm512_mask_storeu_ps(dst + i * ds + 16 * g, m[g], acc[G * i + g]);
}

#define F16_CASE(g, t)                                                                        \
	case 100 * g + t:                                                                          \
		pf16_tile(w, gb, g, kp, x, xs, t, dst, ds, m, pf);                                 \
		break;

// pf16_groups runs G groups at w against T activation rows with G and T
// constants: G = 1 or 2 and T ≤ F16_T, or G = 4 and T ≤ F16_T/2.
static AVX512 void pf16_groups(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T,
                               float *dst, int64_t ds, const __mmask16 *m, int pf) {
	switch (100 * G + T) {
		F16_CASE(1, 1) F16_CASE(1, 2) F16_CASE(1, 3) F16_CASE(1, 4) F16_CASE(1, 5) F16_CASE(1, 6)
		F16_CASE(1, 7) F16_CASE(1, 8) F16_CASE(1, 9) F16_CASE(1, 10) F16_CASE(1, 11) F16_CASE(1, 12)
		F16_CASE(2, 1) F16_CASE(2, 2) F16_CASE(2, 3) F16_CASE(2, 4) F16_CASE(2, 5) F16_CASE(2, 6)
		F16_CASE(2, 7) F16_CASE(2, 8) F16_CASE(2, 9) F16_CASE(2, 10) F16_CASE(2, 11) F16_CASE(2, 12)
		F16_CASE(4, 1) F16_CASE(4, 2) F16_CASE(4, 3) F16_CASE(4, 4) F16_CASE(4, 5) F16_CASE(4, 6)
	}
}

// folio_pm_f16_512: dst[i·ds + r] = w row r · x row i, w packed F16
// groups of nb blocks of 32 columns. The activation rows are cut into
// tiles of at most F16_T rows, of even sizes; a few rows (a decode step,
// bound by the weights' bandwidth) take 4 groups at once, for 4 chains of
// FMAs in flight, more take 2.
AVX512 void folio_pm_f16_512(PM_ARGS) {
	int kp = 32 * nb;
	int tiles = (nx + F16_T - 1) / F16_T;
	int gmax = nx <= F16_T / 4 ? 4 : 2;
	for (int r = 0; r < rows;) {
		const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes;
		int left = (rows - r + 15) / 16, G = left >= gmax ? gmax : left >= 2 ? 2 : 1;
		__mmask16 m[4];
		for (int g = 0; g < G; g++) {
			int n = rows - r - 16 * g;
			m[g] = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
		}
		for (int t = 0, i = 0; t < tiles; t++) {
			int T = (nx - i) / (tiles - t); // the rows left, shared evenly
			pf16_groups(wg, group_bytes, G, kp, x + i * xs, xs, T, dst + i * ds + r, ds, m, t == 0);
			i += T;
		}
		r += 16 * G;
	}
}
