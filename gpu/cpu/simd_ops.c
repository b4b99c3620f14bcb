//go:build amd64 && cgo

// Elementwise ops in float32, as ggml computes them.

#include "simd.h"

static AVX512 void silu_mul512(const float *gate, const float *up, float *dst, int64_t n) {
	const __m512 one = _mm512_set1_ps(1.f);
	for (int64_t i = 0; i < n; i += 16) {
		__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);
		__m512 g = _mm512_maskz_loadu_ps(m, gate + i);
		__m512 s = _mm512_div_ps(g, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
		_mm512_mask_storeu_ps(dst + i, m, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, up + i)));
	}
}

static AVX2 void silu_mul256(const float *gate, const float *up, float *dst, int64_t n) {
	const __m256 one = _mm256_set1_ps(1.f);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 g = _mm256_loadu_ps(gate + i);
		__m256 s = _mm256_div_ps(g, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
		_mm256_storeu_ps(dst + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
	}
	if (i < n) {
		float g[8] = {0}, u[8] = {0}, y[8];
		memcpy(g, gate + i, 4 * (n - i));
		memcpy(u, up + i, 4 * (n - i));
		silu_mul256(g, u, y, 8);
		memcpy(dst + i, y, 4 * (n - i));
	}
}

// folio_gelu_mul: dst = gelu(gate) · up (up NULL: gelu(gate)), gelu as
// GELUMul's Go kernel makes it: 0 at or below -10, the gate itself at or
// above 10 (and NaN), else tab[the half nearest the gate] (F16C rounds to
// nearest even, as gguf.F32ToF16); the product rounded once. dst may be
// gate.
AVX2 void folio_gelu_mul(const float *tab, const float *gate, const float *up, float *dst, int64_t n) {
	const __m256 lo = _mm256_set1_ps(-10.f), hi = _mm256_set1_ps(10.f);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(gate + i);
		__m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
		__m256 in = _mm256_and_ps(_mm256_cmp_ps(x, hi, _CMP_LT_OQ), _mm256_cmp_ps(x, lo, _CMP_GT_OQ));
		__m256 y = _mm256_blendv_ps(x, _mm256_mask_i32gather_ps(x, tab, h, in, 4), in);
		y = _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LE_OQ), y);
		if (up)
			y = _mm256_mul_ps(y, _mm256_loadu_ps(up + i));
		_mm256_storeu_ps(dst + i, y);
	}
	for (; i < n; i++) {
		float x = gate[i], y = x;
		if (x <= -10.f)
			y = 0;
		else if (x < 10.f)
			y = tab[_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)];
		dst[i] = up ? y * up[i] : y;
	}
}

// folio_silu_mul: dst = gate / (1 + e^-gate) · up (ggml's swiglu). dst may
// be gate.
void folio_silu_mul(int level, const float *gate, const float *up, float *dst, int64_t n) {
	if (level == LEVEL_AVX512)
		silu_mul512(gate, up, dst, n);
	else
		silu_mul256(gate, up, dst, n);
}

// folio_write_kv_f16 stores n rows of k and v (width = kvheads·d floats
// each) as halves (round to nearest even, as F16C and ggml do) at the K/V
// slots slots[i]: head h of slot s starts at ((s/bs·kvheads + h)·bs +
// s%bs)·d of kd and vd.
AVX2 void folio_write_kv_f16(const float *k, const float *v, int n, const int32_t *slots, uint16_t *kd, uint16_t *vd,
                             int bs, int kvheads, int d) {
	int width = kvheads * d;
	for (int i = 0; i < n; i++) {
		int64_t s = slots[i];
		for (int h = 0; h < kvheads; h++) {
			int64_t at = ((s / bs * kvheads + h) * bs + s % bs) * d;
			const float *src[2] = {k + (int64_t)i * width + h * d, v + (int64_t)i * width + h * d};
			uint16_t *dst[2] = {kd + at, vd + at};
			for (int t = 0; t < 2; t++) {
				int j = 0;
				for (; j + 8 <= d; j += 8)
					_mm_storeu_si128((__m128i *)(dst[t] + j), _mm256_cvtps_ph(_mm256_loadu_ps(src[t] + j), 0));
				for (; j < d; j++)
					dst[t][j] = _cvtss_sh(src[t][j], 0);
			}
		}
	}
}

