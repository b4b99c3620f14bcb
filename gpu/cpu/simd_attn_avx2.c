//go:build amd64 && cgo

// The AVX2 attention kernel: simd_attn.c's steps, 8 lanes at a time.

#include "simd_attn.h"

// exp256 is e^x (ggml's ggml_v_expf for AVX2, without its range
// extension), with x clamped to [-87, 88] where 2^n stays normal.
AVX2 __m256 exp256(__m256 x) {
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.f)), _mm256_set1_ps(88.f));
	const __m256 r = _mm256_set1_ps(0x1.8p23f);
	__m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
	__m256 n = _mm256_sub_ps(z, r);
	__m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
	__m256 k = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(z), 23), _mm256_castps_si256(_mm256_set1_ps(1.f))));
	__m256 u = _mm256_mul_ps(b, b);
	__m256 j = _mm256_fmadd_ps(
		_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
	                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
		u, _mm256_mul_ps(_mm256_set1_ps(0x1.ffffecp-1f), b));
	return _mm256_fmadd_ps(j, k, k);
}

static inline AVX2 __m256i tail8(int left) {
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static inline AVX2 const float *row256(const void *base, int kt, int64_t at, int d, float *buf) {
	if (kt == KV_F32)
		return (const float *)base + at;
	if (kt == KV_Q8) {
		for (int j = 0; j < d; j += 8) {
			const uint8_t *blk = (const uint8_t *)base + ((at + j) >> 5) * Q8_0_BYTES;
			uint16_t h;
			memcpy(&h, blk, 2);
			__m256 q = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + ((at + j) & 31)))));
			_mm256_storeu_ps(buf + j, _mm256_mul_ps(q, _mm256_set1_ps(_cvtsh_ss(h))));
		}
		return buf;
	}
	const uint16_t *s = (const uint16_t *)base + at;
	int j = 0;
	for (; j + 8 <= d; j += 8)
		_mm256_storeu_ps(buf + j, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + j))));
	for (; j < d; j++)
		buf[j] = _cvtsh_ss(s[j]);
	return buf;
}

