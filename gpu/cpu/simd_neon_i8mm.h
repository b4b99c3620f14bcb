// The i8mm level (arm64 with Armv8.6's int8 matrix multiply, FEAT_I8MM:
// Neoverse V1, V2 and N2 (Graviton 3 and 4, Grace), Cortex-A710 and
// later, Snapdragon X): the NEON level's matmuls of int8 blocks on smmla
// (vmmlaq_s32), which multiplies a 2×8 matrix of int8 by another's
// transpose into a 2×2 of int32, 32 products an instruction where sdot
// makes 16. A kernel takes two weight rows at once (MM_DRIVER2) and its
// activation rows in pairs: a pair of rows' 8 elements are one vector, a
// row a half (zip8), and a step's int32 lanes are w0·x0, w0·x1, w1·x0 and
// w1·x1. Each block's sums are scaled in float32 as at the NEON level, a
// pair's four at once, so the levels' results differ in the last bits
// only. A single activation row (a decode step) is paired with itself,
// half of each smmla wasted, so that each lane's steps, and a row's
// result, are the same whatever rows are computed with it. Q3_K, Q2_K,
// F16 and BF16 run the NEON level's kernels.
//
// Included by simd_neon.c, whose helpers the kernels take.

#define I8MM __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))

// zip8 sets lo to elements 0-7 of a then of b, hi to their elements 8-15.
INLINE void zip8(int8x16_t a, int8x16_t b, int8x16_t *lo, int8x16_t *hi) {
	*lo = vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
	*hi = vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

// mm16 adds to acc the 2×2 dot products of 16 elements: the weights' two
// rows zipped (wz[0], wz[1]: zip8 of the rows' 16) with the activation
// rows a and b.
INLINE I8MM int32x4_t mm16(int32x4_t acc, const int8x16_t *wz, int8x16_t a, int8x16_t b) {
	int8x16_t lo, hi;
	zip8(a, b, &lo, &hi);
	return vmmlaq_s32(vmmlaq_s32(acc, wz[0], lo), wz[1], hi);
}

// pair4 is (v0, v0, v1, v1), a row pair's per-row factor in a pair's
// lanes; cross4 is (a, b, a, b), an activation pair's.
INLINE float32x4_t pair4(float v0, float v1) { return vcombine_f32(vdup_n_f32(v0), vdup_n_f32(v1)); }
INLINE float32x4_t cross4(float a, float b) {
	float32x2_t v = vset_lane_f32(b, vdup_n_f32(a), 1);
	return vcombine_f32(v, v);
}
INLINE int32x4_t pair4i(int v0, int v1) { return vcombine_s32(vdup_n_s32(v0), vdup_n_s32(v1)); }
INLINE int32x4_t cross4i(int a, int b) {
	int32x2_t v = vset_lane_s32(b, vdup_n_s32(a), 1);
	return vcombine_s32(v, v);
}

// put_pairs stores a tile's pair sums: acc[p]'s lanes are weight rows 0
// and 1 (the second only with two) against activation rows 2p and 2p+1
// (the second only below nx).
INLINE void put_pairs(const float32x4_t *acc, int nx, float *out, int64_t os, int two) {
	for (int i = 0; i < nx; i++) {
		float32x4_t a = acc[i / 2];
		out[i * os] = i % 2 ? vgetq_lane_f32(a, 1) : vgetq_lane_f32(a, 0);
		if (two)
			out[i * os + 1] = i % 2 ? vgetq_lane_f32(a, 3) : vgetq_lane_f32(a, 2);
	}
}

// x8p_mm adds to acc[p] the pair sums of an X8P block b (activation rows
// 2p and 2p+1, the first repeated past nx) with a block of two weight rows
// zipped (wz[0..3]: elements 0-15, then 16-31), times the rows' scales dw
// (pair4) and the activations': i8mm's x8p_dot.
INLINE I8MM void x8p_mm(const int8x16_t *wz, float32x4_t dw, const uint8_t *x, int64_t xs, int b, int nx,
                        float32x4_t *acc) {
	for (int i = 0; i < nx; i += 2) {
		int8x16_t a0, a1, b0, b1;
		float da, db;
		x8p_block(x + i * xs, b, &a0, &a1, &da);
		if (i + 1 < nx)
			x8p_block(x + (i + 1) * xs, b, &b0, &b1, &db);
		else
			b0 = a0, b1 = a1, db = da;
		int32x4_t s = mm16(mm16(vdupq_n_s32(0), wz, a0, b0), wz + 2, a1, b1);
		acc[i / 2] = vfmaq_f32(acc[i / 2], vcvtq_f32_s32(s), vmulq_f32(dw, cross4(da, db)));
	}
}

// x8p_weights is block b of the kinds on X8P activations, as int8 values
// in two halves, and its scale: Q8_0 (kind 0), MXFP4 (1), IQ4_NL (2) or
// IQ4_XS (3; b its sub-block of 32).
INLINE void x8p_weights(const uint8_t *w, int b, int kind, int8x16_t *v0, int8x16_t *v1, float *d) {
	static const int8_t values[2][16] = {{MXFP4_TABLE}, {IQ4NL_TABLE}};
	if (kind == 0) {
		const uint8_t *wb = w + (int64_t)b * Q8_0_BYTES;
		*v0 = vld1q_s8((const int8_t *)wb + 2), *v1 = vld1q_s8((const int8_t *)wb + 18);
		*d = h2f(wb);
		return;
	}
	const int8x16_t table = vld1q_s8(values[kind != 1]);
	uint8x16_t q;
	if (kind == 3) {
		const uint8_t *wb = w + (int64_t)(b / 8) * IQ4_XS_BYTES;
		q = vld1q_u8(wb + 8 + 16 * (b % 8));
		*d = h2f(wb) * (float)iq4_xs_scale(wb, b % 8);
	} else {
		const uint8_t *wb = w + (int64_t)b * (kind == 2 ? IQ4_NL_BYTES : MXFP4_BYTES);
		q = vld1q_u8(wb + (kind == 2 ? 2 : 1));
		*d = kind == 2 ? h2f(wb) : e8m0_half(wb[0]);
	}
	*v0 = vqtbl1q_s8(table, vandq_u8(q, vdupq_n_u8(0x0f)));
	*v1 = vqtbl1q_s8(table, vshrq_n_u8(q, 4));
}

// x8p_row2 is the NEON level's q8_0_row, mx4_row and iq4_xs_row for two
// weight rows (w1 = w0 where there is one).
INLINE I8MM void x8p_row2(const uint8_t *w0, const uint8_t *w1, int two, int k, const uint8_t *x, int64_t xs, int nx,
                          float *out, int64_t os, int kind) {
	float32x4_t acc[XT / 2];
	for (int p = 0; p < (nx + 1) / 2; p++)
		acc[p] = vdupq_n_f32(0);
	for (int b = 0; b < k / 32; b++) {
		int8x16_t r0[2], r1[2], wz[4];
		float d0, d1;
		x8p_weights(w0, b, kind, r0, r0 + 1, &d0);
		x8p_weights(w1, b, kind, r1, r1 + 1, &d1);
		zip8(r0[0], r1[0], wz, wz + 1);
		zip8(r0[1], r1[1], wz + 2, wz + 3);
		x8p_mm(wz, pair4(d0, d1), x, xs, b, nx, acc);
	}
	put_pairs(acc, nx, out, os, two);
}

// q40_row2 is the NEON level's q40_row for two weight rows: Q4_0, with
// five Q5_0, with one Q4_1 or Q5_1. Each pair sum starts from its
// activation row's bias lane (Q4_0's and Q5_0's offsets).
INLINE I8MM void q40_row2(const uint8_t *w0, const uint8_t *w1, int two, int k, const uint8_t *x, int64_t xs, int nx,
                          float *out, int64_t os, int five, int one) {
	const int bb = five ? (one ? Q5_1_BYTES : Q5_0_BYTES) : (one ? Q4_1_BYTES : Q4_0_BYTES), o = one ? 2 : 0;
	float32x4_t acc[XT / 2];
	for (int p = 0; p < (nx + 1) / 2; p++)
		acc[p] = vdupq_n_f32(0);
	for (int b = 0; b < k / 32; b++) {
		const uint8_t *wb[2] = {w0 + (int64_t)b * bb, w1 + (int64_t)b * bb};
		int8x16_t lo[2], hi[2], wl[2], wh[2];
		for (int r = 0; r < 2; r++)
			q40_quants(wb[r], o, five, lo + r, hi + r);
		zip8(lo[0], lo[1], wl, wl + 1);
		zip8(hi[0], hi[1], wh, wh + 1);
		float32x4_t dw = pair4(h2f(wb[0]), h2f(wb[1])), mw = one ? pair4(h2f(wb[0] + 2), h2f(wb[1] + 2)) : dw;
		int j = b % 4;
		for (int i = 0; i < nx; i += 2) {
			const uint8_t *ga = x + i * xs + (int64_t)(b / 4) * X4G_BYTES;
			const uint8_t *gb = i + 1 < nx ? ga + xs : ga;
			int ba = ((const int32_t *)(ga + 192))[4 * j], bz = ((const int32_t *)(gb + 192))[4 * j];
			float da = ((const float *)(ga + 128))[4 * j], db = ((const float *)(gb + 128))[4 * j];
			int32x4_t s = one ? vdupq_n_s32(0) : five ? cross4i(2 * ba, 2 * bz) : cross4i(ba, bz);
			s = mm16(s, wl, vld1q_s8((const int8_t *)ga + 16 * j), vld1q_s8((const int8_t *)gb + 16 * j));
			s = mm16(s, wh, vld1q_s8((const int8_t *)ga + 64 + 16 * j), vld1q_s8((const int8_t *)gb + 64 + 16 * j));
			float32x4_t dx = cross4(da, db);
			acc[i / 2] = vfmaq_f32(acc[i / 2], vcvtq_f32_s32(s), vmulq_f32(dw, dx));
			if (one) // m·dx·Σq, Σq = -bias/8
				acc[i / 2] = vfmaq_f32(acc[i / 2], mw, vmulq_f32(dx, cross4((float)(-ba / 8), (float)(-bz / 8))));
		}
	}
	put_pairs(acc, nx, out, os, two);
}

// qk_row2 is the NEON level's qk_row for two weight rows (Q4_K, with five
// Q5_K): a sub-block's 32 quants of both rows zipped, its pair sums times
// the rows' scales (int32), the mins' share from the activations' sums
// of 32 as there.
INLINE I8MM void qk_row2(const uint8_t *w0, const uint8_t *w1, int two, int k, const uint8_t *x, int64_t xs, int nx,
                         float *out, int64_t os, int five) {
	const int bb = five ? Q5_K_BYTES : Q4_K_BYTES;
	float32x4_t acc[XT / 2];
	for (int p = 0; p < (nx + 1) / 2; p++)
		acc[p] = vdupq_n_f32(0);
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb[2] = {w0 + (int64_t)s * bb, w1 + (int64_t)s * bb};
		uint8_t sm[2][16]; // a row's 8 scales, then its 8 mins
		int16x8_t mins[2];
		for (int r = 0; r < 2; r++) {
			uint32_t u[4];
			q4k_scales(wb[r] + 4, u);
			memcpy(sm[r], u, 16);
			mins[r] = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(sm[r] + 8)));
		}
		int32x4_t isum[XT / 2];
		for (int p = 0; p < (nx + 1) / 2; p++)
			isum[p] = vdupq_n_s32(0);
		for (int j = 0; j < 8; j++) {
			int8x16_t q[2][2], wz[4];
			for (int r = 0; r < 2; r++)
				qk_quants(wb[r], j, five, q[r]);
			zip8(q[0][0], q[1][0], wz, wz + 1);
			zip8(q[0][1], q[1][1], wz + 2, wz + 3);
			int32x4_t sc = pair4i(sm[0][j], sm[1][j]);
			for (int i = 0; i < nx; i += 2) {
				const int8_t *xa = (const int8_t *)(x + i * xs + (int64_t)s * XK_BYTES) + 32 * j;
				const int8_t *xb = i + 1 < nx ? xa + xs : xa;
				int32x4_t t = mm16(mm16(vdupq_n_s32(0), wz, vld1q_s8(xa), vld1q_s8(xb)), wz + 2, vld1q_s8(xa + 16),
				                   vld1q_s8(xb + 16));
				isum[i / 2] = vmlaq_s32(isum[i / 2], t, sc);
			}
		}
		float32x4_t d = pair4(h2f(wb[0]), h2f(wb[1])), dmin = pair4(h2f(wb[0] + 2), h2f(wb[1] + 2));
		for (int i = 0; i < nx; i += 2) {
			const uint8_t *xa = x + i * xs + (int64_t)s * XK_BYTES, *xb = i + 1 < nx ? xa + xs : xa;
			int16x8_t ba = vld1q_s16((const int16_t *)(xa + XK_BS32)), bz = vld1q_s16((const int16_t *)(xb + XK_BS32));
			int32x4_t mb = {vaddvq_s32(mlal8(vdupq_n_s32(0), mins[0], ba)), vaddvq_s32(mlal8(vdupq_n_s32(0), mins[0], bz)),
			                vaddvq_s32(mlal8(vdupq_n_s32(0), mins[1], ba)), vaddvq_s32(mlal8(vdupq_n_s32(0), mins[1], bz))};
			float32x4_t v = vfmsq_f32(vmulq_f32(d, vcvtq_f32_s32(isum[i / 2])), dmin, vcvtq_f32_s32(mb));
			acc[i / 2] = vfmaq_f32(acc[i / 2], cross4(load_f32(xa + XK_D), load_f32(xb + XK_D)), v);
		}
	}
	put_pairs(acc, nx, out, os, two);
}