// quant_q8_block quantizes 32 floats of x into a Q8_0 block at out (34
// bytes) as ggml's quantize_row_q8_0_ref: d = amax/127 stored as a half,
// quants x·(1/d) rounded half away from zero (roundf: truncated, then one
// step away from zero when the dropped part is at least a half; x·(1/d)
// is within ±127.5, where that is exact).
static AVX2 void quant_q8_block(const float *x, uint8_t *out) {
	const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	__m256 v[4], mx = _mm256_setzero_ps();
	for (int i = 0; i < 4; i++) {
		v[i] = _mm256_loadu_ps(x + 8 * i);
		mx = _mm256_max_ps(mx, _mm256_and_ps(v[i], abs));
	}
	__m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
	m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
	m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
	float d = _mm_cvtss_f32(m4) / 127.f, id = d != 0.f ? 1.f / d : 0.f;
	uint16_t h = _cvtss_sh(d, 0);
	memcpy(out, &h, 2);
	const __m256 idv = _mm256_set1_ps(id), half = _mm256_set1_ps(0.5f), one = _mm256_set1_ps(1.f);
	__m256i q[4];
	for (int i = 0; i < 4; i++) {
		__m256 y = _mm256_mul_ps(v[i], idv);
		__m256 t = _mm256_round_ps(y, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
		__m256 away = _mm256_cmp_ps(_mm256_and_ps(_mm256_sub_ps(y, t), abs), half, _CMP_GE_OQ);
		__m256 step = _mm256_or_ps(one, _mm256_andnot_ps(abs, y)); // ±1, y's sign
		t = _mm256_add_ps(t, _mm256_and_ps(step, away));
		q[i] = _mm256_cvttps_epi32(t);
	}
	__m256i b = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
	b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
	_mm256_storeu_si256((__m256i *)(out + 2), b);
}

// folio_write_kv_q8 is folio_write_kv_f16 for a Q8_0 cache: each head's
// row of d (a multiple of 32) elements becomes d/32 blocks, element e of a
// layer starting at byte e/32·34.
AVX2 void folio_write_kv_q8(const float *k, const float *v, int n, const int32_t *slots, uint8_t *kd, uint8_t *vd,
                            int bs, int kvheads, int d) {
	int width = kvheads * d;
	for (int i = 0; i < n; i++) {
		int64_t s = slots[i];
		for (int h = 0; h < kvheads; h++) {
			int64_t at = ((s / bs * kvheads + h) * bs + s % bs) * d / 32 * Q8_0_BYTES;
			for (int j = 0; j < d; j += 32) {
				quant_q8_block(k + (int64_t)i * width + h * d + j, kd + at + j / 32 * Q8_0_BYTES);
				quant_q8_block(v + (int64_t)i * width + h * d + j, vd + at + j / 32 * Q8_0_BYTES);
			}
		}
	}
}

// rmsnorm_row512 is one run of g elements of folio_rmsnorm: the squares in
// float32 summed in float64 (two accumulators of 8), then (x·scale)·w.
static AVX512 void rmsnorm_row512(const float *x, const float *w, float *y, int g, float eps) {
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	for (int j = 0; j < g; j += 16) {
		__mmask16 m = g - j >= 16 ? 0xffff : (__mmask16)((1u << (g - j)) - 1);
		__m512 v = _mm512_maskz_loadu_ps(m, x + j);
		__m512 sq = _mm512_mul_ps(v, v);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(sq, 1)));
	}
	float mean = (float)(_mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) / g);
	__m512 scale = _mm512_set1_ps(1.f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean + eps))));
	for (int j = 0; j < g; j += 16) {
		__mmask16 m = g - j >= 16 ? 0xffff : (__mmask16)((1u << (g - j)) - 1);
		__m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), scale);
		_mm512_mask_storeu_ps(y + j, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + j)));
	}
}

