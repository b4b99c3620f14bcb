//go:build amd64 && cgo

// The float32 matmul (F32 weights: a mixture-of-experts router, a tiny
// model's layers): no activation format, the rows of x as they are. Each
// output is one accumulator of fused multiply-adds over the row in steps
// of a vector (8 or 16 lanes), the tail's lanes masked to zeros, then its
// lanes summed in a fixed order: the same arithmetic whatever the tile, so
// a row's result does not depend on the rows computed with it (decode and
// prefill agree bit for bit). Tiles: 4 weight rows by 4 activation rows at
// AVX-512 (16 accumulators), by 2 at AVX2 (8).

#include "simd.h"

// f32_512 sets dst[i·ds + r] for the NW weight rows at w (ws floats
// apart) and NX activation rows at x (xs apart), k elements each.
INLINE AVX512 void f32_512(const float *w, int64_t ws, const float *x, int64_t xs, int k, float *dst, int64_t ds,
                           int NW, int NX) {
	__m512 acc[4][4];
	for (int r = 0; r < NW; r++)
		for (int i = 0; i < NX; i++)
			acc[r][i] = _mm512_setzero_ps();
	for (int j = 0; j < k; j += 16) {
		__mmask16 m = k - j >= 16 ? 0xffff : (__mmask16)((1u << (k - j)) - 1);
		__m512 wv[4];
		for (int r = 0; r < NW; r++)
			wv[r] = _mm512_maskz_loadu_ps(m, w + r * ws + j);
		for (int i = 0; i < NX; i++) {
			__m512 xv = _mm512_maskz_loadu_ps(m, x + i * xs + j);
			for (int r = 0; r < NW; r++)
				acc[r][i] = _mm512_fmadd_ps(wv[r], xv, acc[r][i]);
		}
	}
	for (int r = 0; r < NW; r++)
		for (int i = 0; i < NX; i++)
			dst[i * ds + r] = _mm512_reduce_add_ps(acc[r][i]);
}

// f32_256 is f32_512 at AVX2.
INLINE AVX2 void f32_256(const float *w, int64_t ws, const float *x, int64_t xs, int k, float *dst, int64_t ds,
                         int NW, int NX) {
	const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	__m256 acc[4][2];
	for (int r = 0; r < NW; r++)
		for (int i = 0; i < NX; i++)
			acc[r][i] = _mm256_setzero_ps();
	for (int j = 0; j < k; j += 8) {
		__m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(k - j), iota);
		__m256 wv[4];
		for (int r = 0; r < NW; r++)
			wv[r] = _mm256_maskload_ps(w + r * ws + j, m);
		for (int i = 0; i < NX; i++) {
			__m256 xv = _mm256_maskload_ps(x + i * xs + j, m);
			for (int r = 0; r < NW; r++)
				acc[r][i] = _mm256_fmadd_ps(wv[r], xv, acc[r][i]);
		}
	}
	for (int r = 0; r < NW; r++)
		for (int i = 0; i < NX; i++)
			dst[i * ds + r] = hsum8(acc[r][i]);
}

// F32_TILES runs tile(…, NW, NX) over rows × nx: tiles of 4 weight rows
// by xt activation rows, then single rows of either.
#define F32_TILES(tile, xt)                                                                                      \
	int i = 0;                                                                                                 \
	for (; i + xt <= nx; i += xt) {                                                                            \
		int r = 0;                                                                                         \
		for (; r + 4 <= rows; r += 4)                                                                      \
			tile(w + r * ws, ws, x + i * xs, xs, k, dst + i * ds + r, ds, 4, xt);                      \
		for (; r < rows; r++)                                                                              \
			tile(w + r * ws, ws, x + i * xs, xs, k, dst + i * ds + r, ds, 1, xt);                      \
	}                                                                                                          \
	for (; i < nx; i++) {                                                                                      \
		int r = 0;                                                                                         \
		for (; r + 4 <= rows; r += 4)                                                                      \
			tile(w + r * ws, ws, x + i * xs, xs, k, dst + i * ds + r, ds, 4, 1);                       \
		for (; r < rows; r++)                                                                              \
			tile(w + r * ws, ws, x + i * xs, xs, k, dst + i * ds + r, ds, 1, 1);                       \
	}

static AVX512 void mm_f32_512(F32_ARGS) { F32_TILES(f32_512, 4) }
static AVX2 void mm_f32_256(F32_ARGS) { F32_TILES(f32_256, 2) }

// folio_matmul_f32: dst[i·ds + r] = w row r · x row i for r < rows and
// i < nx (rows of k floats, ws and xs floats apart), at AVX-512 or AVX2.
void folio_matmul_f32(int level, F32_ARGS) {
	if (level == LEVEL_AVX512)
		mm_f32_512(w, ws, rows, x, xs, nx, k, dst, ds);
	else
		mm_f32_256(w, ws, rows, x, xs, nx, k, dst, ds);
}
