//go:build amd64 && cgo

// The packed matmuls of many activation rows (prefill, large batches) on
// AMX-INT8 tiles, at the amx level. A packed Q8_0 block of a group (16
// rows, repack.go) is already a B tile in the layout the tile multiply
// wants: 8 rows of 64 bytes, row j holding quants 4j … 4j+3 of each of the
// 16 weight rows. A block of 16 activation rows is an A tile: 32 bytes a
// row (one X8P block), xs bytes apart. TDPBUSD then gives, for 16
// activation rows × 16 weight rows, the same int32 sums as 16·16 chains of
// vpdpbusd, and the float steps after it are the AVX-512 kernel's, in its
// order: the results are bit for bit those of the avx512 level.
//
// The tile multiply is not the bound: after each block (its own scales)
// the int32 sums are stored and scaled in AVX-512 registers, as many vector
// ops as the tile has rows. Tiles: C 0-3 (activation half t, group g: 2t+g),
// A 4-5, B 6-7.

#include "simd.h"
#include <cpuid.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define AMX __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,avx2,fma,f16c")))

// folio_amx_usable reports whether this process may use the INT8 and
// BF16 tiles: the CPU has them (CPUID 7.0 EDX bits 22, 24, 25) and
// AVX512-BF16's conversions (CPUID 7.1 EAX bit 5), as every AMX CPU so far
// does (the attention kernel, simd_attn_amx.c, needs the BF16 parts), the OS saves their state
// (XCR0 bits 17, 18), and Linux grants this process the tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA), which it must
// ask for before its first tile instruction.
int folio_amx_usable(void) {
	unsigned a, b, c, d;
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (0xdu << 22)) != (0xdu << 22))
		return 0;
	if (!__get_cpuid_count(7, 1, &a, &b, &c, &d) || !(a & (1u << 5)))
		return 0;
	if (!(c = 0, __get_cpuid(1, &a, &b, &c, &d)) || !(c & (1u << 27))) // OSXSAVE: xgetbv works
		return 0;
	unsigned lo, hi;
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & (3u << 17)) != (3u << 17))
		return 0;
	return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
}

// amx_config loads the tile shapes: C 16 × 16 int32, A 16 rows of acols
// bytes, B brows rows of 64 bytes.
static AMX void amx_config(int acols, int brows) {
	tilecfg c;
	memset(&c, 0, sizeof c);
	c.palette = 1;
	for (int t = 0; t < 4; t++)
		c.colsb[t] = 64, c.rows[t] = 16;
	for (int t = 4; t < 6; t++)
		c.colsb[t] = (uint16_t)acols, c.rows[t] = 16;
	for (int t = 6; t < 8; t++)
		c.colsb[t] = 64, c.rows[t] = (uint8_t)brows;
	tile_config(&c);
}

// store16 writes the lanes of v that m keeps to p.
INLINE AMX void store16(float *p, __mmask16 m, __m512 v) { _mm512_mask_storeu_ps(p, m, v); }

// amx_tiles sets acc[2·i + g] (i < 32 activation rows, g < 2 groups at w0
// and w1) to their dot products over nb blocks of kind: Q8_0 (the packed
// blocks are the B tiles, the X8P rows at x the A tiles, TDPBUSD, then
// the -128·Σw of the activations' bias) or Q4_0 (each block's nibbles
// unpacked less 8 into a B tile, the activation rows gathered at a, 32
// bytes a block and as bytes a row, TDPBSSD). The tiles of block b+1 are
// multiplied while block b's sums are scaled: their stores alternate
// between two buffers.
INLINE AMX void amx_tiles(int kind, const uint8_t *w0, const uint8_t *w1, int nb, const uint8_t *x, int64_t xs,
                          const uint8_t *a, int64_t as, __m512 *acc) {
	int32_t c[2][4][16][16] __attribute__((aligned(64)));
	uint8_t bt[2][512] __attribute__((aligned(64)));
	const uint8_t *ws[2] = {w0, w1};
	const __m512i m4 = _mm512_set1_epi8(0x0f), k8 = _mm512_set1_epi8(8);
	for (int b = -1; b < nb; b++) {
		int n = b + 1; // the block whose tiles are multiplied now
		// The tile loads wait for memory as the vector loads do not: the
		// weights of two blocks on are fetched now.
		int bb = kind == KIND_Q8_0 ? 512 : 256;
		if (n + 2 < nb)
			for (int g = 0; g < 2; g++)
				for (int j = 0; j < bb; j += 64)
					_mm_prefetch((const char *)ws[g] + (int64_t)bb * (n + 2) + j, _MM_HINT_T0);
		if (n < nb && kind == KIND_Q8_0) {
			int64_t o = (n / 2) * X8P_BYTES + 32 * (n % 2);
			_tile_loadd(4, x + o, xs);
			_tile_loadd(5, x + 16 * xs + o, xs);
			_tile_loadd(6, w0 + 512 * (int64_t)n, 64);
			_tile_loadd(7, w1 + 512 * (int64_t)n, 64);
		} else if (n < nb) {
			for (int g = 0; g < 2; g++)
				for (int j = 0; j < 4; j++) {
					__m512i v = _mm512_load_si512(ws[g] + 256 * (int64_t)n + 64 * j);
					_mm512_store_si512(bt[g] + 64 * j, _mm512_sub_epi8(_mm512_and_si512(v, m4), k8));
					_mm512_store_si512(bt[g] + 256 + 64 * j,
					                   _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), k8));
				}
			_tile_loadd(4, a + 32 * n, as);
			_tile_loadd(5, a + 16 * as + 32 * n, as);
			_tile_loadd(6, bt[0], 64);
			_tile_loadd(7, bt[1], 64);
		}
		if (n < nb) {
			_tile_zero(0);
			_tile_zero(1);
			_tile_zero(2);
			_tile_zero(3);
			if (kind == KIND_Q8_0) {
				_tile_dpbusd(0, 4, 6);
				_tile_dpbusd(1, 4, 7);
				_tile_dpbusd(2, 5, 6);
				_tile_dpbusd(3, 5, 7);
			} else {
				_tile_dpbssd(0, 4, 6);
				_tile_dpbssd(1, 4, 7);
				_tile_dpbssd(2, 5, 6);
				_tile_dpbssd(3, 5, 7);
			}
			_tile_stored(0, c[n % 2][0], 64);
			_tile_stored(1, c[n % 2][1], 64);
			_tile_stored(2, c[n % 2][2], 64);
			_tile_stored(3, c[n % 2][3], 64);
		}
		if (b < 0)
			continue;
		__m512i bias[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
		__m512 dw[2];
		const uint8_t *dx;
		if (kind == KIND_Q8_0) {
			for (int g = 0; g < 2; g++) {
				const uint8_t *wb = ws[g] + 512 * (int64_t)b;
				__m512i q[8];
				for (int j = 0; j < 8; j++)
					q[j] = _mm512_load_si512(wb + 64 * j);
				bias[g] = q8_bias512(q);
				dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ws[g] + 512 * (int64_t)nb + 32 * b)));
			}
			dx = x + (b / 2) * X8P_BYTES + 32 * (b % 2) + 64;
		} else {
			for (int g = 0; g < 2; g++)
				dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ws[g] + 256 * (int64_t)nb + 32 * b)));
			dx = x + (b / 4) * X4G_BYTES + 16 * (b % 4) + 128;
		}
		for (int i = 0; i < 32; i++) {
			__m512 dxi = _mm512_set1_ps(ldf(dx + i * xs));
			for (int g = 0; g < 2; g++) {
				__m512i s = _mm512_load_si512(c[b % 2][2 * (i / 16) + g][i % 16]);
				if (kind == KIND_Q8_0)
					s = _mm512_add_epi32(bias[g], s);
				acc[2 * i + g] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw[g], dxi),
				                                 b ? acc[2 * i + g] : _mm512_setzero_ps());
			}
		}
	}
}

