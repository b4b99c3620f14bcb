// Paged attention for one layer. q and dst are [rows, heads·head_dim];
// meta holds, for each row, the first position it attends to, how many
// consecutive positions from there (0: the row is in no sequence and dst
// is left alone), and where its sequence's block table starts in the
// block list that follows the 3·rows entries:
//
//   meta[3r] = first(r), meta[3r+1] = n(r), meta[3r+2] = tab(r), blocks = meta + 3·rows
//
// Position p of row r has its K/V in block blocks[tab(r) + p/block_size]
// at offset p % block_size. The list holds a sequence's table from the
// block of its earliest first(r) on (a sliding window's earlier entries
// may be -1), so tab(r) may be negative; tab(r) + p/block_size is not,
// for every position p the row reads. Causal, windowed and bidirectional
// attention differ only in first and n (Go computes them: gpu.AttnOpts.Span).
// Query head h reads K/V head h / (heads/kv_heads).
//
// sinks, when not null, holds a logit per query head that joins the
// softmax's max and denominator but has no value (gpt-oss's attention
// sinks, llama.cpp's soft_max with sinks): it enters at the merge of the
// warps' states.
//
// Scores are q·k, soft-capped when cap > 0 (cap · tanh(q·k · inv_cap),
// before the scale, as llama.cpp), then scaled. tanhf, not gpu/cpu's
// double tanh: the warp's sums already differ from the CPU's in order.
//
// A block per (query head, row), ATT_WARPS warps; each warp takes
// ATT_STEP positions at a time (independent loads in flight), keeps an
// online softmax (running max, sum and weighted V), and the warps' states
// are merged at the end. Lanes hold elements lane, lane+32, … of a head:
// HD of them, head_dim ≤ 32·HD. The kernels for heads up to 32·ATT_HD
// hold ATT_HD; the _wide ones, for heads up to 32·ATT_HD_WIDE (Gemma 4's
// global layers' 512), twice as many, in twice the registers and shared
// memory.
#define ATT_WARPS 16
#define ATT_STEP 4
#define ATT_HD 8
#define ATT_HD_WIDE 16

__device__ __forceinline__ float kv_load(const u16* p, long long i) { return h2f(p[i]); }
__device__ __forceinline__ float kv_load(const float* p, long long i) { return p[i]; }

