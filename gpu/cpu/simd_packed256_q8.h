// Q8_0's packed kernels at the 256-bit levels and the kinds that run them
// (IQ4_NL, IQ4_XS and MXFP4: q80_lut), the tiles and a decode step's;
// included by simd_packed256.h, whose steps and helpers they take.

// q80_vec is step u's vector of a packed Q8_0 block's weights at wb (its
// half's bytes), or for a table kind (q80_lut) of a packed block in
// Q4_0's layout: its codes' low nibbles (u < 4) or high ones looked up in
// the kind's table. q80_bytes is a block's bytes before the scales; q80_dw
// the scales of half h of block b after the nb blocks at w, as q80_dw_512
// makes them.
INLINE LVL __m256i q80_vec(const uint8_t *wb, int u, int kind) {
	if (!q80_lut(kind))
		return _mm256_load_si256((const __m256i *)(wb + 64 * u));
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const __m256i table =
	    kind == KIND_MXFP4 ? _mm256_setr_epi8(MXFP4_TABLE, MXFP4_TABLE) : _mm256_setr_epi8(IQ4NL_TABLE, IQ4NL_TABLE);
	__m256i v = _mm256_load_si256((const __m256i *)(wb + 64 * (u % 4)));
	return _mm256_shuffle_epi8(table, _mm256_and_si256(u < 4 ? v : _mm256_srli_epi16(v, 4), m4));
}
INLINE int q80_bytes(int kind) { return q80_lut(kind) ? 256 : 512; }
INLINE LVL __m256 q80_dw(const uint8_t *w, int nb, int b, int h, int kind) {
	const uint8_t *ds = w + (int64_t)q80_bytes(kind) * nb;
	if (kind == KIND_IQ4_XS) {
		__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * (b / 8) + 16 * h)));
		__m128i sc = _mm_loadl_epi64((const __m128i *)(ds + 32 * (nb / 8) + 16 * b + 8 * h));
		return _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc)));
	}
	if (kind == KIND_MXFP4) {
		__m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ds + 16 * b + 8 * h)));
		__m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
		__m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
		return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
	}
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * b + 16 * h)));
}

