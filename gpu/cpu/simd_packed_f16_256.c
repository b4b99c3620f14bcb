//go:build amd64 && cgo

// The packed F16 and BF16 kernel at AVX2 (and AVX-VNNI, which has nothing
// to add to float32 FMAs): simd_packed_f16.c's on 256-bit vectors. A
// group's column is two vectors, rows 0-7 and 8-15, each 8 halves widened
// by vcvtph2ps (BF16: a widening and a shift), each feeding one FMA per
// activation row of a tile. The activations are converted to float32 a
// chunk of columns at a time into a scratch on the stack.
//
// Each (weight row, activation row) sum is one chain of FMAs, from zero,
// over the columns in order (a partial sum waits in dst between chunks as
// a float32), as at AVX-512: the levels' results are the same bits.

#include "simd.h"

// H_KC is the columns of a chunk of converted activations, H_XB the most
// activation rows converted at once (32 KiB of the stack).
#define H_KC 128
#define H_XB 64

// H_T is the most activation rows of a tile: its 2·6 accumulators, the
// column's 2 weight vectors and a broadcast fit AVX2's 16 registers.
#define H_T 6

// wide8 widens the 8 halves at p (16-byte aligned) to float32, or with bf
// 8 bfloat16s.
INLINE AVX2 __m256 wide8(const uint8_t *p, int bf) {
	__m128i h = _mm_load_si128((const __m128i *)p);
	return bf ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
}

// h_cvt converts columns c … c+kc-1 (kc a multiple of 32) of n rows at x
// (xs bytes apart) into xf, rows H_KC floats apart.
INLINE AVX2 void h_cvt(const uint8_t *x, int64_t xs, int n, int c, int kc, float *xf, int bf) {
	for (int i = 0; i < n; i++)
		for (int j = 0; j < kc; j += 8)
			_mm256_store_ps(xf + i * H_KC + j, wide8(x + i * xs + 2 * (c + j), bf));
}

// load8 and put8 read and write the first n ≤ 8 floats at p.
INLINE AVX2 __m256i mask8(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
INLINE AVX2 __m256 load8(const float *p, int n) { return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask8(n)); }
INLINE AVX2 void put8(float *p, __m256 v, int n) {
	if (n >= 8)
		_mm256_storeu_ps(p, v);
	else if (n > 0)
		_mm256_maskstore_ps(p, mask8(n), v);
}

// ph_step adds the dot products of kc columns of a group at w with T rows
// of xf to the partial sums in dst (zero when first), for the n rows of
// the group that exist.
INLINE AVX2 void ph_step(const uint8_t *w, int kc, const float *xf, int T, float *dst, int64_t ds, int n, int first,
                         int bf) {
	__m256 acc[2 * H_T];
	for (int i = 0; i < T; i++)
		for (int h = 0; h < 2; h++)
			acc[2 * i + h] = first ? _mm256_setzero_ps() : load8(dst + i * ds + 8 * h, n - 8 * h);
	for (int j = 0; j < kc; j++) {
		__m256 w0 = wide8(w + 32 * j, bf), w1 = wide8(w + 32 * j + 16, bf);
		for (int i = 0; i < T; i++) {
			__m256 xb = _mm256_broadcast_ss(xf + i * H_KC + j);
			acc[2 * i] = _mm256_fmadd_ps(w0, xb, acc[2 * i]);
			acc[2 * i + 1] = _mm256_fmadd_ps(w1, xb, acc[2 * i + 1]);
		}
	}
	for (int i = 0; i < T; i++)
		for (int h = 0; h < 2; h++)
			put8(dst + i * ds + 8 * h, acc[2 * i + h], n - 8 * h);
}

#define H_STEP(t)                                                                                             \
	case t:                                                                                                \
		ph_step(w, kc, xf, t, dst, ds, n, first, bf);                                                 \
		break;

// PH_STEPS(name, BF) defines name, which runs ph_step with T ≤ H_T a
// constant, for halves (BF 0) or bfloat16s.
#define PH_STEPS(name, BF)                                                                                    \
	static AVX2 void name(const uint8_t *w, int kc, const float *xf, int T, float *dst, int64_t ds, int n,       \
	                      int first) {                                                                      \
		const int bf = BF;                                                                             \
		switch (T) { H_STEP(1) H_STEP(2) H_STEP(3) H_STEP(4) H_STEP(5) H_STEP(6) }                     \
	}
PH_STEPS(ph_steps, 0)
PH_STEPS(pbh_steps, 1)

// H_PREFETCH is how far ahead ph_rows prefetches each group's stream.
#define H_PREFETCH 2048