// q6_k_row2 is the NEON level's q6_k_row for two weight rows: each
// 16-element sub-block's pair sums times the rows' int8 scales, less 32
// times the scales times the activations' sums of 16.
INLINE I8MM void q6_k_row2(const uint8_t *w0, const uint8_t *w1, int two, int k, const uint8_t *x, int64_t xs, int nx,
                           float *out, int64_t os) {
	float32x4_t acc[XT / 2];
	for (int p = 0; p < (nx + 1) / 2; p++)
		acc[p] = vdupq_n_f32(0);
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb[2] = {w0 + (int64_t)s * Q6_K_BYTES, w1 + (int64_t)s * Q6_K_BYTES};
		const int8_t *sc[2] = {(const int8_t *)wb[0] + 192, (const int8_t *)wb[1] + 192};
		int32x4_t isum[XT / 2];
		for (int p = 0; p < (nx + 1) / 2; p++)
			isum[p] = vdupq_n_s32(0);
		for (int n = 0; n < 2; n++)
			for (int j = 0; j < 2; j++) {
				int8x16_t q[2][4]; // sub-blocks 8n + j, 8n + 2 + j, 8n + 4 + j, 8n + 6 + j
				for (int r = 0; r < 2; r++)
					q6_quants(wb[r], n, j, q[r]);
				for (int u = 0; u < 4; u++) {
					int t = 8 * n + 2 * u + j;
					int8x16_t wz[2];
					zip8(q[0][u], q[1][u], wz, wz + 1);
					int32x4_t scv = pair4i(sc[0][t], sc[1][t]);
					for (int i = 0; i < nx; i += 2) {
						const int8_t *xa = (const int8_t *)(x + i * xs + (int64_t)s * XK_BYTES) + 16 * t;
						const int8_t *xb = i + 1 < nx ? xa + xs : xa;
						isum[i / 2] = vmlaq_s32(isum[i / 2], mm16(vdupq_n_s32(0), wz, vld1q_s8(xa), vld1q_s8(xb)), scv);
					}
				}
			}
		float32x4_t d = pair4(h2f(wb[0] + 208), h2f(wb[1] + 208));
		int16x8_t s0[2], s1[2];
		for (int r = 0; r < 2; r++)
			s0[r] = vmovl_s8(vld1_s8(sc[r])), s1[r] = vmovl_s8(vld1_s8(sc[r] + 8));
		for (int i = 0; i < nx; i += 2) {
			const uint8_t *xa = x + i * xs + (int64_t)s * XK_BYTES, *xb = i + 1 < nx ? xa + xs : xa;
			const int16_t *ba = (const int16_t *)(xa + XK_BSUMS), *bz = (const int16_t *)(xb + XK_BSUMS);
			int32x4_t off = {
			    vaddvq_s32(mlal8(mlal8(vdupq_n_s32(0), s0[0], vld1q_s16(ba)), s1[0], vld1q_s16(ba + 8))),
			    vaddvq_s32(mlal8(mlal8(vdupq_n_s32(0), s0[0], vld1q_s16(bz)), s1[0], vld1q_s16(bz + 8))),
			    vaddvq_s32(mlal8(mlal8(vdupq_n_s32(0), s0[1], vld1q_s16(ba)), s1[1], vld1q_s16(ba + 8))),
			    vaddvq_s32(mlal8(mlal8(vdupq_n_s32(0), s0[1], vld1q_s16(bz)), s1[1], vld1q_s16(bz + 8)))};
			int32x4_t v = vsubq_s32(isum[i / 2], vshlq_n_s32(off, 5));
			acc[i / 2] = vfmaq_f32(acc[i / 2], vmulq_f32(cross4(load_f32(xa + XK_D), load_f32(xb + XK_D)), d), vcvtq_f32_s32(v));
		}
	}
	put_pairs(acc, nx, out, os, two);
}

