//go:build amd64 && cgo

// The unpacked matmul kernels of AVX-VNNI's own (simd_rows256.h): Q6_K's
// vpdpwssd adds its sub-blocks' scaled pair sums in one instruction, and
// MXFP4's vpdpbusd takes X8P's biased activations as they are, against
// the signed weights, the bias's share (128·Σw) started below zero, where
// AVX2 takes off the bias and puts the weights' signs on the activations.
// Its other kernels are AVX2's: the Q4_0, Q4_K and Q8_0 weights it reads
// are repacked (simd_packed_vnni.c), F16's sums are in float32.

#include "simd.h"

#define LVL AVXVNNI
#define MM_Q6_K folio_mm_q6_k_vnni
#define MM_MXFP4 folio_mm_mxfp4_vnni
INLINE AVXVNNI __m256i madd_acc(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
INLINE AVXVNNI __m256i s8_pre(__m256i wq) {
	const __m256i z = _mm256_setzero_si256();
	return _mm256_sub_epi32(z, _mm256_dpbusd_avx_epi32(z, _mm256_set1_epi8((char)0x80), wq));
}
INLINE AVXVNNI __m256i s8_dot(__m256i bias, __m256i wq, __m256i xv) { return _mm256_dpbusd_avx_epi32(bias, xv, wq); }
#include "simd_rows256.h"
