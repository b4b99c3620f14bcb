// The packed kernels on 256-bit vectors (repack.go's layout): a group of
// 16 rows as two halves of 8 (a vector's bytes 0-31 or 32-63), each in one
// vector. They are compiled once per level that runs them, by a file that
// defines the level's steps and then includes this one:
// simd_packed_avx2.c (vpmaddubsw's int16 pairs, vpmaddwd to int32) and
// simd_packed_vnni.c (AVX-VNNI's vpdpbusd into int32). Both sum every
// row's integers exactly and scale them by the same float32 ops in the
// same order, so the levels' results are the same bits (and those of the
// AVX-512 kernels, simd_packed.c) for every kind both run: IQ4_XS at AVX2
// is a kind of its own (kindIQ4_XSK, on other activations), and so are
// its Q8_0 and IQ4_NL on unbiased X8P (same sums, same bits).
//
// The includer defines LVL, its level's target attribute, PM256, the name
// of its entry (void PM256(int kind, PM_ARGS)), HI_SHUFFLE (1 or 0: see
// chain8 and pq8_0_256), SMALL_Q8 (1 or 0: see pq_mxfp4_256), AVX2_KINDS (1
// or 0: whether it has the kinds of AVX2 alone: pq_iq4_xsk_256, and
// pq8_0s_256 and pq_iq4_nls_256 on X8P without its bias), dacc, the type
// of a chain of sums, keep(d), what a chain's step ends with, and these
// steps on
// unsigned × signed bytes, four a 32-bit lane:
//
//	dot_zero()           a chain with nothing in it
//	dot_first(a0, u, s)  the first step of a chain whose int32 sums start
//	                     at a0
//	dot_next(a, u, s)    a further step (at most 8 in all)
//	dot_first2, dot_next2  two steps at once
//	dot_end(a, a0)       the chain's int32 sums: a0 + Σ u·s
//	dot_scale(sc)        a lane's int32 scale (≤ 63) as dot_scaled takes it
//	dot_scaled(i, a, sc) i + the chain's Σ u·s (started at zero, u ≤ 15)
//	                     times sc
//
// and, for Q8_0 (X8P activations, biased by 128, against signed weights):
//
//	q8_w(q)                  what a step takes of a vector of weights q
//	q8_x(p, kind)            what it takes of the four activation bytes at p (x8s(kind): unbiased), in
//	                         every lane
//	q8_dot(s, u, a, q, x)    step u's chain (u = 0 starts it)
//	q8_bias(b, u, q)         the chain of what the activations' bias adds
//	q8_end(s, b)             the int32 sums less that.
//
// and madd16(i, a, sc): i + the int16 pairs of a, each times sc's (AVX2
// vpmaddwd and vpaddd, AVX-VNNI vpdpwssd).
//
// Only simd_packed_*.c include it (amd64, cgo).

#include "simd_mxfp4.h"

// XT8 is the activation rows of a Q8_0 tile at AVX2: 16 vectors hold a
// block's 8 of quants and 4 rows' accumulators (more spilled its chains).
// XT4, the rows of a Q4_0 or Q4_K tile (and Q8_0's at AVX-VNNI), is twice
// that: their rows' chains are one at a time, and their accumulators
// spill to the stack, but the unpacking of a block's quants serves twice
// the rows (Zen 5, 64 rows, k 2048: Q4_0 at AVX-VNNI 150 → 165 GMAC/s,
// AVX2 135 → 141; Q4_K +3%; 12 rows and 16 were slower).
#define XT8 4
#define XT4 8

INLINE LVL __m256i bcast(const uint8_t *p) { return _mm256_set1_epi32((int)ld32(p)); }

// lane4 broadcasts 32-bit lane j of v's low 128 bits, where v's two
// halves are the same.
INLINE LVL __m256i lane4(__m256i v, int j) {
	switch (j) {
	case 0: return _mm256_shuffle_epi32(v, 0x00);
	case 1: return _mm256_shuffle_epi32(v, 0x55);
	case 2: return _mm256_shuffle_epi32(v, 0xaa);
	default: return _mm256_shuffle_epi32(v, 0xff);
	}
}

// x_last16 is what x_step takes of a block's last 16 activations (at xp +
// hi): with HI_SHUFFLE, all of them in both halves of a vector.
INLINE LVL __m256i x_last16(const uint8_t *xp, int64_t hi) {
	return HI_SHUFFLE ? _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(xp + hi))) : _mm256_setzero_si256();
}

