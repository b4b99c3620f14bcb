// The unpacked matmul kernels on 256-bit vectors that AVX-VNNI shortens,
// compiled once per level by a file that defines the level's steps and
// then includes this one: simd_avx2.c and simd_vnni.c. Both levels sum the
// same integers (exactly) into the same lanes and scale them by the same
// float32 ops in the same order, so their results are the same bits. The
// includer defines LVL, its level's target attribute, the names of its
// entry MM_Q6_K (MM_ARGS), and this step:
//
//	madd_acc(acc, a, b)  acc + the int32 lane sums of the int16 pairs a·b
//
// Only amd64 files with cgo include it.

// Q6_K weights, XK activations: 32 quants (q+32) per step, two sub-blocks
// of 16 whose pair sums vpmaddwd multiplies by their scales (madd_acc); the offset's
// share, 32·Σ sc_g·Σx_g, comes from the activations' sums.
INLINE LVL void q6_k_row(const uint8_t *w, int k, const uint8_t *x, int64_t xs, int nx, float *out, int64_t os) {
	const __m256i m4 = _mm256_set1_epi8(0x0f), m30 = _mm256_set1_epi8(0x30);
	__m256 acc[XT];
	for (int i = 0; i < nx; i++)
		acc[i] = _mm256_setzero_ps();
	for (int s = 0; s < k / 256; s++) {
		const uint8_t *wb = w + (int64_t)s * Q6_K_BYTES;
		float d = h2f(wb + 208);
		const int8_t *sc = (const int8_t *)(wb + 192);
		__m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
		__m256i isum[XT];
		for (int i = 0; i < nx; i++)
			isum[i] = _mm256_setzero_si256();
		for (int h = 0; h < 2; h++) {
			__m256i ql0 = _mm256_loadu_si256((const __m256i *)(wb + 64 * h));
			__m256i ql1 = _mm256_loadu_si256((const __m256i *)(wb + 64 * h + 32));
			__m256i qh = _mm256_loadu_si256((const __m256i *)(wb + 128 + 32 * h));
			__m256i q[4] = {
				_mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30)),
				_mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30)),
				_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30)),
				_mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)),
			};
			for (int g = 0; g < 4; g++) {
				int j = 8 * h + 2 * g; // the sub-blocks of 16 of these 32 quants
				__m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[j + 1]), _mm_set1_epi16(sc[j]));
				for (int i = 0; i < nx; i++) {
					const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES + 128 * h + 32 * g;
					__m256i p = _mm256_maddubs_epi16(q[g], _mm256_load_si256((const __m256i *)xp));
					isum[i] = madd_acc(isum[i], p, scv);
				}
			}
		}
		for (int i = 0; i < nx; i++) {
			const uint8_t *xp = x + i * xs + (int64_t)s * XK_BYTES;
			float dx;
			memcpy(&dx, xp + XK_D, 4);
			__m256i corr = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(xp + XK_BSUMS)), sc16);
			__m256i sum = _mm256_sub_epi32(isum[i], _mm256_slli_epi32(corr, 5));
			acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(d * dx), acc[i]);
		}
	}
	for (int i = 0; i < nx; i++)
		out[i * os] = hsum8(acc[i]);
}
MM_DRIVER(MM_Q6_K, q6_k_row, LVL, 4)
