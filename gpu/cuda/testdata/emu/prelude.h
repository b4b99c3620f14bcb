// CPU emulation of the CUDA C that kernels/*.cu use, for tests on machines
// without a GPU (emu_test.go builds it with g++). A block's threads are
// fibers (ucontext) run by one scheduler, switching only at barriers:
// __syncthreads waits for the block, __shfl_xor_sync for the warp, so the
// kernels run as written, lane by lane. It checks the kernels' arithmetic
// and indexing, not CUDA's memory model or NVRTC.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ucontext.h>
#include <utility>

#define FOLIO_EMU 1
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)

struct emu_dim3 {
    unsigned x, y, z;
};
static emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

// The rounded operations: plain C++ with -ffp-contract=off.
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}

// Halves by their bits (no _Float16, for older compilers): h2f exactly,
// f2h rounding to nearest even as the GPU's cvt.rn does.
static inline float h2f(unsigned short h) {
    unsigned sign = (unsigned)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    float f;
    if (exp == 0) {
        f = std::ldexp((float)man, -24);  // zero or subnormal
        memcpy(&bits, &f, 4);
        bits |= sign;
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (man << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (man << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

static inline unsigned short f2h(float f) {
    unsigned x;
    memcpy(&x, &f, 4);
    unsigned sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);  // NaN
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // rounds past 65504: infinity
    if (a < 0x38800000u) {                                          // below 2^-14: subnormal or zero
        float v;
        memcpy(&v, &a, 4);
        return (unsigned short)(sign | (unsigned)std::nearbyint(v * 16777216.0f));
    }
    unsigned h = ((a >> 23) - 112) << 10 | (a & 0x7fffffu) >> 13, rest = a & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++;
    return (unsigned short)(sign | h);
}

void __syncthreads();
void emu_warp_wait();
static double emu_shfl[1024];

template <typename T>
T __shfl_xor_sync(unsigned, T v, int o) {
    unsigned t = threadIdx.x;
    memcpy(&emu_shfl[t], &v, sizeof(T));
    emu_warp_wait();
    T r;
    memcpy(&r, &emu_shfl[(t & ~31u) | ((t & 31u) ^ (unsigned)o)], sizeof(T));
    emu_warp_wait();
    return r;
}