// mask8 is a maskload mask of the first min(n, 8) lanes.
static inline AVX2 __m256i mask8(int n) {
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static AVX2 void rmsnorm_row256(const float *x, const float *w, float *y, int g, float eps) {
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	for (int j = 0; j < g; j += 8) {
		__m256 v = _mm256_maskload_ps(x + j, mask8(g - j));
		__m256 sq = _mm256_mul_ps(v, v);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
	}
	__m256d s = _mm256_add_pd(s0, s1);
	__m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
	float mean = (float)(_mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h))) / g);
	__m256 scale = _mm256_set1_ps(1.f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean + eps))));
	for (int j = 0; j < g; j += 8) {
		__m256i m = mask8(g - j);
		__m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + j, m), scale);
		_mm256_maskstore_ps(y + j, m, _mm256_mul_ps(v, _mm256_maskload_ps(w + j, m)));
	}
}

// folio_rmsnorm: each of n runs of g elements of x becomes x /
// sqrtf(mean(x²) + eps) · w into y (which may be x), as ggml's rms_norm
// and the mul after it round.
void folio_rmsnorm(int level, const float *x, const float *w, float *y, int64_t n, int g, float eps) {
	for (int64_t r = 0; r < n; r++) {
		if (level == LEVEL_AVX512)
			rmsnorm_row512(x + r * g, w, y + r * g, g, eps);
		else
			rmsnorm_row256(x + r * g, w, y + r * g, g, eps);
	}
}

static AVX512 void add512(const float *a, const float *b, float *y, int64_t c) {
	for (int64_t j = 0; j < c; j += 16) {
		__mmask16 m = c - j >= 16 ? 0xffff : (__mmask16)((1u << (c - j)) - 1);
		_mm512_mask_storeu_ps(y + j, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + j), _mm512_maskz_loadu_ps(m, b + j)));
	}
}

static AVX2 void add256(const float *a, const float *b, float *y, int64_t c) {
	for (int64_t j = 0; j < c; j += 8) {
		__m256i m = mask8(c - j > 8 ? 8 : (int)(c - j));
		_mm256_maskstore_ps(y + j, m, _mm256_add_ps(_mm256_maskload_ps(a + j, m), _mm256_maskload_ps(b + j, m)));
	}
}

// folio_add: n rows of c elements, y = a + b, b's rows bstride apart (0:
// one row broadcast). y may be a.
void folio_add(int level, const float *a, const float *b, float *y, int64_t n, int64_t c, int64_t bstride) {
	for (int64_t r = 0; r < n; r++) {
		if (level == LEVEL_AVX512)
			add512(a + r * c, b + r * bstride, y + r * c, c);
		else
			add256(a + r * c, b + r * bstride, y + r * c, c);
	}
}

// softmax_row512 is ggml_vec_soft_max_f32 and its caller: e^(x - max) in
// float32 (exp512), summed in float64, scaled by the float32 of 1/sum.
static AVX512 void softmax_row512(float *x, int64_t c) {
	__m512 mx = _mm512_set1_ps(-__builtin_inff());
	for (int64_t j = 0; j < c; j += 16) {
		__mmask16 m = c - j >= 16 ? 0xffff : (__mmask16)((1u << (c - j)) - 1);
		mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, x + j));
	}
	__m512 mv = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
	__m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
	for (int64_t j = 0; j < c; j += 16) {
		__mmask16 m = c - j >= 16 ? 0xffff : (__mmask16)((1u << (c - j)) - 1);
		__m512 e = _mm512_maskz_mov_ps(m, exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j), mv)));
		_mm512_mask_storeu_ps(x + j, m, e);
		s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
		s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
	}
	__m512 inv = _mm512_set1_ps((float)(1 / _mm512_reduce_add_pd(_mm512_add_pd(s0, s1))));
	for (int64_t j = 0; j < c; j += 16) {
		__mmask16 m = c - j >= 16 ? 0xffff : (__mmask16)((1u << (c - j)) - 1);
		_mm512_mask_storeu_ps(x + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + j), inv));
	}
}