template <typename KV, int HD>
__device__ void attention(float* __restrict__ dst, const float* __restrict__ q, const KV* __restrict__ kc,
                          const KV* __restrict__ vc, const int* __restrict__ meta, int rows, int heads,
                          int kv_heads, int head_dim, int block_size, float scale, float cap, float inv_cap,
                          const float* __restrict__ sinks) {
    __shared__ float s_max[ATT_WARPS], s_sum[ATT_WARPS];
    __shared__ float s_acc[ATT_WARPS][32 * HD];
    int h = blockIdx.x, row = blockIdx.y, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int first = meta[3 * row], n = meta[3 * row + 1];
    if (n <= 0) return;
    const int* blocks = meta + 3 * rows;
    int tab = meta[3 * row + 2];
    int kvh = h / (heads / kv_heads);
    const float* qr = q + ((long long)row * heads + h) * head_dim;
    float qv[HD], acc[HD];
    for (int t = 0; t < HD; t++) {
        int j = lane + 32 * t;
        qv[t] = j < head_dim ? qr[j] : 0.0f;
        acc[t] = 0.0f;
    }
    float mx = NEG_INF, sum = 0.0f;
    for (int p0 = warp * ATT_STEP; p0 < n; p0 += ATT_WARPS * ATT_STEP) {
        long long base[ATT_STEP];
        float s[ATT_STEP];
        for (int u = 0; u < ATT_STEP; u++) {
            int p = first + (p0 + u < n ? p0 + u : n - 1);  // past the end: a valid position, its score dropped
            base[u] = (((long long)blocks[tab + p / block_size] * kv_heads + kvh) * block_size + p % block_size) * head_dim;
            float d = 0.0f;
            for (int t = 0; t < HD; t++) {
                int j = lane + 32 * t;
                if (j < head_dim) d += qv[t] * kv_load(kc, base[u] + j);
            }
            s[u] = d;
        }
        float m = mx;
        for (int u = 0; u < ATT_STEP; u++) {
            float d = warp_sum(s[u]);
            if (cap > 0.0f) d = __fmul_rn(tanhf(__fmul_rn(d, inv_cap)), cap);
            s[u] = p0 + u < n ? __fmul_rn(d, scale) : NEG_INF;
            m = fmaxf(m, s[u]);
        }
        float corr = expf(mx - m);
        sum *= corr;
        for (int t = 0; t < HD; t++) acc[t] *= corr;
        for (int u = 0; u < ATT_STEP; u++) {
            if (p0 + u >= n) break;
            float e = expf(s[u] - m);
            sum += e;
            for (int t = 0; t < HD; t++) {
                int j = lane + 32 * t;
                if (j < head_dim) acc[t] += e * kv_load(vc, base[u] + j);
            }
        }
        mx = m;
    }
    if (lane == 0) {
        s_max[warp] = mx;
        s_sum[warp] = sum;
    }
    for (int t = 0; t < HD; t++) {
        int j = lane + 32 * t;
        if (j < head_dim) s_acc[warp][j] = acc[t];
    }
    __syncthreads();
    if (warp != 0) return;
    float M = s_max[0];
    for (int w = 1; w < ATT_WARPS; w++) M = fmaxf(M, s_max[w]);
    if (sinks) M = fmaxf(M, sinks[h]);
    float L = 0.0f, f[ATT_WARPS];
    for (int w = 0; w < ATT_WARPS; w++) {
        f[w] = s_max[w] == NEG_INF ? 0.0f : expf(s_max[w] - M);  // a warp with no positions adds nothing
        L += s_sum[w] * f[w];
    }
    if (sinks) L += expf(sinks[h] - M);
    float* out = dst + ((long long)row * heads + h) * head_dim;
    for (int j = lane; j < head_dim; j += 32) {
        float o = 0.0f;
        for (int w = 0; w < ATT_WARPS; w++) o += s_acc[w][j] * f[w];
        out[j] = o / L;
    }
}

extern "C" __global__ void __launch_bounds__(512) attention_f16(float* dst, const float* q, const u16* kc, const u16* vc, const int* meta,
                                                                int rows, int heads, int kv_heads, int head_dim, int block_size, float scale,
                                                                float cap, float inv_cap, const float* sinks) {
    attention<u16, ATT_HD>(dst, q, kc, vc, meta, rows, heads, kv_heads, head_dim, block_size, scale, cap, inv_cap, sinks);
}

extern "C" __global__ void __launch_bounds__(512) attention_f32(float* dst, const float* q, const float* kc, const float* vc, const int* meta,
                                                                int rows, int heads, int kv_heads, int head_dim, int block_size, float scale,
                                                                float cap, float inv_cap, const float* sinks) {
    attention<float, ATT_HD>(dst, q, kc, vc, meta, rows, heads, kv_heads, head_dim, block_size, scale, cap, inv_cap, sinks);
}

extern "C" __global__ void __launch_bounds__(512) attention_f16_wide(float* dst, const float* q, const u16* kc, const u16* vc, const int* meta,
                                                                int rows, int heads, int kv_heads, int head_dim, int block_size, float scale,
                                                                float cap, float inv_cap, const float* sinks) {
    attention<u16, ATT_HD_WIDE>(dst, q, kc, vc, meta, rows, heads, kv_heads, head_dim, block_size, scale, cap, inv_cap, sinks);
}

extern "C" __global__ void __launch_bounds__(512) attention_f32_wide(float* dst, const float* q, const float* kc, const float* vc, const int* meta,
                                                                int rows, int heads, int kv_heads, int head_dim, int block_size, float scale,
                                                                float cap, float inv_cap, const float* sinks) {
    attention<float, ATT_HD_WIDE>(dst, q, kc, vc, meta, rows, heads, kv_heads, head_dim, block_size, scale, cap, inv_cap, sinks);
}