// MM_DRIVER2 defines name(MM_ARGS) over row2(w0, w1, two, k, x tile,
// xstride, nx, out, ostride), which dots two weight rows (w1 = w0 and two
// 0 for a last odd one) with nx ≤ XT activation rows: MM_DRIVER's blocking,
// two rows at a time.
#define MM_DRIVER2(name, row2)                                                                           \
	static I8MM void name(MM_ARGS) {                                                                 \
		int rb = wstride < MM_WBLOCK ? (int)(MM_WBLOCK / wstride) : 1;                            \
		rb += rb % 2;                                                                            \
		mm_prefetch(w, rows * wstride < MM_PREFETCH ? rows * wstride : MM_PREFETCH);               \
		for (int r0 = 0; r0 < rows; r0 += rb) {                                                  \
			int r1 = r0 + rb < rows ? r0 + rb : rows;                                        \
			for (int i = 0; i < nx; i += XT) {                                               \
				const uint8_t *xt = x + i * xstride;                                     \
				float *dt = dst + i * dstride;                                           \
				int t = nx - i < XT ? nx - i : XT;                                       \
				for (int r = r0; r < r1; r += 2) {                                       \
					const uint8_t *wr = w + r * wstride;                             \
					int two = r + 1 < r1;                                            \
					const uint8_t *wn = two ? wr + wstride : wr;                     \
					if (i == 0)                                                      \
						mm_prefetch(wr + MM_PREFETCH, (1 + two) * wstride);      \
					switch (t) {                                                     \
					case 1: row2(wr, wn, two, k, xt, xstride, 1, dt + r, dstride); break; \
					case 2: row2(wr, wn, two, k, xt, xstride, 2, dt + r, dstride); break; \
					case 3: row2(wr, wn, two, k, xt, xstride, 3, dt + r, dstride); break; \
					case 4: row2(wr, wn, two, k, xt, xstride, 4, dt + r, dstride); break; \
					case 5: row2(wr, wn, two, k, xt, xstride, 5, dt + r, dstride); break; \
					case 6: row2(wr, wn, two, k, xt, xstride, 6, dt + r, dstride); break; \
					case 7: row2(wr, wn, two, k, xt, xstride, 7, dt + r, dstride); break; \
					default: row2(wr, wn, two, k, xt, xstride, 8, dt + r, dstride); break; \
					}                                                                \
				}                                                                        \
			}                                                                                \
		}                                                                                        \
	}