static AVX2 void softmax_row256(float *x, int64_t c) {
	__m256 mx = _mm256_set1_ps(-__builtin_inff());
	for (int64_t j = 0; j < c; j += 8) {
		__m256i m = mask8(c - j > 8 ? 8 : (int)(c - j));
		mx = _mm256_max_ps(mx, _mm256_blendv_ps(mx, _mm256_maskload_ps(x + j, m), _mm256_castsi256_ps(m)));
	}
	__m128 h = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
	h = _mm_max_ps(h, _mm_movehl_ps(h, h));
	h = _mm_max_ss(h, _mm_movehdup_ps(h));
	__m256 mv = _mm256_set1_ps(_mm_cvtss_f32(h));
	__m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
	for (int64_t j = 0; j < c; j += 8) {
		__m256i m = mask8(c - j > 8 ? 8 : (int)(c - j));
		__m256 e = _mm256_and_ps(exp256(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), mv)), _mm256_castsi256_ps(m));
		_mm256_maskstore_ps(x + j, m, e);
		s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
		s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
	}
	__m256d s = _mm256_add_pd(s0, s1);
	__m128d sh = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
	__m256 inv = _mm256_set1_ps((float)(1 / _mm_cvtsd_f64(_mm_add_sd(sh, _mm_unpackhi_pd(sh, sh)))));
	for (int64_t j = 0; j < c; j += 8) {
		__m256i m = mask8(c - j > 8 ? 8 : (int)(c - j));
		_mm256_maskstore_ps(x + j, m, _mm256_mul_ps(_mm256_maskload_ps(x + j, m), inv));
	}
}

// folio_softmax: each of n rows of c elements of x becomes its softmax.
void folio_softmax(int level, float *x, int64_t n, int64_t c) {
	for (int64_t r = 0; r < n; r++) {
		if (level == LEVEL_AVX512)
			softmax_row512(x + r * c, c);
		else
			softmax_row256(x + r * c, c);
	}
}

// folio_rope_pairs rotates the first dims elements of each hd-element head
// of n rows of c elements of x, by adjacent pairs (2i, 2i+1) (Llama's rope;
// NeoX's stays in Go), with row r's cos and sin of pair i at cs[r·dims +
// 2i] and [… + 2i+1]. Each product is rounded to float32 before the sum, as
// the Go kernel and ggml do: the sums are masked builtins, which the
// compiler does not contract into FMAs.
AVX512 void folio_rope_pairs(const float *cs, float *x, int64_t n, int64_t c, int hd, int dims) {
	for (int64_t r = 0; r < n; r++) {
		const float *cr = cs + r * dims;
		for (int64_t h = 0; h < c; h += hd) {
			float *hp = x + r * c + h;
			for (int j = 0; j < dims; j += 16) {
				__mmask16 m = dims - j >= 16 ? 0xffff : (__mmask16)((1u << (dims - j)) - 1);
				__m512 v = _mm512_maskz_loadu_ps(m, hp + j), t = _mm512_maskz_loadu_ps(m, cr + j);
				__m512 p = _mm512_mul_ps(v, _mm512_moveldup_ps(t));                            // x0·c, x1·c
				__m512 q = _mm512_mul_ps(_mm512_permute_ps(v, 0xb1), _mm512_movehdup_ps(t));    // x1·s, x0·s
				__m512 y = _mm512_mask_add_ps(_mm512_mask_sub_ps(p, 0x5555, p, q), 0xaaaa, p, q);
				_mm512_mask_storeu_ps(hp + j, m, y);
			}
		}
	}
}

