// Shared by every kernel (compiled first, as one program with the other
// files): fixed-width types, halves without cuda_fp16.h, warp and block
// reductions, and the dequantization of 8 consecutive elements of a
// weight row of each GGUF type, which the matmul, matvec and get_rows
// kernels share. Layouts are models/gguf's (one file per type there).
// Every kernel declares __launch_bounds__(N), N the threads per block Go
// launches it with (kernelThreads in bounds.go; a test compares them).

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;

#define NEG_INF __int_as_float(0xff800000)

#ifndef FOLIO_EMU
__device__ __forceinline__ float h2f(u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// f2h rounds to nearest even, as gguf.F32ToF16.
__device__ __forceinline__ u16 f2h(float f) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#endif  // FOLIO_EMU: the CPU emulation of the tests defines them

// Two aligned words, for an 8-byte load (no CUDA headers, so no uint2).
struct alignas(8) u32x2 {
    u32 x, y;
};

// ld16 reads a little-endian half at any even or odd address.
__device__ __forceinline__ u16 ld16(const u8* p) { return (u16)p[0] | ((u16)p[1] << 8); }

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ double warp_sum_d(double v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// block_sum_d is the sum of v over the block (blockDim.x a multiple of 32,
// at most 1024), returned to every thread.
__device__ double block_sum_d(double v) {
    __shared__ double part[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_sum_d(v);
    __syncthreads();  // part may still be read by a previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    double s = 0;
    for (int w = 0; w < warps; w++) s += part[w];
    return s;
}

__device__ float block_max(float v) {
    __shared__ float part[32];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) part[warp] = v;
    __syncthreads();
    float m = part[0];
    for (int w = 1; w < warps; w++) m = fmaxf(m, part[w]);
    return m;
}

// Each weight type: load8(row, e, out) writes elements e … e+7 of a row
// (e a multiple of 8, the 8 inside one block), at(row, e) one element.
// Products are rounded as models/gguf's dequantizers round them (__fmul_rn
// keeps the compiler from fusing them into an FMA).

struct tf32 {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const float* p = (const float*)row + e;  // rows of any length: no vector loads
        for (int i = 0; i < 8; i++) out[i] = p[i];
    }
    static __device__ __forceinline__ float at(const u8* row, int e) { return ((const float*)row)[e]; }
};

struct tf16 {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const u16* p = (const u16*)row + e;
        for (int i = 0; i < 8; i++) out[i] = h2f(p[i]);
    }
    static __device__ __forceinline__ float at(const u8* row, int e) { return h2f(((const u16*)row)[e]); }
};

// Q8_0: blocks of 32 in 34 bytes: d (f16), 32 int8 quants.
struct tq8_0 {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const u8* b = row + (e / 32) * 34;
        float d = h2f(ld16(b));
        const signed char* q = (const signed char*)(b + 2 + e % 32);
        for (int i = 0; i < 8; i++) out[i] = (float)q[i] * d;
    }
    static __device__ __forceinline__ float at(const u8* row, int e) {
        const u8* b = row + (e / 32) * 34;
        return (float)((const signed char*)b)[2 + e % 32] * h2f(ld16(b));
    }
};

// Q4_0: blocks of 32 in 18 bytes: d (f16), 16 bytes; byte j holds element
// j (low nibble) and j+16 (high nibble); element = d·(q-8).
struct tq4_0 {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const u8* b = row + (e / 32) * 18;
        float d = h2f(ld16(b));
        int j = e % 32, shift = j < 16 ? 0 : 4;
        const u8* q = b + 2 + j % 16;
        for (int i = 0; i < 8; i++) out[i] = (float)((int)((q[i] >> shift) & 15) - 8) * d;
    }
    static __device__ __forceinline__ float at(const u8* row, int e) {
        float v[8];
        load8(row, e & ~7, v);
        return v[e & 7];
    }
};