// x_step is the four activations of step u of a block (xp its first 16,
// xp + hi its last 16, xh x_last16's) in every lane.
INLINE LVL __m256i x_step(const uint8_t *xp, int64_t hi, __m256i xh, int u) {
	return u < 4 ? bcast(xp + 4 * u) : HI_SHUFFLE ? lane4(xh, u - 4) : bcast(xp + hi + 4 * (u - 4));
}

// chain8 is the chain over a 32-element block of lane r's q·x from a0:
// q[u] holds step u (four quants a lane), xp the block's first 16
// activations and xp + hi its last 16. Each step broadcasts four
// activations, at AVX-VNNI a load for each vpdpbusd, and the loads bound a
// tile; where the includer defines HI_SHUFFLE 1, the last 16 come in one
// 16-byte load and vpshufd broadcasts them (Zen 5, 64 rows, k 2048: Q4_0
// 165 → 193 GMAC/s, Q4_K +5%; all 16 by vpshufd 175; at AVX2, whose steps
// are three vector ops, 5% slower).
INLINE LVL dacc chain8(const __m256i *q, const uint8_t *xp, int64_t hi, __m256i a0) {
	__m256i xh = x_last16(xp, hi);
	dacc s = dot_first(a0, q[0], x_step(xp, hi, xh, 0));
	for (int u = 1; u < 8; u++) {
		s = dot_next(s, q[u], x_step(xp, hi, xh, u));
		keep(s);
	}
	return s;
}

// pq4_0_256 is simd_packed.c's pq4_0_512 for half h of a group.
// one_mins is half h of a Q4_1 or Q5_1 block b's mins (halves at ds +
// 32·(nb + b), after the scales); one_min adds to acc that block's mins'
// share of the row at xp: m·dx·Σq (Σq = -bias/8, X4G's bias lane at xp +
// 192).
INLINE LVL __m256 one_mins(const uint8_t *ds, int nb, int b, int h) {
	return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * ((int64_t)nb + b) + 16 * h)));
}
INLINE LVL __m256 one_min(__m256 acc, __m256 mw, const uint8_t *xp) {
	return _mm256_fmadd_ps(mw, _mm256_set1_ps((float)(-(int)ld32(xp + 192) / 8) * ldf(xp + 128)), acc);
}

// With one, the groups are Q4_1's: no offset, and each block's min.
INLINE LVL void pq40_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc, int one) {
	const __m256i m4 = _mm256_set1_epi8(0x0f);
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
		__m256 mw = one ? one_mins(ds, nb, b, h) : dw;
		const uint8_t *xb = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m256i bias = one ? _mm256_setzero_si256() : bcast(xp + 192); // -8·Σq
			__m256i s = dot_end(chain8(q, xp, 64, bias), bias);
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xp + 128))), acc[i]);
			if (one)
				acc[i] = one_min(acc[i], mw, xp);
		}
	}
}
INLINE LVL void pq4_0_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq40_256(w, nb, h, x, xs, nx, acc, 0);
}
INLINE LVL void pq4_1_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq40_256(w, nb, h, x, xs, nx, acc, 1);
}

// bit4_256 is simd_packed.c's bit4_512 on 256 bits: bit n (0-7) of each
// byte of h to bit 4.
INLINE LVL __m256i bit4_256(__m256i h, int n) {
	return n < 4 ? _mm256_slli_epi16(h, 4 - n) : n == 4 ? h : _mm256_srli_epi16(h, n - 4);
}