AVX2 void folio_attn_avx2(ATTN_ARGS) {
	// S[(p-lo)·nqp + qi] for p in lo … n-1, as simd_attn.c's.
	int nq = nr * g, nqp = (nq + 15) & ~15, nc = nqp / 8, n = pos0 + nr;
	float *qt = scratch, *S = qt + (int64_t)d * nqp, *kb = S + (int64_t)(n - lo) * nqp, *vb = kb + d;
	load_qt(q, qstride, nr, g, d, qt, nqp);
	const __m256 sv = _mm256_set1_ps(cap > 0 ? 1.f : scale); // a cap comes before the scale

	for (int p = lo; p < n; p++) {
		const float *kr = row256(kl, kt, kv_at(blocks, bs, kvheads, h, d, p), d, kb);
		for (int c0 = 0; c0 < nc; c0 += 4) {
			int cn = nc - c0 < 4 ? nc - c0 : 4;
			__m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
			for (int j = 0; j < d; j++) {
				__m256 kj = _mm256_set1_ps(kr[j]);
				for (int c = 0; c < cn; c++)
					acc[c] = _mm256_fmadd_ps(kj, _mm256_loadu_ps(qt + (int64_t)j * nqp + 8 * (c0 + c)), acc[c]);
			}
			for (int c = 0; c < cn; c++)
				_mm256_storeu_ps(S + (int64_t)(p - lo) * nqp + 8 * (c0 + c), _mm256_mul_ps(acc[c], sv));
		}
	}
	if (cap > 0)
		softcap_scores(S, (int64_t)(n - lo) * nqp, cap, scale);

	float inv[nqp];
	for (int c = 0; c < nc; c++) {
		int lim[8], low[8];
		float sk[8];
		for (int l = 0; l < 8; l++) {
			lim[l] = 8 * c + l < nq ? pos0 + (8 * c + l) / g : n - 1;
			low[l] = win > 0 && lim[l] - win + 1 > lo ? lim[l] - win + 1 : lo;
			sk[l] = sink_of(sinks, 8 * c + l, nq, g);
		}
		__m256i limv = _mm256_loadu_si256((const __m256i *)lim), lowv = _mm256_loadu_si256((const __m256i *)low);
		__m256 skv = _mm256_loadu_ps(sk); // a sink joins the max and, after the scores, the sum
		__m256 mx = skv, sum = _mm256_setzero_ps();
		for (int p = lo; p < n; p++) { // lanes past their limit or before their window are left out
			__m256i pv = _mm256_set1_epi32(p);
			__m256 skip = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(pv, limv), _mm256_cmpgt_epi32(lowv, pv)));
			mx = _mm256_blendv_ps(_mm256_max_ps(mx, _mm256_loadu_ps(S + (int64_t)(p - lo) * nqp + 8 * c)), mx, skip);
		}
		for (int p = lo; p < n; p++) {
			__m256i pv = _mm256_set1_epi32(p);
			__m256 past = _mm256_castsi256_ps(_mm256_or_si256(_mm256_cmpgt_epi32(pv, limv), _mm256_cmpgt_epi32(lowv, pv)));
			float *s = S + (int64_t)(p - lo) * nqp + 8 * c;
			__m256 e = _mm256_andnot_ps(past, exp256(_mm256_sub_ps(_mm256_loadu_ps(s), mx)));
			_mm256_storeu_ps(s, e);
			sum = _mm256_add_ps(sum, e);
		}
		if (sinks) // e^(sink - max), 0 for the lanes without one
			sum = _mm256_add_ps(sum, _mm256_and_ps(_mm256_cmp_ps(skv, _mm256_set1_ps(-__builtin_inff()), _CMP_GT_OQ),
			                                          exp256(_mm256_sub_ps(skv, mx))));
		_mm256_storeu_ps(inv + 8 * c, _mm256_div_ps(_mm256_set1_ps(1.f), sum));
	}

	for (int qi = 0; qi < nq; qi++)
		memset(out + (qi / g) * qstride + (qi % g) * d, 0, sizeof(float) * d);
	for (int b0 = lo / bs * bs; b0 < n; b0 += bs) {
		int p1 = b0 > lo ? b0 : lo; // the block's first row read
		int np = (n < b0 + bs ? n : b0 + bs) - p1;
		int64_t at = kv_at(blocks, bs, kvheads, h, d, p1);
		const float *vr = (const float *)vl + at;
		if (kt != KV_F32) {
			for (int p = 0; p < np; p++)
				row256(vl, kt, at + (int64_t)p * d, d, vb + p * d);
			vr = vb;
		}
		for (int qi = 0; qi < nq; qi++) {
			int lim = pos0 + qi / g;
			if (lim < p1)
				continue;
			int pe = lim - p1 + 1 < np ? lim - p1 + 1 : np;
			float *o = out + (qi / g) * qstride + (qi % g) * d;
			const float *s = S + (int64_t)(p1 - lo) * nqp + qi;
			for (int j = 0; j < d; j += 8) {
				__m256i m = tail8(d - j);
				__m256 acc = _mm256_maskload_ps(o + j, m);
				for (int p = 0; p < pe; p++)
					acc = _mm256_fmadd_ps(_mm256_set1_ps(s[(int64_t)p * nqp]), _mm256_maskload_ps(vr + p * d + j, m), acc);
				_mm256_maskstore_ps(o + j, m, acc);
			}
		}
	}
	for (int qi = 0; qi < nq; qi++) {
		float *o = out + (qi / g) * qstride + (qi % g) * d;
		for (int j = 0; j < d; j += 8) {
			__m256i m = tail8(d - j);
			_mm256_maskstore_ps(o + j, m, _mm256_mul_ps(_mm256_maskload_ps(o + j, m), _mm256_set1_ps(inv[qi])));
		}
	}
}