// Q4_K: super-blocks of 256 in 144 bytes: d, dmin (f16), 12 bytes of 6-bit
// scales and mins, 128 bytes of nibbles. Elements 64p … 64p+63 are the low
// (first 32) and high (next 32) nibbles of qs[32p … 32p+31]; element =
// d·sc·q − dmin·m of its 32-element sub-block.
__device__ __forceinline__ void scale_min_k4(int j, const u8* s, int* sc, int* m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

struct tq4_k {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const u8* b = row + (e / 256) * 144;
        int r = e % 256, p = r / 64, s = r % 64, hi = s >= 32;
        int sc, m;
        scale_min_k4(2 * p + hi, b + 4, &sc, &m);
        float d = __fmul_rn(h2f(ld16(b)), (float)sc), mn = __fmul_rn(h2f(ld16(b + 2)), (float)m);
        // 8 nibble bytes at an offset that is a multiple of 8 from a block
        // that is: one aligned 8-byte load.
        u32x2 w = *(const u32x2*)(b + 16 + 32 * p + s % 32);
        int shift = hi ? 4 : 0;
        for (int i = 0; i < 4; i++) {
            out[i] = __fmul_rn(d, (float)((w.x >> (8 * i + shift)) & 15)) - mn;
            out[i + 4] = __fmul_rn(d, (float)((w.y >> (8 * i + shift)) & 15)) - mn;
        }
    }
    static __device__ __forceinline__ float at(const u8* row, int e) {
        float v[8];
        load8(row, e & ~7, v);
        return v[e & 7];
    }
};

// Q6_K: super-blocks of 256 in 210 bytes: ql[128] low nibbles, qh[64] high
// 2 bits, 16 int8 scales, d (f16). Element 128h+32g+l takes ql[64h+l+32(g&1)]
// (low nibble for g < 2), bits 2g of qh[32h+l], scale e/16; element =
// d·scale·(q − 32).
struct tq6_k {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const u8* b = row + (e / 256) * 210;
        int r = e % 256, h = r / 128, t = r % 128, g = t / 32, l = t % 32;
        const u8* ql = b + 64 * h + l + 32 * (g & 1);
        const u8* qh = b + 128 + 32 * h + l;
        int shift = g >= 2 ? 4 : 0;
        float ds = __fmul_rn(h2f(ld16(b + 208)), (float)((const signed char*)b)[192 + r / 16]);
        for (int i = 0; i < 8; i++) {
            int q = (((ql[i] >> shift) & 15) | (((qh[i] >> (2 * g)) & 3) << 4)) - 32;
            out[i] = __fmul_rn(ds, (float)q);
        }
    }
    static __device__ __forceinline__ float at(const u8* row, int e) {
        float v[8];
        load8(row, e & ~7, v);
        return v[e & 7];
    }
};

// MXFP4: blocks of 32 in 17 bytes: e (E8M0), 16 bytes of E2M1 codes; byte j
// holds element j (low nibble) and j+16 (high nibble); element =
// MXFP4_VALUES[q]·2^(e−128), the doubled E2M1 value under half the scale,
// as ggml keeps them. Both factors are exact and so is their product.
__device__ __forceinline__ float e8m0_half(u8 e) {
    return __int_as_float(e < 2 ? 0x00200000 << e : (int)(e - 1) << 23);
}

struct tmxfp4 {
    static __device__ __forceinline__ void load8(const u8* row, int e, float* out) {
        const signed char values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
        const u8* b = row + (e / 32) * 17;
        float d = e8m0_half(b[0]);
        int j = e % 32, shift = j < 16 ? 0 : 4;
        const u8* q = b + 1 + j % 16;
        for (int i = 0; i < 8; i++) out[i] = (float)values[(q[i] >> shift) & 15] * d;
    }
    static __device__ __forceinline__ float at(const u8* row, int e) {
        float v[8];
        load8(row, e & ~7, v);
        return v[e & 7];
    }
};