// Q6_K's quants (≤ 63) make a pair of products up to 2·63·127 = 16002:
// two steps' pairs add up in int16 (vpmaddubsw, vpaddw), and madd16 by
// (scale, scale) adds them to int32 times the signed scale (Zen 5, 64
// rows, k 2048, at AVX-VNNI: 125-130 GMAC/s, against 109-113 for int32
// sums of four vpdpbusd times the scale by vpmulld, and 108-115 for each
// vpdpbusd's sum, an int16, by vpdpwssd). Q5_K's quants (≤ 31) take the
// same steps. q6_scale is what q6_sub takes of lanes' int32 scales;
// q6_sub(i, q, xp, sc) is i + sc · the four steps q[0..3] against the 16
// activations at xp.
INLINE LVL __m256i q6_scale(__m256i sc) {
	return _mm256_or_si256(_mm256_and_si256(sc, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(sc, 16));
}
INLINE LVL __m256i q6_sub(__m256i i, const __m256i *q, const uint8_t *xp, __m256i sc) {
	__m256i a = _mm256_add_epi16(_mm256_maddubs_epi16(q[0], bcast(xp)), _mm256_maddubs_epi16(q[1], bcast(xp + 4)));
	__m256i b = _mm256_add_epi16(_mm256_maddubs_epi16(q[2], bcast(xp + 8)), _mm256_maddubs_epi16(q[3], bcast(xp + 12)));
	return madd16(madd16(i, a, sc), b, sc);
}

// pqk_256 adds a packed Q4_K super-block (at wb) to acc[i] for half h and
// nx XK activation rows (their super-block at xb, xs bytes apart): a
// sub-block's chain times its scale; or with five a packed Q5_K one, whose
// quants (≤ 31) take q6_sub's steps (a chain of eight would overflow
// AVX2's int16 sums). pq4_k_512's sums, in its order.
INLINE LVL void pqk_256(const uint8_t *wb, const uint8_t *xb, int64_t xs, int h, int nx, __m256 *acc, int five) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), m10 = _mm256_set1_epi8(0x10);
	__m256i isum[XT4];
	for (int i = 0; i < nx; i++)
		isum[i] = _mm256_setzero_si256();
	for (int j = 0; j < 8; j++) {
		const uint8_t *qb = wb + 320 + 512 * (j / 2) + 32 * h;
		__m256i q[8];
		for (int t = 0; t < 8; t++) {
			__m256i v = _mm256_load_si256((const __m256i *)(qb + 64 * t));
			q[t] = _mm256_and_si256(j % 2 ? _mm256_srli_epi16(v, 4) : v, m4);
			if (five) { // sub-block j's fifth bits, bit j, to bit 4
				__m256i hb = _mm256_load_si256((const __m256i *)(wb + Q4_KP_BYTES + 64 * t + 32 * h));
				q[t] = _mm256_or_si256(q[t], _mm256_and_si256(bit4_256(hb, j), m10));
			}
		}
		__m256i sc32 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wb + 64 + 16 * j + 8 * h)));
		__m256i sc = five ? q6_scale(sc32) : dot_scale(sc32);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs + 32 * j;
			if (five)
				isum[i] = q6_sub(q6_sub(isum[i], q, xp, sc), q + 4, xp + 16, sc);
			else
				isum[i] = dot_scaled(isum[i], chain8(q, xp, 16, _mm256_setzero_si256()), sc);
		}
	}
	__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 16 * h)));
	__m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 32 + 16 * h)));
	for (int i = 0; i < nx; i++) {
		const uint8_t *xp = xb + i * xs;
		__m256i ms = _mm256_setzero_si256();
		for (int p = 0; p < 4; p++) {
			__m256i mv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192 + 32 * p + 16 * h)));
			ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mv, bcast(xp + XK_BS32 + 4 * p)));
		}
		__m256 dx = _mm256_set1_ps(ldf(xp + XK_D));
		acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_mul_ps(d, dx), acc[i]);
		acc[i] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_mul_ps(dmin, dx), acc[i]);
	}
}

// pq4_k_256 is pq4_k_512 for half h of a group.
INLINE LVL void pq4_k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	for (int s = 0; s < nb; s++)
		pqk_256(w + (int64_t)s * Q4_KP_BYTES, x + (int64_t)s * XK_BYTES, xs, h, nx, acc, 0);
}

// pq5_k_256 is pq5_k_512 for half h of a group.
INLINE LVL void pq5_k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	for (int s = 0; s < nb; s++)
		pqk_256(w + (int64_t)s * Q5_KP_BYTES, x + (int64_t)s * XK_BYTES, xs, h, nx, acc, 1);
}

// pq5_k_256_1 is pq5_k_256 for one activation row and both halves of a
// group.
INLINE LVL void pq5_k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q5_KP_BYTES;
		mm_prefetch(wb + MM_PREFETCH, Q5_KP_BYTES);
		for (int h = 0; h < 2; h++)
			pqk_256(wb, x + (int64_t)s * XK_BYTES, 0, h, 1, acc + h, 1);
	}
}

// q5_unpack sets q[j] and q[4 + j] to the 5-bit quants of vector j's low
// and high nibbles in half h's 32 bytes of a packed Q5_0 block at wb, their
// fifth bits from its qh (bit 2j, 2j+1 of each byte) moved to bit 4.
INLINE LVL void q5_unpack(const uint8_t *wb, int h, __m256i *q) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), m10 = _mm256_set1_epi8(0x10);
	__m256i qh = _mm256_load_si256((const __m256i *)(wb + 256 + 32 * h));
	for (int j = 0; j < 4; j++) {
		__m256i v = _mm256_load_si256((const __m256i *)(wb + 64 * j + 32 * h));
		q[j] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_and_si256(bit4_256(qh, 2 * j), m10));
		q[4 + j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4),
		                           _mm256_and_si256(bit4_256(qh, 2 * j + 1), m10));
	}
}

