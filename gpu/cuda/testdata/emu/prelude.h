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

struct emu_dim3 {
    unsigned x, y, z;
};
static emu_dim3 threadIdx, blockIdx, blockDim, gridDim;

// The rounded operations: plain C++ with -ffp-contract=off.
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}

static inline float h2f(unsigned short h) {
    _Float16 f;
    memcpy(&f, &h, 2);
    return (float)f;
}
static inline unsigned short f2h(float v) {
    _Float16 f = (_Float16)v;
    unsigned short h;
    memcpy(&h, &f, 2);
    return h;
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