#if HI_SHUFFLE
// pq8_0_256 is pq8_0_512 (one group) for half h, at AVX-VNNI (where q8_w
// and q8_x change nothing): as Q4_0's, a block's 8 vectors of weights
// serve a tile of XT4 rows, each row's chain whole, its last 16
// activations broadcast by vpshufd (Zen 5, 64 rows, k 2048: 159-166 →
// 168-179 GMAC/s).
#define Q8_TILE XT4
#define LUT_TILE XT4
INLINE LVL void pq80_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc, int kind) {
	const int64_t bb = q80_bytes(kind);
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + bb * b + 32 * h;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		__m256i q[8];
		dacc bias = dot_zero();
		for (int u = 0; u < 8; u++) {
			q[u] = q80_vec(wb, u, kind);
			bias = q8_bias(bias, u, q[u]);
		}
		__m256 dw = q80_dw(w, nb, b, h, kind);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m256i xh = x_last16(xp, 16);
			dacc s = dot_zero();
			for (int u = 0; u < 8; u++)
				s = q8_dot(s, u, q[u], q[u], x_step(xp, 16, xh, u));
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q8_end(s, bias)), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xp + 64))),
			                         acc[i]);
		}
	}
}
#else
// pq8_0_256 is pq8_0_512 (one group) for half h: a tile of XT8 rows, the
// weights' vector of each step loaded once for them; for a table kind a
// tile of XT4, its lookups serving twice the rows.
#define Q8_TILE XT8
#define LUT_TILE XT4
INLINE LVL void pq80_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc, int kind) {
	const int64_t bb = q80_bytes(kind);
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + bb * b + 32 * h;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		dacc s[XT4], bias = dot_zero();
		for (int u = 0; u < 8; u++) {
			__m256i q = q80_vec(wb, u, kind), a = q8_w(q);
			bias = q8_bias(bias, u, q);
			for (int i = 0; i < nx; i++) {
				__m256i xv = q8_x(xb + i * xs + 4 * u, kind);
				s[i] = q8_dot(s[i], u, a, q, xv);
				keep(s[i]);
			}
		}
		__m256 dw = q80_dw(w, nb, b, h, kind);
		for (int i = 0; i < nx; i++)
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q8_end(s[i], bias)), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xb + i * xs + 64))),
			                         acc[i]);
	}
}
#endif
INLINE LVL void pq8_0_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq80_256(w, nb, h, x, xs, nx, acc, KIND_Q8_0);
}
INLINE LVL void pq_iq4_nl_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq80_256(w, nb, h, x, xs, nx, acc, KIND_IQ4_NL);
}
INLINE LVL void pq_iq4_xs_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq80_256(w, nb, h, x, xs, nx, acc, KIND_IQ4_XS);
}
#if AVX2_KINDS
// Q8_0 and IQ4_NL on X8P without its bias (x8s): q8_x's vpxor saved.
INLINE LVL void pq8_0s_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq80_256(w, nb, h, x, xs, nx, acc, KIND_Q8_0S);
}
INLINE LVL void pq_iq4_nls_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq80_256(w, nb, h, x, xs, nx, acc, KIND_IQ4_NLS);
}
#endif
#if SMALL_Q8
// pq_mxfp4_256 at AVX2: MXFP4's doubled E2M1 values (|v| ≤ 12) are
// vpmaddubsw's signed side against X8P's biased activations (x + 128 ≤
// 255) as they are, without Q8_0's sign trick (a vpsignb and a vpmaddwd
// a step and row): a pair reaches 2·255·12 = 6120, so a row's two chains
// of four steps stay in int16, one vpmaddwd each (mxfp4_sums); less
// 128·Σv, the bias's share, from the block's weights once (mxfp4_bias:
// their bytes added, at most 8·12 a lane byte). The int32 sums, and so
// the results, are the sign trick's exactly.
#define MXFP4_TILE XT4
INLINE LVL __m256i mxfp4_bias(const __m256i *q) {
	__m256i sum = q[0];
	for (int u = 1; u < 8; u++)
		sum = _mm256_add_epi8(sum, q[u]);
	return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8((char)0x80), sum), _mm256_set1_epi16(1));
}
INLINE LVL __m256i mxfp4_sums(const __m256i *q, const uint8_t *xp, __m256i bias) {
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i lo = _mm256_maddubs_epi16(bcast(xp), q[0]), hi = _mm256_maddubs_epi16(bcast(xp + 16), q[4]);
	for (int u = 1; u < 4; u++) {
		lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(bcast(xp + 4 * u), q[u]));
		hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(bcast(xp + 16 + 4 * u), q[4 + u]));
		keep(lo);
		keep(hi);
	}
	return _mm256_sub_epi32(_mm256_add_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones)), bias);
}
INLINE LVL void pq_mxfp4_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 256 * (int64_t)b + 32 * h;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		__m256i q[8];
		for (int u = 0; u < 8; u++)
			q[u] = q80_vec(wb, u, KIND_MXFP4);
		__m256i bias = mxfp4_bias(q);
		__m256 dw = q80_dw(w, nb, b, h, KIND_MXFP4);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mxfp4_sums(q, xp, bias)), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xp + 64))),
			                         acc[i]);
		}
	}
}
#else
#define MXFP4_TILE Q8_TILE
INLINE LVL void pq_mxfp4_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq80_256(w, nb, h, x, xs, nx, acc, KIND_MXFP4);
}
#endif

#if AVX2_KINDS
// pq_iq4_xsk_256 is IQ4_XS on XK activations (kindIQ4_XSK, AVX2), as
// ggml's AVX2 dot takes Q8_K's: the sign trick's pairs of a step (at most
// 2·127·127) go to int32 times the block's int8 scale by one vpmaddwd
// (iq4_sc's pairs), a row's sums stay int32 over the super-block (at most
// 256·127·127·32 < 2^31), and one conversion and FMA a super-block and
// row take them to float32 by its half and the activations' d. Against
// X8P's kernel a step loses the vpxor that unbiases the activations and a
// block its float32 steps.
INLINE LVL __m256i iq4_sc(const uint8_t *w, int nb, int b, int h) {
	const uint8_t *sc = w + 256 * (int64_t)nb + 32 * (nb / 8) + 16 * b + 8 * h;
	return q6_scale(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sc)));
}
INLINE LVL __m256 iq4_d(const uint8_t *w, int nb, int s, int h) {
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 256 * (int64_t)nb + 32 * s + 16 * h)));
}
INLINE LVL __m256i iq4_step(__m256i isum, __m256i a, __m256i q, __m256i xv, __m256i sc) {
	return _mm256_add_epi32(isum, _mm256_madd_epi16(_mm256_maddubs_epi16(a, _mm256_sign_epi8(xv, q)), sc));
}
#define IQ4_XSK_TILE XT4
INLINE LVL void pq_iq4_xsk_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	for (int s = 0; s < nb / 8; s++) {
		const uint8_t *xs0 = x + (int64_t)s * XK_BYTES;
		__m256i isum[XT4];
		for (int i = 0; i < nx; i++)
			isum[i] = _mm256_setzero_si256();
		for (int j = 0; j < 8; j++) {
			const uint8_t *wb = w + 256 * (int64_t)(8 * s + j) + 32 * h;
			__m256i sc = iq4_sc(w, nb, 8 * s + j, h);
			for (int u = 0; u < 8; u++) {
				__m256i q = q80_vec(wb, u, KIND_IQ4_XS), a = _mm256_sign_epi8(q, q);
				for (int i = 0; i < nx; i++) {
					isum[i] = iq4_step(isum[i], a, q, bcast(xs0 + i * xs + 32 * j + 4 * u), sc);
					keep(isum[i]);
				}
			}
		}
		__m256 d = iq4_d(w, nb, s, h);
		for (int i = 0; i < nx; i++)
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_mul_ps(d, _mm256_set1_ps(ldf(xs0 + i * xs + XK_D))),
			                         acc[i]);
	}
}
#endif