// chain4x2 is chain8 for quants up to 31 (Q5_0): a pair of two 4-bit-quant
// steps no longer fits vpmaddubsw's int16 sums eight times over, so the
// block's first 16 and last 16 are two chains of four, each ended to int32.
INLINE LVL __m256i chain4x2(const __m256i *q, const uint8_t *xp, int64_t hi, __m256i a0) {
	const __m256i z = _mm256_setzero_si256();
	__m256i xh = x_last16(xp, hi);
	dacc s = dot_first(a0, q[0], x_step(xp, hi, xh, 0));
	dacc t = dot_first(z, q[4], x_step(xp, hi, xh, 4));
	for (int u = 1; u < 4; u++) {
		s = dot_next(s, q[u], x_step(xp, hi, xh, u));
		t = dot_next(t, q[4 + u], x_step(xp, hi, xh, 4 + u));
		keep(s);
		keep(t);
	}
	return _mm256_add_epi32(dot_end(s, a0), dot_end(t, z));
}

// pq5_0_256 is simd_packed.c's pq5_0_512 for half h of a group.
INLINE LVL void pq50_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc, int one) {
	const uint8_t *ds = w + 320 * (int64_t)nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 320 * (int64_t)b;
		__m256i q[8];
		q5_unpack(wb, h, q);
		__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * b + 16 * h)));
		__m256 mw = one ? one_mins(ds, nb, b, h) : dw;
		const uint8_t *xb = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = xb + i * xs;
			__m256i s = chain4x2(q, xp, 64, _mm256_set1_epi32(one ? 0 : (int)(2 * ld32(xp + 192)))); // -16·Σq
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(dw, _mm256_set1_ps(ldf(xp + 128))), acc[i]);
			if (one)
				acc[i] = one_min(acc[i], mw, xp);
		}
	}
}
INLINE LVL void pq5_0_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq50_256(w, nb, h, x, xs, nx, acc, 0);
}
INLINE LVL void pq5_1_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq50_256(w, nb, h, x, xs, nx, acc, 1);
}

// bit2_256 moves bit n (0-7) of each byte of h to bit 2.
INLINE LVL __m256i bit2_256(__m256i h, int n) {
	return n < 2 ? _mm256_slli_epi16(h, 2 - n) : n == 2 ? h : _mm256_srli_epi16(h, n - 2);
}

// q6_unpack sets q[0][j] and q[1][j] to the quants (0-63) of sub-blocks 2p
// and 2p+1 of half h of a packed Q6_K super-block at wb: the 32 bytes at
// ql + 64j (their low bits) and qh + 64j (their high bits, at 2m of
// sub-block m of a quad). With three, to the quants (0-7) of a packed Q3_K
// one: their low bits at 2m of sub-block m of a quad, their third bits at
// m of sub-block m of an octet.
INLINE LVL void q6_unpack(const uint8_t *wb, int h, int p, __m256i q[2][4], int three) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30), m3 = _mm256_set1_epi8(3),
	              b2 = _mm256_set1_epi8(4);
	if (three) {
		const uint8_t *ql = wb + 256 * (p / 2) + 32 * h, *qh = wb + Q3_KP_HI + 256 * (p / 4) + 32 * h;
		for (int j = 0; j < 4; j++) {
			__m256i v = _mm256_load_si256((const __m256i *)(ql + 64 * j));
			__m256i hb = _mm256_load_si256((const __m256i *)(qh + 64 * j));
			for (int t = 0; t < 2; t++)
				q[t][j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4 * (p % 2) + 2 * t), m3),
				                          _mm256_and_si256(bit2_256(hb, 2 * (p % 4) + t), b2));
		}
		return;
	}
	const uint8_t *ql = wb + 256 * p + 32 * h, *qh = wb + 2048 + 256 * (p / 2) + 32 * h;
	for (int j = 0; j < 4; j++) {
		__m256i v = _mm256_load_si256((const __m256i *)(ql + 64 * j));
		__m256i hb = _mm256_load_si256((const __m256i *)(qh + 64 * j));
		__m256i h0 = bit4_256(hb, 4 * (p % 2)), h1 = bit4_256(hb, 4 * (p % 2) + 2);
		q[0][j] = _mm256_or_si256(_mm256_and_si256(v, m4), _mm256_and_si256(h0, m30));
		q[1][j] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), _mm256_and_si256(h1, m30));
	}
}