// folio_rope_neox is folio_rope_pairs for NeoX's pairs (i, i + dims/2)
// (Qwen's rope): the cosines and sines, still interleaved in cs, are split
// by a permute; the products are rounded before the sums as there.
AVX512 void folio_rope_neox(const float *cs, float *x, int64_t n, int64_t c, int hd, int dims) {
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
	int half = dims / 2;
	for (int64_t r = 0; r < n; r++) {
		const float *cr = cs + r * dims;
		for (int64_t h = 0; h < c; h += hd) {
			float *hp = x + r * c + h;
			for (int i = 0; i < half; i += 16) {
				int left = half - i;
				__mmask16 m = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
				__mmask16 mlo = 2 * left >= 16 ? 0xffff : (__mmask16)((1u << (2 * left)) - 1);
				__mmask16 mhi = 2 * left >= 32 ? 0xffff : 2 * left <= 16 ? 0 : (__mmask16)((1u << (2 * left - 16)) - 1);
				__m512 lo = _mm512_maskz_loadu_ps(mlo, cr + 2 * i), hi = _mm512_maskz_loadu_ps(mhi, cr + 2 * i + 16);
				__m512 cv = _mm512_permutex2var_ps(lo, even, hi), sv = _mm512_permutex2var_ps(lo, odd, hi);
				__m512 a = _mm512_maskz_loadu_ps(m, hp + i), b = _mm512_maskz_loadu_ps(m, hp + half + i);
				__m512 ac = _mm512_mul_ps(a, cv), bs = _mm512_mul_ps(b, sv);
				__m512 as = _mm512_mul_ps(a, sv), bc = _mm512_mul_ps(b, cv);
				_mm512_mask_storeu_ps(hp + i, m, _mm512_mask_sub_ps(ac, 0xffff, ac, bs));
				_mm512_mask_storeu_ps(hp + half + i, m, _mm512_mask_add_ps(as, 0xffff, as, bc));
			}
		}
	}
}

// argmax_finish combines the lanes' maxima ms and their first indices is
// (-1: nothing beat -Inf) with x[0], which wins when nothing beats it, then
// scans the tail from i, past every lane's index.
static int64_t argmax_finish(const float *x, int64_t n, const float *ms, const int32_t *is, int lanes, int64_t i) {
	if (n == 0)
		return 0;
	float best = x[0];
	int64_t bi = 0;
	for (int l = 0; l < lanes; l++) {
		if (is[l] >= 0 && (ms[l] > best || (ms[l] == best && is[l] < bi))) {
			best = ms[l];
			bi = is[l];
		}
	}
	for (; i < n; i++) {
		if (x[i] > best) {
			best = x[i];
			bi = i;
		}
	}
	return bi;
}

// argmax512 keeps two sets of 16 running maxima, each with its first
// index, and combines them at the end.
static AVX512 int64_t argmax512(const float *x, int64_t n) {
	__m512 m0 = _mm512_set1_ps(-__builtin_inff()), m1 = m0;
	__m512i i0 = _mm512_set1_epi32(-1), i1 = i0;
	__m512i c0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	__m512i c1 = _mm512_add_epi32(c0, _mm512_set1_epi32(16));
	const __m512i step = _mm512_set1_epi32(32);
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
		__mmask16 g0 = _mm512_cmp_ps_mask(v0, m0, _CMP_GT_OQ), g1 = _mm512_cmp_ps_mask(v1, m1, _CMP_GT_OQ);
		m0 = _mm512_mask_mov_ps(m0, g0, v0);
		m1 = _mm512_mask_mov_ps(m1, g1, v1);
		i0 = _mm512_mask_mov_epi32(i0, g0, c0);
		i1 = _mm512_mask_mov_epi32(i1, g1, c1);
		c0 = _mm512_add_epi32(c0, step);
		c1 = _mm512_add_epi32(c1, step);
	}
	float ms[32];
	int32_t is[32];
	_mm512_storeu_ps(ms, m0);
	_mm512_storeu_ps(ms + 16, m1);
	_mm512_storeu_si512(is, i0);
	_mm512_storeu_si512(is + 16, i1);
	return argmax_finish(x, n, ms, is, 32, i);
}

