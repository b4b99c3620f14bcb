// MatMul (dst[i,o] = x[i,:] · w[o,:], x [n, k] F32, w [m, k] of a GGUF
// type) and get_rows (Embed, Gather), with the weight dequantized in the
// kernel, 8 elements at a time (common.cu).

// matvec is for a few rows of x (decode): a warp per MV_ROWS weight rows,
// its lanes over runs of 8 elements, so a warp reads its rows once,
// coalesced, and each run of x once for all of them; blockIdx.y is the row
// of x. Block: MV_WARPS warps.
#define MV_WARPS 4
#define MV_ROWS 2

template <typename T>
__device__ void matvec(const u8* __restrict__ w, long long row_bytes, const float* __restrict__ x,
                       float* __restrict__ y, int k, int m) {
    int o0 = (blockIdx.x * MV_WARPS + threadIdx.x / 32) * MV_ROWS, lane = threadIdx.x % 32, i = blockIdx.y;
    if (o0 >= m) return;
    int rows = m - o0 < MV_ROWS ? m - o0 : MV_ROWS;  // the same for the whole warp
    const float* xr = x + (long long)i * k;
    float sum[MV_ROWS], v[8], xv[8];
    for (int r = 0; r < MV_ROWS; r++) sum[r] = 0.0f;
    int full = k & ~7;
    // Unrolled so that several runs' loads are in flight per lane: decode
    // is bound by memory, and latency × bandwidth needs the bytes moving.
#pragma unroll 2
    for (int e = lane * 8; e < full; e += 256) {
        for (int j = 0; j < 8; j++) xv[j] = xr[e + j];
        for (int r = 0; r < MV_ROWS; r++) {
            if (r < rows) {
                T::load8(w + (long long)(o0 + r) * row_bytes, e, v);
                for (int j = 0; j < 8; j++) sum[r] += v[j] * xv[j];
            }
        }
    }
    for (int e = full + lane; e < k; e += 32)
        for (int r = 0; r < rows; r++) sum[r] += T::at(w + (long long)(o0 + r) * row_bytes, e) * xr[e];
    for (int r = 0; r < rows; r++) {
        float s = warp_sum(sum[r]);
        if (lane == 0) y[(long long)i * m + o0 + r] = s;
    }
}

extern "C" __global__ void __launch_bounds__(128) matvec_f32(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tf32>(w, rb, x, y, k, m); }
extern "C" __global__ void __launch_bounds__(128) matvec_f16(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tf16>(w, rb, x, y, k, m); }
extern "C" __global__ void __launch_bounds__(128) matvec_q8_0(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tq8_0>(w, rb, x, y, k, m); }
extern "C" __global__ void __launch_bounds__(128) matvec_q4_0(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tq4_0>(w, rb, x, y, k, m); }
extern "C" __global__ void __launch_bounds__(128) matvec_q4_k(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tq4_k>(w, rb, x, y, k, m); }
extern "C" __global__ void __launch_bounds__(128) matvec_q6_k(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tq6_k>(w, rb, x, y, k, m); }
extern "C" __global__ void __launch_bounds__(128) matvec_mxfp4(const u8* w, long long rb, const float* x, float* y, int k, int m) { matvec<tmxfp4>(w, rb, x, y, k, m); }

// matmul is for many rows of x (prefill): a block of 256 threads computes
// a TM × TN tile of dst, 4 × 4 per thread, stepping through k by TK with
// both operands staged (the weight dequantized) in shared memory.
#define TM 64
#define TN 64
#define TK 32

template <typename T>
__device__ void matmul(const u8* __restrict__ w, long long row_bytes, const float* __restrict__ x,
                       float* __restrict__ y, int n, int k, int m) {
    __shared__ float xs[TK][TM + 4];
    __shared__ float ws[TK][TN + 4];
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int i0 = blockIdx.y * TM, o0 = blockIdx.x * TN;
    int lr = tid / 4, lc = (tid % 4) * 8;  // the row and the run of 8 this thread stages
    float acc[4][4];
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++) acc[a][b] = 0;
    for (int k0 = 0; k0 < k; k0 += TK) {
        float v[8];
        int xi = i0 + lr, e = k0 + lc;
        for (int j = 0; j < 8; j++) v[j] = (xi < n && e + j < k) ? x[(long long)xi * k + e + j] : 0.0f;
        for (int j = 0; j < 8; j++) xs[lc + j][lr] = v[j];
        int wo = o0 + lr;
        if (wo < m && e + 8 <= k) {
            T::load8(w + (long long)wo * row_bytes, e, v);
        } else {
            for (int j = 0; j < 8; j++) v[j] = (wo < m && e + j < k) ? T::at(w + (long long)wo * row_bytes, e + j) : 0.0f;
        }
        for (int j = 0; j < 8; j++) ws[lc + j][lr] = v[j];
        __syncthreads();
        for (int kk = 0; kk < TK; kk++) {
            float a[4], b[4];
            for (int q = 0; q < 4; q++) {
                a[q] = xs[kk][ty * 4 + q];
                b[q] = ws[kk][tx * 4 + q];
            }
            for (int p = 0; p < 4; p++)
                for (int q = 0; q < 4; q++) acc[p][q] += a[p] * b[q];
        }
        __syncthreads();
    }
    for (int p = 0; p < 4; p++) {
        int i = i0 + ty * 4 + p;
        if (i >= n) continue;
        for (int q = 0; q < 4; q++) {
            int o = o0 + tx * 4 + q;
            if (o < m) y[(long long)i * m + o] = acc[p][q];
        }
    }
}