// q6_pair adds to i, for the rows of half h, the integer sums of pair p of
// a packed Q6_K super-block (at wb; its quants q) with the XK activations
// at xp: each sub-block's q·x times its scale (s0, s1: q6_scale's), less
// 32·Σx times the scales (sn: the pair's int16 scales times -32).
INLINE LVL __m256i q6_pair(__m256i i, __m256i q[2][4], const uint8_t *xp, int p, __m256i s0, __m256i s1, __m256i sn) {
	i = q6_sub(q6_sub(i, q[0], xp + 32 * p, s0), q[1], xp + 32 * p + 16, s1);
	return _mm256_add_epi32(i, _mm256_madd_epi16(sn, bcast(xp + XK_BSUMS + 4 * p)));
}

// q6_scales sets s0, s1 and sn for pair p of half h of a packed Q6_K
// super-block at wb (with three a Q3_K one, whose quants' offset is 4).
INLINE LVL void q6_scales(const uint8_t *wb, int h, int p, __m256i *s0, __m256i *s1, __m256i *sn, int three) {
	__m256i sc = _mm256_cvtepi8_epi16(
	    _mm_loadu_si128((const __m128i *)(wb + (three ? Q3_KP_SC : 3072) + 32 * p + 16 * h)));
	*s0 = q6_scale(_mm256_srai_epi32(_mm256_slli_epi32(sc, 16), 16));
	*s1 = q6_scale(_mm256_srai_epi32(sc, 16));
	*sn = _mm256_mullo_epi16(sc, _mm256_set1_epi16(three ? -4 : -32));
}

// pq6k_256 is pq6k_512 for half h of a group.
INLINE LVL void pq6k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc,
                         int three) {
	const int sbb = three ? Q3_KP_BYTES : Q6_KP_BYTES;
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * sbb;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		__m256i isum[XT4];
		for (int i = 0; i < nx; i++)
			isum[i] = _mm256_setzero_si256();
		for (int p = 0; p < 8; p++) {
			__m256i q[2][4], s0, s1, sn;
			q6_unpack(wb, h, p, q, three);
			q6_scales(wb, h, p, &s0, &s1, &sn, three);
			for (int i = 0; i < nx; i++)
				isum[i] = q6_pair(isum[i], q, xb + i * xs, p, s0, s1, sn);
		}
		__m256 d = _mm256_load_ps((const float *)(wb + (three ? Q3_KP_D : 3328) + 32 * h));
		for (int i = 0; i < nx; i++)
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_mul_ps(d, _mm256_set1_ps(ldf(xb + i * xs + XK_D))),
			                         acc[i]);
	}
}

// pq2_k_256 is pq2_k_512 for half h of a group (with one activation row,
// both halves, a pair's lines whole before the next pair's: nx 1, h 2).
INLINE LVL void pq2_k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	const __m256i m3 = _mm256_set1_epi8(3), m4 = _mm256_set1_epi16(0x0f), lo16 = _mm256_set1_epi32(0xffff);
	int h0 = h == 2 ? 0 : h, h1 = h == 2 ? 1 : h;
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q2_KP_BYTES;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		if (h == 2)
			mm_prefetch(wb + MM_PREFETCH, Q2_KP_BYTES);
		__m256i isum[XT4], imin[XT4]; // with h 2, a half each
		for (int i = 0; i < XT4; i++)
			isum[i] = imin[i] = _mm256_setzero_si256();
		for (int p = 0; p < 8; p++)
			for (int hh = h0; hh <= h1; hh++) {
				__m256i q[2][4];
				for (int j = 0; j < 4; j++) {
					__m256i v = _mm256_load_si256((const __m256i *)(wb + 256 * (p / 2) + 64 * j + 32 * hh));
					q[0][j] = _mm256_and_si256(_mm256_srli_epi16(v, 4 * (p % 2)), m3);
					q[1][j] = _mm256_and_si256(_mm256_srli_epi16(v, 4 * (p % 2) + 2), m3);
				}
				__m256i sm = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(wb + Q2_KP_SC + 32 * p + 16 * hh)));
				__m256i sc = _mm256_and_si256(sm, m4), mn = _mm256_srli_epi16(sm, 4);
				__m256i s0 = q6_scale(_mm256_and_si256(sc, lo16)), s1 = q6_scale(_mm256_srli_epi32(sc, 16));
				for (int i = 0; i < nx; i++) {
					const uint8_t *xp = xb + i * xs;
					int a = h == 2 ? hh : i;
					isum[a] = q6_sub(q6_sub(isum[a], q[0], xp + 32 * p, s0), q[1], xp + 32 * p + 16, s1);
					imin[a] = _mm256_add_epi32(imin[a], _mm256_madd_epi16(mn, bcast(xp + XK_BSUMS + 4 * p)));
				}
			}
		for (int i = 0; i < (h == 2 ? 2 : nx); i++) {
			int hh = h == 2 ? i : h;
			__m256 dx = _mm256_set1_ps(ldf(xb + (h == 2 ? 0 : i * xs) + XK_D));
			__m256 d = _mm256_load_ps((const float *)(wb + Q2_KP_D + 32 * hh));
			__m256 dm = _mm256_load_ps((const float *)(wb + Q2_KP_DMIN + 32 * hh));
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[i]), _mm256_mul_ps(d, dx), acc[i]);
			acc[i] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(imin[i]), _mm256_mul_ps(dm, dx), acc[i]);
		}
	}
}
INLINE LVL void pq2_k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	pq2_k_256(w, nb, 2, x, 0, 1, acc);
}