// A decode step's kernels: one activation row, both halves of a group in
// one pass (simd_packed256.h says why, before pq4_0_256_1).

// pq8_0_256_1 is pq8_0_256 for one activation row and both halves of a
// group.
INLINE LVL void pq80_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc, int kind) {
	const int64_t bb = q80_bytes(kind);
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + bb * b;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		mm_prefetch(wb + MM_PREFETCH, bb);
		dacc s[2], bias[2] = {dot_zero(), dot_zero()};
		for (int u = 0; u < 8; u++) {
			__m256i xv = q8_x(xb + 4 * u, kind);
			for (int h = 0; h < 2; h++) {
				__m256i q = q80_vec(wb + 32 * h, u, kind);
				bias[h] = q8_bias(bias[h], u, q);
				s[h] = q8_dot(s[h], u, q8_w(q), q, xv);
				keep(s[h]);
			}
		}
		__m256 dx = _mm256_set1_ps(ldf(xb + 64));
		for (int h = 0; h < 2; h++) {
			__m256 dw = q80_dw(w, nb, b, h, kind);
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(q8_end(s[h], bias[h])), _mm256_mul_ps(dw, dx), acc[h]);
		}
	}
}
INLINE LVL void pq8_0_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq80_256_1(w, nb, x, acc, KIND_Q8_0);
}
INLINE LVL void pq_iq4_nl_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq80_256_1(w, nb, x, acc, KIND_IQ4_NL);
}
INLINE LVL void pq_iq4_xs_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq80_256_1(w, nb, x, acc, KIND_IQ4_XS);
}
#if AVX2_KINDS
INLINE LVL void pq8_0s_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq80_256_1(w, nb, x, acc, KIND_Q8_0S);
}
INLINE LVL void pq_iq4_nls_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq80_256_1(w, nb, x, acc, KIND_IQ4_NLS);
}
#endif
#if SMALL_Q8
// pq_mxfp4_256_1 is pq_mxfp4_256 for one activation row and both halves
// (a decode step: at AVX2 the sign trick's kernel streamed MXFP4 at 26
// GB/s where Q4_K's ran at 42).
INLINE LVL void pq_mxfp4_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 256 * (int64_t)b;
		const uint8_t *xb = x + (b / 2) * X8P_BYTES + 32 * (b % 2);
		mm_prefetch(wb + MM_PREFETCH, 256);
		__m256 dx = _mm256_set1_ps(ldf(xb + 64));
		for (int h = 0; h < 2; h++) {
			__m256i q[8];
			for (int u = 0; u < 8; u++)
				q[u] = q80_vec(wb + 32 * h, u, KIND_MXFP4);
			__m256i s = mxfp4_sums(q, xb, mxfp4_bias(q));
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(q80_dw(w, nb, b, h, KIND_MXFP4), dx), acc[h]);
		}
	}
}
#else
INLINE LVL void pq_mxfp4_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq80_256_1(w, nb, x, acc, KIND_MXFP4);
}
#endif

#if AVX2_KINDS
// pq_iq4_xsk_256_1 is pq_iq4_xsk_256 for one activation row and both
// halves.
INLINE LVL void pq_iq4_xsk_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	for (int s = 0; s < nb / 8; s++) {
		const uint8_t *xs0 = x + (int64_t)s * XK_BYTES;
		__m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
		for (int j = 0; j < 8; j++) {
			const uint8_t *wb = w + 256 * (int64_t)(8 * s + j);
			mm_prefetch(wb + MM_PREFETCH, 256);
			__m256i sc[2] = {iq4_sc(w, nb, 8 * s + j, 0), iq4_sc(w, nb, 8 * s + j, 1)};
			for (int u = 0; u < 8; u++) {
				__m256i xv = bcast(xs0 + 32 * j + 4 * u);
				for (int h = 0; h < 2; h++) {
					__m256i q = q80_vec(wb + 32 * h, u, KIND_IQ4_XS);
					isum[h] = iq4_step(isum[h], _mm256_sign_epi8(q, q), q, xv, sc[h]);
					keep(isum[h]);
				}
			}
		}
		__m256 dx = _mm256_set1_ps(ldf(xs0 + XK_D));
		for (int h = 0; h < 2; h++)
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h]), _mm256_mul_ps(iq4_d(w, nb, s, h), dx), acc[h]);
	}
}
#endif
