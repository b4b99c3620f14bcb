//go:build amd64 && cgo

// The packed matmuls of many activation rows (prefill, large batches) on
// AMX-INT8 tiles, at the amx level. A packed Q8_0 block of a group (16
// rows, repack.go) is already a B tile in the layout the tile multiply
// wants: 8 rows of 64 bytes, row j holding quants 4j … 4j+3 of each of the
// 16 weight rows. A block of 16 activation rows is an A tile: 32 bytes a
// row (one X8P block), xs bytes apart. TDPBUSD then gives, for 16
// activation rows × 16 weight rows, the same int32 sums as 16·16 chains of
// vpdpbusd, and the float steps after it are the AVX-512 kernel's, in its
// order: the results are bit for bit those of the avx512 level. Q4_0's
// and Q4_K's nibbles are unpacked into B tiles once a group; Q4_K's
// sub-block sums are scaled in int32 as pq4_k_512's are (integer sums are
// exact in any order).
//
// The tile multiply is not the bound: after each block (its own scales)
// the int32 sums are stored and scaled in AVX-512 registers, as many vector
// ops as the tile has rows. So a tile of 16 activation rows by one group
// keeps its 16 rows of sums in registers over all the blocks, while the
// tiles of the next block are multiplied (C 0-1, A 2-3, B 4-5, taking
// turns). Tiles of 32 rows by two groups, their 64 rows of sums spilled to
// memory at every block, ran 1.3-1.6x slower
// (bench/results/2026-12-03-amx-rows.md).

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

// amx_config loads the tile shapes: C 0-1 16 × 16 int32, A 2-3 16 rows
// of 32 bytes (one block of 16 activation rows), B 4-5 8 rows of 64 bytes
// (one block of 16 weight rows).
static AMX void amx_config(void) {
	tilecfg c;
	memset(&c, 0, sizeof c);
	c.palette = 1;
	for (int t = 0; t < 2; t++)
		c.colsb[t] = 64, c.rows[t] = 16;
	for (int t = 2; t < 4; t++)
		c.colsb[t] = 32, c.rows[t] = 16;
	for (int t = 4; t < 6; t++)
		c.colsb[t] = 64, c.rows[t] = 8;
	tile_config(&c);
}

// store16 writes the lanes of v that m keeps to p.
INLINE AMX void store16(float *p, __mmask16 m, __m512 v) { _mm512_mask_storeu_ps(p, m, v); }

// amx_block multiplies a block's A tile (16 activation rows at a, as bytes
// apart) by its B tile (bt, 64 bytes a row) into C tile n % 2 and stores
// the int32 sums at c: TDPBUSD for Q8_0's unsigned activations, TDPBSSD for
// Q4_0's signed ones and signed weights, TDPBSUD for Q4_K's signed
// activations and unsigned weights. Tile numbers must be constants, hence
// the cases.
#define AMX_BLOCK(tc, ta, tb)                                                                                    \
	do {                                                                                                     \
		_tile_loadd(ta, a, as);                                                                          \
		_tile_loadd(tb, bt, 64);                                                                         \
		_tile_zero(tc);                                                                                  \
		if (kind == KIND_Q8_0)                                                                           \
			_tile_dpbusd(tc, ta, tb);                                                                \
		else if (kind == KIND_Q4_K)                                                                      \
			_tile_dpbsud(tc, ta, tb);                                                                \
		else                                                                                             \
			_tile_dpbssd(tc, ta, tb);                                                                \
		_tile_stored(tc, c, 64);                                                                         \
	} while (0)
INLINE AMX void amx_block(int kind, int n, const uint8_t *a, int64_t as, const uint8_t *bt, int32_t *c) {
	if (n % 2 == 0)
		AMX_BLOCK(0, 2, 4);
	else
		AMX_BLOCK(1, 3, 5);
}
#undef AMX_BLOCK

// amx_scale adds block b's sums (the 16 × 16 int32 at c) to acc[i], the
// rows of a tile: times the weights' scales (16 halves at ds + 32·b) and
// each activation row's (a float, xs bytes apart in x's block b), after
// Q8_0's -128·Σw of the activations' bias (at bias + 16·b). The float steps
// are the AVX-512 kernel's, in its order.
INLINE AMX void amx_scale(int kind, int b, const int32_t *c, const uint8_t *ds, const int32_t *bias, const uint8_t *x,
                          int64_t xs, __m512 *acc) {
	__m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(ds + 32 * b)));
	const uint8_t *dx = kind == KIND_Q8_0 ? x + (b / 2) * X8P_BYTES + 32 * (b % 2) + 64
	                                      : x + (b / 4) * X4G_BYTES + 16 * (b % 4) + 128;
	__m512i bs = kind == KIND_Q8_0 ? _mm512_load_si512(bias + 16 * b) : _mm512_setzero_si512();
	for (int i = 0; i < 16; i++) {
		__m512i s = _mm512_load_si512(c + 16 * i);
		if (kind == KIND_Q8_0)
			s = _mm512_add_epi32(bs, s);
		acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(ldf(dx + i * xs))), acc[i]);
	}
}