#include "simd_packed256_q8.h"

// A decode step (one activation row) is bound by the weights' bandwidth:
// its kernels take a group's two halves in one pass, each 64-byte line of
// weights loaded once and used whole, the activations broadcast once for
// both halves, and fetch the weights MM_PREFETCH bytes ahead (the hardware
// prefetchers stop at 4 KiB pages). A row's sums are those of the tiled
// kernels, in the same order.

// pq4_0_256_1 is pq4_0_256 for one activation row and both halves of a
// group, acc[h] the sums of half h.
INLINE LVL void pq40_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc, int one) {
	const __m256i m4 = _mm256_set1_epi8(0x0f);
	const uint8_t *ds = w + 256 * (int64_t)nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 256 * (int64_t)b;
		mm_prefetch(wb + MM_PREFETCH, 256);
		const uint8_t *xp = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		__m256i bias = one ? _mm256_setzero_si256() : bcast(xp + 192);
		dacc s[2];
		for (int j = 0; j < 4; j++) {
			__m256i xl = bcast(xp + 4 * j), xh = bcast(xp + 64 + 4 * j);
			for (int h = 0; h < 2; h++) {
				__m256i v = _mm256_load_si256((const __m256i *)(wb + 64 * j + 32 * h));
				__m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
				s[h] = j ? dot_next2(s[h], lo, xl, hi, xh) : dot_first2(bias, lo, xl, hi, xh);
				keep(s[h]);
			}
		}
		__m256 dx = _mm256_set1_ps(ldf(xp + 128));
		for (int h = 0; h < 2; h++) {
			__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * b + 16 * h)));
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot_end(s[h], bias)), _mm256_mul_ps(dw, dx), acc[h]);
			if (one)
				acc[h] = one_min(acc[h], one_mins(ds, nb, b, h), xp);
		}
	}
}
INLINE LVL void pq4_0_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) { pq40_256_1(w, nb, x, acc, 0); }
INLINE LVL void pq4_1_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) { pq40_256_1(w, nb, x, acc, 1); }

// pq4_k_256_1 is pq4_k_256 for one activation row and both halves of a
// group: a 64-byte line of quants holds sub-blocks 2p and 2p+1 of 16 rows.
INLINE LVL void pq4_k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), z = _mm256_setzero_si256();
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * Q4_KP_BYTES;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		mm_prefetch(wb + MM_PREFETCH, Q4_KP_BYTES);
		__m256i isum[2] = {z, z};
		for (int p = 0; p < 4; p++) {
			const uint8_t *qb = wb + 320 + 512 * p, *xp = xb + 64 * p;
			// lo[h], hi[h]: half h's chains of sub-blocks 2p, 2p+1
			dacc lo[2], hi[2];
			for (int u = 0; u < 8; u++) {
				__m256i xl = bcast(xp + 4 * u), xh = bcast(xp + 32 + 4 * u);
				for (int h = 0; h < 2; h++) {
					__m256i v = _mm256_load_si256((const __m256i *)(qb + 64 * u + 32 * h));
					__m256i l = _mm256_and_si256(v, m4), g = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
					lo[h] = u ? dot_next(lo[h], l, xl) : dot_first(z, l, xl);
					hi[h] = u ? dot_next(hi[h], g, xh) : dot_first(z, g, xh);
					keep(lo[h]);
					keep(hi[h]);
				}
			}
			for (int h = 0; h < 2; h++) {
				__m256i s0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wb + 64 + 32 * p + 8 * h)));
				__m256i s1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wb + 80 + 32 * p + 8 * h)));
				isum[h] = dot_scaled(isum[h], lo[h], dot_scale(s0));
				isum[h] = dot_scaled(isum[h], hi[h], dot_scale(s1));
			}
		}
		__m256 dx = _mm256_set1_ps(ldf(xb + XK_D));
		for (int h = 0; h < 2; h++) {
			__m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 16 * h)));
			__m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(wb + 32 + 16 * h)));
			__m256i ms = z;
			for (int p = 0; p < 4; p++) {
				__m256i mv = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(wb + 192 + 32 * p + 16 * h)));
				ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mv, bcast(xb + XK_BS32 + 4 * p)));
			}
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h]), _mm256_mul_ps(d, dx), acc[h]);
			acc[h] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(ms), _mm256_mul_ps(dmin, dx), acc[h]);
		}
	}
}