#define ROW2(name, body)                                                                                       \
	INLINE I8MM void name(const uint8_t *w0, const uint8_t *w1, int two, int k, const uint8_t *x, int64_t xs, \
	                      int nx, float *out, int64_t os) {                                                 \
		body;                                                                                         \
	}
ROW2(q8_0_row2, x8p_row2(w0, w1, two, k, x, xs, nx, out, os, 0))
ROW2(mxfp4_row2, x8p_row2(w0, w1, two, k, x, xs, nx, out, os, 1))
ROW2(iq4_nl_row2, x8p_row2(w0, w1, two, k, x, xs, nx, out, os, 2))
ROW2(iq4_xs_row2, x8p_row2(w0, w1, two, k, x, xs, nx, out, os, 3))
ROW2(q4_0_row2, q40_row2(w0, w1, two, k, x, xs, nx, out, os, 0, 0))
ROW2(q5_0_row2, q40_row2(w0, w1, two, k, x, xs, nx, out, os, 1, 0))
ROW2(q4_1_row2, q40_row2(w0, w1, two, k, x, xs, nx, out, os, 0, 1))
ROW2(q5_1_row2, q40_row2(w0, w1, two, k, x, xs, nx, out, os, 1, 1))
ROW2(q4_k_row2, qk_row2(w0, w1, two, k, x, xs, nx, out, os, 0))
ROW2(q5_k_row2, qk_row2(w0, w1, two, k, x, xs, nx, out, os, 1))
MM_DRIVER2(mm_q8_0_i8mm, q8_0_row2)
MM_DRIVER2(mm_mxfp4_i8mm, mxfp4_row2)
MM_DRIVER2(mm_iq4_nl_i8mm, iq4_nl_row2)
MM_DRIVER2(mm_iq4_xs_i8mm, iq4_xs_row2)
MM_DRIVER2(mm_q4_0_i8mm, q4_0_row2)
MM_DRIVER2(mm_q5_0_i8mm, q5_0_row2)
MM_DRIVER2(mm_q4_1_i8mm, q4_1_row2)
MM_DRIVER2(mm_q5_1_i8mm, q5_1_row2)
MM_DRIVER2(mm_q4_k_i8mm, q4_k_row2)
MM_DRIVER2(mm_q5_k_i8mm, q5_k_row2)
MM_DRIVER2(mm_q6_k_i8mm, q6_k_row2)