// x4g_gather writes the 32 quants of each Q4_0 block of n X4G activation
// rows (x, xs bytes apart) in order, 32·nb bytes a row, to a.
static AMX void x4g_gather(const uint8_t *x, int64_t xs, int n, int nb, uint8_t *a) {
	for (int i = 0; i < n; i++)
		for (int b = 0; b < nb; b++) {
			const uint8_t *p = x + i * xs + (b / 4) * X4G_BYTES + 16 * (b % 4);
			__m256i v = _mm256_set_m128i(_mm_load_si128((const __m128i *)(p + 64)), _mm_load_si128((const __m128i *)p));
			_mm256_storeu_si256((__m256i *)(a + (int64_t)(i * nb + b) * 32), v);
		}
}

// pm_amx is the packed matmul of kind for nx ≥ 32 activation rows: tiles
// of 32 activation rows by two groups (the last tile overlapping the one
// before it when 32 does not divide nx, a last odd group taken twice and
// stored once). It returns 0, having done nothing, if Q4_0's gathered
// activations find no memory.
INLINE AMX int pm_amx(int kind, PM_ARGS) {
	__m512 acc[64];
	int groups = (rows + 15) / 16;
	int64_t as = 32 * (int64_t)nb;
	uint8_t *a = NULL;
	if (kind == KIND_Q4_0) {
		a = aligned_alloc(64, (nx * as + 63) & ~(int64_t)63);
		if (!a)
			return 0;
		x4g_gather(x, xs, nx, nb, a);
	}
	amx_config(32, 8);
	for (int g = 0; g < groups; g += 2) {
		const uint8_t *w0 = w + (int64_t)g * group_bytes, *w1 = g + 1 < groups ? w0 + group_bytes : w0;
		__mmask16 m[2];
		for (int h = 0; h < 2; h++) {
			int left = rows - 16 * (g + h);
			m[h] = left >= 16 ? 0xffff : left > 0 ? (__mmask16)((1u << left) - 1) : 0;
		}
		for (int i = 0; i < nx; i += 32) {
			int i0 = i + 32 <= nx ? i : nx - 32;
			amx_tiles(kind, w0, w1, nb, x + i0 * xs, xs, a ? a + i0 * as : NULL, as, acc);
			for (int r = 0; r < 32; r++)
				for (int h = 0; h < 2; h++)
					store16(dst + (i0 + r) * ds + 16 * (g + h), m[h], acc[2 * r + h]);
		}
	}
	_tile_release();
	free(a);
	return nx;
}

// folio_pm_amx runs the packed matmul of kind on the tiles where it has a
// tile kernel and nx is large enough, and returns how many activation rows
// (the first ones) it computed: 0 leaves them all to AVX-512.
AMX int folio_pm_amx(int kind, PM_ARGS) {
	if (nx < 32)
		return 0;
	switch (kind) {
	case KIND_Q8_0:
		return pm_amx(KIND_Q8_0, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	case KIND_Q4_0:
		return pm_amx(KIND_Q4_0, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	}
	return 0;
}