// pq5_0_256_1 is pq5_0_256 for one activation row and both halves of a
// group.
INLINE LVL void pq50_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc, int one) {
	const uint8_t *ds = w + 320 * (int64_t)nb;
	for (int b = 0; b < nb; b++) {
		const uint8_t *wb = w + 320 * (int64_t)b;
		mm_prefetch(wb + MM_PREFETCH, 320);
		const uint8_t *xp = x + (b / 4) * X4G_BYTES + 16 * (b % 4);
		__m256 dx = _mm256_set1_ps(ldf(xp + 128));
		__m256i bias = _mm256_set1_epi32(one ? 0 : (int)(2 * ld32(xp + 192))); // -16·Σq
		for (int h = 0; h < 2; h++) {
			__m256i q[8];
			q5_unpack(wb, h, q);
			__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(ds + 32 * b + 16 * h)));
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(chain4x2(q, xp, 64, bias)), _mm256_mul_ps(dw, dx), acc[h]);
			if (one)
				acc[h] = one_min(acc[h], one_mins(ds, nb, b, h), xp);
		}
	}
}
INLINE LVL void pq5_0_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) { pq50_256_1(w, nb, x, acc, 0); }
INLINE LVL void pq5_1_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) { pq50_256_1(w, nb, x, acc, 1); }

// pq6k_256_1 is pq6k_256 for one activation row and both halves of a
// group, a pair's lines whole before the next pair's.
INLINE LVL void pq6k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc, int three) {
	const int sbb = three ? Q3_KP_BYTES : Q6_KP_BYTES;
	for (int s = 0; s < nb; s++) {
		const uint8_t *wb = w + (int64_t)s * sbb;
		const uint8_t *xb = x + (int64_t)s * XK_BYTES;
		mm_prefetch(wb + MM_PREFETCH, sbb);
		__m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
		for (int p = 0; p < 8; p++)
			for (int h = 0; h < 2; h++) {
				__m256i q[2][4], s0, s1, sn;
				q6_unpack(wb, h, p, q, three);
				q6_scales(wb, h, p, &s0, &s1, &sn, three);
				isum[h] = q6_pair(isum[h], q, xb, p, s0, s1, sn);
			}
		__m256 dx = _mm256_set1_ps(ldf(xb + XK_D));
		for (int h = 0; h < 2; h++) {
			__m256 d = _mm256_load_ps((const float *)(wb + (three ? Q3_KP_D : 3328) + 32 * h));
			acc[h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[h]), _mm256_mul_ps(d, dx), acc[h]);
		}
	}
}

INLINE LVL void pq6_k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq6k_256(w, nb, h, x, xs, nx, acc, 0);
}
INLINE LVL void pq6_k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) { pq6k_256_1(w, nb, x, acc, 0); }
INLINE LVL void pq3_k_256(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx, __m256 *acc) {
	pq6k_256(w, nb, h, x, xs, nx, acc, 1);
}
INLINE LVL void pq3_k_256_1(const uint8_t *w, int nb, const uint8_t *x, __m256 *acc) { pq6k_256_1(w, nb, x, acc, 1); }

// store8 writes the first n ≤ 8 lanes of v to p.
INLINE LVL void store8(float *p, __m256 v, int n) {
	if (n >= 8) {
		_mm256_storeu_ps(p, v);
		return;
	}
	__m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
	_mm256_maskstore_ps(p, m, v);
}

