//go:build amd64 && cgo

// The unpacked matmul kernel of AVX-VNNI's own (simd_rows256.h): Q6_K's
// vpdpwssd adds its sub-blocks' scaled pair sums in one instruction. Its
// other kernels are AVX2's: the Q4_0, Q4_K and Q8_0 weights it reads
// are repacked (simd_packed_vnni.c), F16's sums are in float32.

#include "simd.h"

#define LVL AVXVNNI
#define MM_Q6_K folio_mm_q6_k_vnni
INLINE AVXVNNI __m256i madd_acc(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
#include "simd_rows256.h"