// amx_a is where block n of an A tile starts: in an X8P row (Q8_0), in
// Q4_0's gathered quants (32 bytes a block) or in an XK row (Q4_K: its
// 32-quant sub-blocks, 8 a super-block).
INLINE int64_t amx_a(int kind, int n) {
	return kind == KIND_Q8_0 ? (n / 2) * X8P_BYTES + 32 * (n % 2)
	       : kind == KIND_Q4_K ? (n / 8) * XK_BYTES + 32 * (n % 8)
	                           : 32 * n;
}

// amx_q4k_scale adds sub-block u's sums (the 16 × 16 int32 at c) times
// their weight rows' 6-bit scales to isum[i]; after a super-block's last
// it adds the super-block to acc[i] as pq4_k_512 does: d·dx·isum −
// dmin·dx·Σ min·Σx. The integer sums are exact in any order, so they and
// the float steps after them are pq4_k_512's.
INLINE AMX void amx_q4k_scale(int u, const int32_t *c, const uint8_t *w, const uint8_t *x, int64_t xs, __m512i *isum,
                              __m512 *acc) {
	int sb = u / 8, j = u % 8;
	const uint8_t *wb = w + (int64_t)sb * Q4_KP_BYTES;
	__m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wb + 64 + 16 * j)));
	for (int i = 0; i < 16; i++) {
		__m512i p = _mm512_mullo_epi32(_mm512_load_si512(c + 16 * i), sc);
		isum[i] = j ? _mm512_add_epi32(isum[i], p) : p;
	}
	if (j < 7)
		return;
	q4k_finish512(wb, x + (int64_t)sb * XK_BYTES, xs, 16, isum, acc);
}

// amx_rows sets acc[i] (16 activation rows, 16 weight rows) to their dot
// products over n blocks of kind: the A tiles at a, as bytes a row, the B
// tiles at bt, 512 bytes a block, the scales as amx_scale (Q8_0, Q4_0:
// ds, bias) or amx_q4k_scale (Q4_K: the group at w) reads them. The tiles
// of the block after b are multiplied while b's sums are scaled, their
// stores taking turns between two buffers.
INLINE AMX void amx_rows(int kind, int n, const uint8_t *a, int64_t as, const uint8_t *bt, const uint8_t *w,
                         const uint8_t *ds, const int32_t *bias, const uint8_t *x, int64_t xs, __m512 *acc) {
	int32_t c[2][16][16] __attribute__((aligned(64)));
	__m512i isum[16]; // Q4_K's
	for (int i = 0; i < 16; i++)
		acc[i] = _mm512_setzero_ps();
#define AMX_ADD(b, cb)                                                                                          \
	(kind == KIND_Q4_K ? amx_q4k_scale(b, cb, w, x, xs, isum, acc) : amx_scale(kind, b, cb, ds, bias, x, xs, acc))
	amx_block(kind, 0, a, as, bt, c[0][0]);
	int b = 0;
	for (; b + 2 <= n; b += 2) {
		amx_block(kind, 1, a + amx_a(kind, b + 1), as, bt + 512 * (b + 1), c[1][0]);
		AMX_ADD(b, c[0][0]);
		if (b + 2 < n)
			amx_block(kind, 0, a + amx_a(kind, b + 2), as, bt + 512 * (b + 2), c[0][0]);
		AMX_ADD(b + 1, c[1][0]);
	}
	if (b < n)
		AMX_ADD(b, c[0][0]);
#undef AMX_ADD
}

// nibbles writes the low nibbles of the n 64-byte vectors at src, less
// sub, to dst, and their high nibbles, less sub, to the n vectors after
// them: B tiles of unpacked 4-bit quants.
INLINE AMX void nibbles(const uint8_t *src, int n, uint8_t *dst, __m512i sub) {
	const __m512i m4 = _mm512_set1_epi8(0x0f);
	for (int t = 0; t < n; t++) {
		__m512i v = _mm512_load_si512(src + 64 * t);
		_mm512_store_si512(dst + 64 * t, _mm512_sub_epi8(_mm512_and_si512(v, m4), sub));
		_mm512_store_si512(dst + 64 * (n + t), _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), m4), sub));
	}
}