extern "C" __global__ void __launch_bounds__(256) matmul_f32(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tf32>(w, rb, x, y, n, k, m); }
extern "C" __global__ void __launch_bounds__(256) matmul_f16(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tf16>(w, rb, x, y, n, k, m); }
extern "C" __global__ void __launch_bounds__(256) matmul_q8_0(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tq8_0>(w, rb, x, y, n, k, m); }
extern "C" __global__ void __launch_bounds__(256) matmul_q4_0(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tq4_0>(w, rb, x, y, n, k, m); }
extern "C" __global__ void __launch_bounds__(256) matmul_q4_k(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tq4_k>(w, rb, x, y, n, k, m); }
extern "C" __global__ void __launch_bounds__(256) matmul_q6_k(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tq6_k>(w, rb, x, y, n, k, m); }
extern "C" __global__ void __launch_bounds__(256) matmul_mxfp4(const u8* w, long long rb, const float* x, float* y, int n, int k, int m) { matmul<tmxfp4>(w, rb, x, y, n, k, m); }

// get_rows: dst[i,:] = table[ids[i],:] dequantized; a thread per run of 8
// elements, blockIdx.y the row.
template <typename T>
__device__ void get_rows(const u8* __restrict__ table, long long row_bytes, const int* __restrict__ ids,
                         float* __restrict__ dst, int cols) {
    int i = blockIdx.y, e = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (e >= cols) return;
    const u8* r = table + (long long)ids[i] * row_bytes;
    float* d = dst + (long long)i * cols;
    if (e + 8 <= cols) {
        float v[8];
        T::load8(r, e, v);
        for (int j = 0; j < 8; j++) d[e + j] = v[j];
    } else {
        for (int j = e; j < cols; j++) d[j] = T::at(r, j);
    }
}

extern "C" __global__ void __launch_bounds__(128) get_rows_f32(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tf32>(t, rb, ids, dst, cols); }
extern "C" __global__ void __launch_bounds__(128) get_rows_f16(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tf16>(t, rb, ids, dst, cols); }
extern "C" __global__ void __launch_bounds__(128) get_rows_q8_0(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tq8_0>(t, rb, ids, dst, cols); }
extern "C" __global__ void __launch_bounds__(128) get_rows_q4_0(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tq4_0>(t, rb, ids, dst, cols); }
extern "C" __global__ void __launch_bounds__(128) get_rows_q4_k(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tq4_k>(t, rb, ids, dst, cols); }
extern "C" __global__ void __launch_bounds__(128) get_rows_q6_k(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tq6_k>(t, rb, ids, dst, cols); }
extern "C" __global__ void __launch_bounds__(128) get_rows_mxfp4(const u8* t, long long rb, const int* ids, float* dst, int cols) { get_rows<tmxfp4>(t, rb, ids, dst, cols); }

// dequant: the rows × cols weight w as F32 in dst (for cuBLAS), a thread
// per run of 8 elements of a row.
template <typename T>
__device__ void dequant(const u8* __restrict__ w, long long row_bytes, float* __restrict__ dst, int rows, int cols) {
    long long runs = (cols + 7) / 8, t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= runs * rows) return;
    long long r = t / runs;
    int e = (int)(t % runs) * 8;
    const u8* wr = w + r * row_bytes;
    float* d = dst + r * cols;
    if (e + 8 <= cols) {
        float v[8];
        T::load8(wr, e, v);
        for (int j = 0; j < 8; j++) d[e + j] = v[j];
    } else {
        for (int j = e; j < cols; j++) d[j] = T::at(wr, j);
    }
}

extern "C" __global__ void __launch_bounds__(256) dequant_f32(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tf32>(w, rb, dst, rows, cols); }
extern "C" __global__ void __launch_bounds__(256) dequant_f16(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tf16>(w, rb, dst, rows, cols); }
extern "C" __global__ void __launch_bounds__(256) dequant_q8_0(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tq8_0>(w, rb, dst, rows, cols); }
extern "C" __global__ void __launch_bounds__(256) dequant_q4_0(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tq4_0>(w, rb, dst, rows, cols); }
extern "C" __global__ void __launch_bounds__(256) dequant_q4_k(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tq4_k>(w, rb, dst, rows, cols); }
extern "C" __global__ void __launch_bounds__(256) dequant_q6_k(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tq6_k>(w, rb, dst, rows, cols); }
extern "C" __global__ void __launch_bounds__(256) dequant_mxfp4(const u8* w, long long rb, float* dst, int rows, int cols) { dequant<tmxfp4>(w, rb, dst, rows, cols); }