// ph_rows sets dst[i·ds + 16g + r] to the dot products of G groups at w
// (gb bytes apart; columns 0 … kp-1) with T ≤ 3 rows at x, all the
// columns at a time: a decode step, bound by the weights' bandwidth,
// streams G groups at once, their accumulators in registers (2·G·T ≤ 12),
// each stream prefetched H_PREFETCH ahead. n is the rows left from the
// first group on.
INLINE AVX2 void ph_rows(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T, float *dst,
                         int64_t ds, int n, int bf) {
	float xf[3 * H_KC] __attribute__((aligned(32)));
	__m256 acc[12];
	for (int a = 0; a < 2 * G * T; a++)
		acc[a] = _mm256_setzero_ps();
	for (int c = 0; c < kp; c += H_KC) {
		int kc = kp - c < H_KC ? kp - c : H_KC;
		h_cvt(x, xs, T, c, kc, xf, bf);
		for (int j = 0; j < kc; j++) {
			const uint8_t *wc = w + 32 * (int64_t)(c + j);
			if (j % 2 == 0)
				for (int g = 0; g < G; g++)
					__builtin_prefetch(wc + g * gb + H_PREFETCH, 0, 3);
			for (int g = 0; g < G; g++) {
				__m256 w0 = wide8(wc + g * gb, bf), w1 = wide8(wc + g * gb + 16, bf);
				for (int i = 0; i < T; i++) {
					__m256 xb = _mm256_broadcast_ss(xf + i * H_KC + j);
					acc[2 * (G * i + g)] = _mm256_fmadd_ps(w0, xb, acc[2 * (G * i + g)]);
					acc[2 * (G * i + g) + 1] = _mm256_fmadd_ps(w1, xb, acc[2 * (G * i + g) + 1]);
				}
			}
		}
	}
	for (int i = 0; i < T; i++)
		for (int g = 0; g < G; g++)
			for (int h = 0; h < 2; h++)
				put8(dst + i * ds + 16 * g + 8 * h, acc[2 * (G * i + g) + h], n - 16 * g - 8 * h);
}

#define H_ROWS(g, t)                                                                                          \
	case 10 * g + t:                                                                                       \
		ph_rows(w, gb, g, kp, x, xs, t, dst, ds, n, bf);                                              \
		break;

// PH_FEW(name, BF) defines name, which runs ph_rows with G (1, 2 or 4 for
// one row; 1 or 2 for two or three) and T constants.
#define PH_FEW(name, BF)                                                                                      \
	static AVX2 void name(const uint8_t *w, int64_t gb, int G, int kp, const uint8_t *x, int64_t xs, int T,     \
	                      float *dst, int64_t ds, int n) {                                                  \
		const int bf = BF;                                                                             \
		switch (10 * G + T) { H_ROWS(1, 1) H_ROWS(2, 1) H_ROWS(4, 1) H_ROWS(1, 2) H_ROWS(2, 2) H_ROWS(1, 3) H_ROWS(2, 3) } \
	}
PH_FEW(ph_few, 0)
PH_FEW(pbh_few, 1)

// pm_half_256: dst[i·ds + r] = w row r · x row i, w packed F16 (with bf
// BF16) groups of nb blocks of 32 columns. Up to 3 activation rows take
// ph_rows. More are taken H_XB at a time, a chunk of H_KC columns
// converted once for all the groups, each group then in tiles of at most
// H_T rows whose partial sums wait in dst for the next chunk.
INLINE AVX2 void pm_half_256(PM_ARGS, int bf) {
	int kp = 32 * nb;
	if (nx <= 3) {
		for (int r = 0; r < rows;) {
			int left = (rows - r + 15) / 16, G = nx == 1 && left >= 4 ? 4 : left >= 2 ? 2 : 1;
			(bf ? pbh_few : ph_few)(w + (int64_t)(r / 16) * group_bytes, group_bytes, G, kp, x, xs, nx, dst + r, ds,
			                        rows - r);
			r += 16 * G;
		}
		return;
	}
	float xf[H_XB * H_KC] __attribute__((aligned(32)));
	for (int i0 = 0; i0 < nx; i0 += H_XB) {
		int n = nx - i0 < H_XB ? nx - i0 : H_XB, tiles = (n + H_T - 1) / H_T;
		for (int c = 0; c < kp; c += H_KC) {
			int kc = kp - c < H_KC ? kp - c : H_KC;
			h_cvt(x + i0 * xs, xs, n, c, kc, xf, bf);
			for (int r = 0; r < rows; r += 16) {
				const uint8_t *wg = w + (int64_t)(r / 16) * group_bytes + 32 * (int64_t)c;
				for (int t = 0, i = 0; t < tiles; t++) {
					int T = (n - i) / (tiles - t); // the rows left, shared evenly
					(bf ? pbh_steps : ph_steps)(wg, kc, xf + i * H_KC, T, dst + (i0 + i) * ds + r, ds, rows - r,
					                            c == 0);
					i += T;
				}
			}
		}
	}
}

AVX2 void folio_pm_f16_256(PM_ARGS) { pm_half_256(w, group_bytes, nb, rows, x, xs, nx, dst, ds, 0); }
AVX2 void folio_pm_bf16_256(PM_ARGS) { pm_half_256(w, group_bytes, nb, rows, x, xs, nx, dst, ds, 1); }