// q4_k_unpack writes a packed Q4_K group's nb super-blocks of nibbles as B
// tiles, sub-block j of super-block s at bt + 512·(8s + j): row t holds
// quants 4t … 4t+3 of each of the 16 weight rows, as the packed layout
// keeps them, low nibbles for even j, high for odd.
static AMX void q4_k_unpack(const uint8_t *w, int nb, uint8_t *bt) {
	for (int s = 0; s < nb; s++)
		for (int p = 0; p < 4; p++)
			nibbles(w + (int64_t)s * Q4_KP_BYTES + 320 + 512 * p, 8, bt + 512 * (int64_t)(8 * s + 2 * p),
			        _mm512_setzero_si512());
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

// q4_0_unpack writes a packed Q4_0 group's nb blocks of nibbles (256 bytes
// a block, each nibble less 8) as B tiles, 512 bytes a block, to bt.
static AMX void q4_0_unpack(const uint8_t *w, int nb, uint8_t *bt) {
	for (int b = 0; b < nb; b++)
		nibbles(w + 256 * (int64_t)b, 4, bt + 512 * (int64_t)b, _mm512_set1_epi8(8));
}

// q8_0_biases writes -128·Σw of each of a packed Q8_0 group's nb blocks
// (16 int32 a block) to bias.
static AMX void q8_0_biases(const uint8_t *w, int nb, int32_t *bias) {
	for (int b = 0; b < nb; b++) {
		__m512i q[8];
		for (int j = 0; j < 8; j++)
			q[j] = _mm512_load_si512(w + 512 * (int64_t)b + 64 * j);
		_mm512_store_si512(bias + 16 * b, q8_bias512(q));
	}
}

// pm_amx is the packed matmul of kind for nx ≥ 16 activation rows: for
// each group of 16 weight rows, tiles of 16 activation rows (the last one
// overlapping the one before it when 16 does not divide nx: 12 or more
// rows left, folio_pm_amx's rule), each tile's
// 16 × 16 sums in registers over all the blocks. A group's weights are
// prepared once for all the tiles: Q4_0's and Q4_K's nibbles unpacked
// into B tiles, Q8_0's biases summed. It returns 0, having done nothing, if its buffers
// find no memory.
INLINE AMX int pm_amx(int kind, PM_ARGS) {
	int groups = (rows + 15) / 16;
	int64_t as = kind == KIND_Q4_0 ? 32 * (int64_t)nb : xs;
	int64_t abytes = kind == KIND_Q4_0 ? (nx * as + 63) & ~(int64_t)63 : 0;
	int64_t wbytes = kind == KIND_Q4_0 ? 512 * (int64_t)nb : kind == KIND_Q4_K ? 4096 * (int64_t)nb : 64 * (int64_t)nb;
	uint8_t *buf = aligned_alloc(64, abytes + wbytes);
	if (!buf)
		return 0;
	uint8_t *wb = buf + abytes;
	const uint8_t *a = x;
	if (kind == KIND_Q4_0) {
		x4g_gather(x, xs, nx, nb, buf);
		a = buf;
	}
	int64_t dsoff = kind == KIND_Q8_0 ? 512 * (int64_t)nb : 256 * (int64_t)nb;
	amx_config();
	for (int g = 0; g < groups; g++) {
		const uint8_t *w0 = w + (int64_t)g * group_bytes;
		const uint8_t *bt = w0;
		if (kind == KIND_Q4_0) {
			q4_0_unpack(w0, nb, wb);
			bt = wb;
		} else if (kind == KIND_Q4_K) {
			q4_k_unpack(w0, nb, wb);
			bt = wb;
		} else {
			q8_0_biases(w0, nb, (int32_t *)wb);
		}
		int left = rows - 16 * g;
		__mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
		for (int i = 0; i < nx; i += 16) {
			int i0 = i + 16 <= nx ? i : nx - 16;
			__m512 acc[16];
			amx_rows(kind, kind == KIND_Q4_K ? 8 * nb : nb, a + i0 * as, as, bt, w0, w0 + dsoff, (const int32_t *)wb,
			         x + i0 * xs, xs, acc);
			for (int r = 0; r < 16; r++)
				store16(dst + (i0 + r) * ds + 16 * g, m, acc[r]);
		}
	}
	_tile_release();
	free(buf);
	return nx;
}

// folio_pm_amx runs the packed matmul of kind on the tiles where it has a
// tile kernel and nx is large enough, and returns how many activation rows
// (the first ones) it computed: 0 leaves them all to AVX-512.
AMX int folio_pm_amx(int kind, PM_ARGS) {
	// A last tile of under 12 rows is left to AVX-512: as a 16-row tile
	// overlapping the one before it, it repeats most of that tile's work
	// (17 rows on the tiles measured slower than at AVX-512).
	if (nx % 16 < 12)
		nx -= nx % 16;
	if (nx < 16)
		return 0;
	switch (kind) {
	case KIND_Q8_0:
		return pm_amx(KIND_Q8_0, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	case KIND_Q4_0:
		return pm_amx(KIND_Q4_0, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	case KIND_Q4_K:
		return pm_amx(KIND_Q4_K, w, group_bytes, nb, rows, x, xs, nx, dst, ds);
	}
	return 0;
}