// argmax256 is argmax512 with two sets of 8 running maxima (AVX2's
// compares give lane masks, which select by blend).
static AVX2 int64_t argmax256(const float *x, int64_t n) {
	__m256 m0 = _mm256_set1_ps(-__builtin_inff()), m1 = m0;
	__m256i i0 = _mm256_set1_epi32(-1), i1 = i0;
	__m256i c0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), c1 = _mm256_add_epi32(c0, _mm256_set1_epi32(8));
	const __m256i step = _mm256_set1_epi32(16);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		__m256 g0 = _mm256_cmp_ps(v0, m0, _CMP_GT_OQ), g1 = _mm256_cmp_ps(v1, m1, _CMP_GT_OQ);
		m0 = _mm256_blendv_ps(m0, v0, g0);
		m1 = _mm256_blendv_ps(m1, v1, g1);
		i0 = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(i0), _mm256_castsi256_ps(c0), g0));
		i1 = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(i1), _mm256_castsi256_ps(c1), g1));
		c0 = _mm256_add_epi32(c0, step);
		c1 = _mm256_add_epi32(c1, step);
	}
	float ms[16];
	int32_t is[16];
	_mm256_storeu_ps(ms, m0);
	_mm256_storeu_ps(ms + 8, m1);
	_mm256_storeu_si256((__m256i *)is, i0);
	_mm256_storeu_si256((__m256i *)(is + 8), i1);
	return argmax_finish(x, n, ms, is, 16, i);
}

// folio_argmax returns the index of the largest of x[0 … n-1] as gpu.ArgMax
// defines it: the first of equals, a NaN never larger (compares are
// ordered), 0 when x[0] is a NaN or nothing is larger than it.
int64_t folio_argmax(int level, const float *x, int64_t n) {
	return level == LEVEL_AVX512 ? argmax512(x, n) : argmax256(x, n);
}

// folio_mix_rows: for each of rows rows (n floats apart), dst = the fused
// multiply-adds of the k ≤ 4 sources (s0 … s3) times their coefficients
// (coefs[row·wide + cols[j]] + bias), in order from 0, then plus base:
// gpu.MixRowsHost's sums, fmaf's rounding. dst may be base or a source.
// Its products and sums round as written: GCC would otherwise contract
// a product and the add after it into one FMA.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
AVX2 void folio_mix_rows(float *dst, const float *base, const float *s0, const float *s1, const float *s2,
                         const float *s3, int k, const float *coefs, int64_t wide, const int32_t *cols, float bias,
                         int64_t rows, int64_t n) {
	const float *s[4] = {s0, s1, s2, s3};
	for (int64_t r = 0; r < rows; r++) {
		float c[4];
		for (int j = 0; j < k; j++)
			c[j] = coefs[r * wide + cols[j]] + bias;
		int64_t o = r * n, i = 0;
		for (; i + 8 <= n; i += 8) {
			__m256 acc = _mm256_mul_ps(_mm256_loadu_ps(s[0] + o + i), _mm256_set1_ps(c[0]));
			for (int j = 1; j < k; j++)
				acc = _mm256_fmadd_ps(_mm256_loadu_ps(s[j] + o + i), _mm256_set1_ps(c[j]), acc);
			_mm256_storeu_ps(dst + o + i, _mm256_add_ps(acc, _mm256_loadu_ps(base + o + i)));
		}
		for (; i < n; i++) {
			float acc = s[0][o + i] * c[0];
			for (int j = 1; j < k; j++)
				acc = __builtin_fmaf(s[j][o + i], c[j], acc);
			dst[o + i] = acc + base[o + i];
		}
	}
}
#pragma GCC pop_options