// PACKED256 defines name(PM_ARGS) over group (a half of a group of 16
// rows, tiles of xt ≤ XT4 activation rows) and group_1 (one activation row,
// both halves).
#define PACKED256(name, group, xt)                                                                             \
	INLINE LVL void name##_tile(const uint8_t *w, int nb, int h, const uint8_t *x, int64_t xs, int nx,           \
	                            float *dst, int64_t ds, int n) {                                                 \
		__m256 acc[XT4];                                                                                     \
		for (int i = 0; i < nx; i++)                                                                         \
			acc[i] = _mm256_setzero_ps();                                                                \
		group(w, nb, h, x, xs, nx, acc);                                                                     \
		for (int i = 0; i < nx; i++)                                                                         \
			store8(dst + i * ds, acc[i], n);                                                             \
	}                                                                                                            \
	static LVL void name(PM_ARGS) {                                                                              \
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
			for (int i = 0; i < nx; i += xt) {                                                           \
				const uint8_t *xt_ = x + i * xs;                                                     \
				float *dt = dst + i * ds + r;                                                        \
				switch (nx - i < xt ? nx - i : xt) {                                                 \
				case 1: name##_tile(wg, nb, h, xt_, xs, 1, dt, ds, n); break;                        \
				case 2: name##_tile(wg, nb, h, xt_, xs, 2, dt, ds, n); break;                        \
				case 3: name##_tile(wg, nb, h, xt_, xs, 3, dt, ds, n); break;                        \
				case 4: name##_tile(wg, nb, h, xt_, xs, 4, dt, ds, n); break;                        \
				case 5: name##_tile(wg, nb, h, xt_, xs, xt > 5 ? 5 : xt, dt, ds, n); break;          \
				case 6: name##_tile(wg, nb, h, xt_, xs, xt > 6 ? 6 : xt, dt, ds, n); break;          \
				case 7: name##_tile(wg, nb, h, xt_, xs, xt > 7 ? 7 : xt, dt, ds, n); break;          \
				default: name##_tile(wg, nb, h, xt_, xs, xt, dt, ds, n); break;                      \
				}                                                                                    \
			}                                                                                            \
		}                                                                                                    \
	}

PACKED256(pm_q4_0_256, pq4_0_256, XT4)
PACKED256(pm_q4_k_256, pq4_k_256, XT4)
PACKED256(pm_q8_0_256, pq8_0_256, Q8_TILE)
PACKED256(pm_iq4_nl_256, pq_iq4_nl_256, LUT_TILE)
PACKED256(pm_iq4_xs_256, pq_iq4_xs_256, LUT_TILE)
#if AVX2_KINDS
PACKED256(pm_iq4_xsk_256, pq_iq4_xsk_256, IQ4_XSK_TILE)
PACKED256(pm_q8_0s_256, pq8_0s_256, Q8_TILE)
PACKED256(pm_iq4_nls_256, pq_iq4_nls_256, LUT_TILE)
#endif
PACKED256(pm_mxfp4_256, pq_mxfp4_256, MXFP4_TILE)
PACKED256(pm_q6_k_256, pq6_k_256, XT4)
PACKED256(pm_q3_k_256, pq3_k_256, XT4)
PACKED256(pm_q2_k_256, pq2_k_256, XT4)
PACKED256(pm_q5_0_256, pq5_0_256, XT4)
PACKED256(pm_q4_1_256, pq4_1_256, XT4)
PACKED256(pm_q5_1_256, pq5_1_256, XT4)
PACKED256(pm_q5_k_256, pq5_k_256, XT4)

// PM256 is folio_matmul_packed at this level for the kinds it repacks.
void PM256(int kind, PM_ARGS) {
	static void (*const pm[])(PM_ARGS) = {
		[KIND_Q8_0] = pm_q8_0_256, [KIND_Q4_0] = pm_q4_0_256, [KIND_Q4_K] = pm_q4_k_256,
		[KIND_Q6_K] = pm_q6_k_256, [KIND_Q5_0] = pm_q5_0_256, [KIND_Q5_K] = pm_q5_k_256, [KIND_Q3_K] = pm_q3_k_256,
		[KIND_Q2_K] = pm_q2_k_256, [KIND_IQ4_NL] = pm_iq4_nl_256, [KIND_Q4_1] = pm_q4_1_256, [KIND_Q5_1] = pm_q5_1_256,
		[KIND_F16] = folio_pm_f16_256, [KIND_BF16] = folio_pm_bf16_256,
		[KIND_IQ4_XS] = pm_iq4_xs_256, [KIND_MXFP4] = pm_mxfp4_256,
#if AVX2_KINDS
		[KIND_IQ4_XSK] = pm_iq4_xsk_256, [KIND_Q8_0S] = pm_q8_0s_256, [KIND_IQ4_NLS] = pm_iq4_nls_256,
#endif
	};
	pm[kind](w, group_bytes, nb, rows, x, xs, nx, dst, ds);
}
