// The elementwise and row ops, rounded as gpu/cpu's reference rounds them
// (float32 step by step, a double sum where it sums in float64).

// rms_norm: each run of g elements (blockIdx.x the run) becomes
// x / sqrt(mean(x²) + eps) · w. y may be x: every read precedes the
// reduction's barrier, every write follows it.
extern "C" __global__ void __launch_bounds__(256) rms_norm(const float* x, const float* w, float* y, int g, float eps) {
    const float* xr = x + (long long)blockIdx.x * g;
    float* yr = y + (long long)blockIdx.x * g;
    double s = 0;
    for (int i = threadIdx.x; i < g; i += blockDim.x) s += (double)__fmul_rn(xr[i], xr[i]);
    s = block_sum_d(s);
    float mean = (float)(s / g);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int i = threadIdx.x; i < g; i += blockDim.x) yr[i] = __fmul_rn(__fmul_rn(xr[i], scale), w[i]);
}

// add: y = a + b, b's row 0 for every row when b_rows is 1 (a bias).
extern "C" __global__ void __launch_bounds__(256) add(const float* a, const float* b, float* y, long long n, int cols, int b_rows) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    long long bi = b_rows == 1 ? t % cols : t;
    y[t] = a[t] + b[bi];
}

// silu_mul: y = gate / (1 + e^-gate) · up.
extern "C" __global__ void __launch_bounds__(256) silu_mul(const float* gate, const float* up, float* y, long long n) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float g = gate[t];
    y[t] = __fmul_rn(__fdiv_rn(g, 1.0f + expf(-g)), up[t]);
}

// softmax of each row (blockIdx.x), in place: e^(x - max), summed in
// double, scaled by the float of 1/sum.
extern "C" __global__ void __launch_bounds__(256) softmax(float* x, int cols) {
    float* r = x + (long long)blockIdx.x * cols;
    float m = NEG_INF;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) m = fmaxf(m, r[i]);
    m = block_max(m);
    double s = 0;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        float e = expf(r[i] - m);
        r[i] = e;
        s += (double)e;
    }
    s = block_sum_d(s);
    float inv = (float)(1.0 / s);
    for (int i = threadIdx.x; i < cols; i += blockDim.x) r[i] *= inv;
}

// rope: a thread per (row, head, pair i) of x [rows, cols]. The angle
// follows gpu/cpu: theta = pos · theta_scale^i by i successive float
// multiplications, a = scale · (theta / factor[i]), cos and sin of a in
// double rounded to float, each then multiplied by mscale. Pair i is
// (2i, 2i+1), or (i, i + dims/2) for NeoX.
extern "C" __global__ void __launch_bounds__(256) rope(float* x, const int* pos, const float* factors, int rows, int cols,
                                                       int head_dim, int dims, int neox, float scale, float theta_scale,
                                                       float mscale) {
    int half = dims / 2, heads = cols / head_dim;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)rows * heads * half) return;
    int i = t % half;
    long long rh = t / half;
    int h = rh % heads, row = rh / heads;
    float theta = (float)pos[row];
    for (int j = 0; j < i; j++) theta = __fmul_rn(theta, theta_scale);
    float ff = factors ? factors[i] : 1.0f;
    float a = __fmul_rn(scale, __fdiv_rn(theta, ff));
    float c = __fmul_rn((float)cos((double)a), mscale), s = __fmul_rn((float)sin((double)a), mscale);
    float* hd = x + (long long)row * cols + (long long)h * head_dim;
    int j0 = neox ? i : 2 * i, j1 = neox ? i + half : 2 * i + 1;
    float x0 = hd[j0], x1 = hd[j1];
    hd[j0] = __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s));
    hd[j1] = __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

// scale: y = x · s.
extern "C" __global__ void __launch_bounds__(256) scale(const float* x, float* y, long long n, float s) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    y[t] = __fmul_rn(x[t], s);
}

// softcap: x = c · tanh(x · inv), inv the float 1/c, in place; tanh in
// double rounded to float, as gpu/cpu takes it.
extern "C" __global__ void __launch_bounds__(256) softcap(float* x, long long n, float c, float inv) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    x[t] = __fmul_rn((float)tanh((double)__fmul_rn(x[t], inv)), c);
}

// gelu_f16 is ggml's CPU gelu, which looks the tanh approximation up in a
// table of halves: x rounded to a half, 0.5·x·(1 + tanh(√(2/π)·x·(1 +
// 0.044715·x²))) in float (tanh in double) rounded to a half, for |x| <
// 10; 0 at or below -10, x itself from 10 (and for NaN).
__device__ __forceinline__ float gelu_f16(float x) {
    if (x <= -10.0f) return 0.0f;
    if (!(x < 10.0f)) return x;
    float h = h2f(f2h(x));
    float in = __fmul_rn(__fmul_rn(0.7978845608028654f, h), __fadd_rn(1.0f, __fmul_rn(__fmul_rn(0.044715f, h), h)));
    float g = __fmul_rn(__fmul_rn(0.5f, h), __fadd_rn(1.0f, (float)tanh((double)in)));
    return h2f(f2h(g));
}

// gelu_mul: y = gelu(gate) · up, or gelu(gate) when up is null.
extern "C" __global__ void __launch_bounds__(256) gelu_mul(const float* gate, const float* up, float* y, long long n) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float g = gelu_f16(gate[t]);
    y[t] = up ? __fmul_rn(g, up[t]) : g;
}

// swiglu_oai: y = g / (1 + e^(-alpha·g)) · (u + 1), g = min(gate, limit),
// u = clamp(up, -limit, limit) (gpt-oss's clamped SwiGLU, ggml_swiglu_oai);
// a NaN stays NaN, as through std::min and std::clamp. y may be gate.
extern "C" __global__ void __launch_bounds__(256) swiglu_oai(const float* gate, const float* up, float* y, long long n,
                                                             float alpha, float limit) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    float g = gate[t], u = up[t];
    if (g > limit) g = limit;
    if (u < -limit) u = -limit;
    else if (u > limit) u = limit;
    y[t] = __fmul_rn(__fdiv_rn(g, 1.0f + expf(__fmul_rn(alpha, -g))), u + 1.0f);
}

// sigmoid_mul: y = x · σ(gate), σ(g) = 1 / (1 + e^-g) (Trinity's gated
// attention output, as ggml_sigmoid then ggml_mul). y may be x.
extern "C" __global__ void __launch_bounds__(256) sigmoid_mul(const float* x, const float* gate, float* y, long long n) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    y[t] = __fmul_rn(x[t], __fdiv_rn(1.0f, 1.0f + expf(-gate[t])));
}

// row_centred is the mean of a row of cols elements (its sum in double,
// rounded, over cols as a float quotient) and sets *q to the sum in
// double of the squares of the centred row: layer_norm's and
// sparsify_rows's statistics, as gpu/cpu computes them. Every thread of
// the block calls it.
__device__ float row_centred(const float* xr, int cols, double* q) {
    double s = 0;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) s += (double)xr[i];
    s = block_sum_d(s);
    float mean = __fdiv_rn((float)s, (float)cols);
    double sq = 0;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        float d = __fsub_rn(xr[i], mean);
        sq += (double)__fmul_rn(d, d);
    }
    *q = block_sum_d(sq);
    return mean;
}

// layer_norm: each row of cols elements (blockIdx.x the row) becomes (x -
// mean) / sqrt(var + eps) · w + b, w and b null for 1 and 0: the row
// summed in double and rounded, the mean a float quotient, the squares of
// the centred row summed in double, as gpu/cpu. y may be x: each thread
// reads and writes only its own elements, the writes after both
// reductions.
extern "C" __global__ void __launch_bounds__(256) layer_norm(const float* x, const float* w, const float* b, float* y, int cols,
                                                             float eps) {
    const float* xr = x + (long long)blockIdx.x * cols;
    float* yr = y + (long long)blockIdx.x * cols;
    double q;
    float mean = row_centred(xr, cols, &q);
    float scale = 1.0f / sqrtf(__fadd_rn((float)(q / cols), eps));
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = __fmul_rn(__fsub_rn(xr[i], mean), scale);
        if (w) v = __fmul_rn(v, w[i]);
        if (b) v = __fadd_rn(v, b[i]);
        yr[i] = v;
    }
}

// kv_offset is where element j of head h of slot s lives in a layer's K or
// V: head-major within a block, as gpu/cpu lays it out.
__device__ __forceinline__ long long kv_offset(int s, int h, int j, int kv_heads, int head_dim, int block_size) {
    return (((long long)(s / block_size) * kv_heads + h) * block_size + s % block_size) * head_dim + j;
}

__device__ __forceinline__ void kv_store(u16* p, long long i, float v) { p[i] = f2h(v); }
__device__ __forceinline__ void kv_store(float* p, long long i, float v) { p[i] = v; }

// write_kv: row i of k and v [n, kv_heads·head_dim] into slot slots[i];
// a thread per element.
template <typename KV>
__device__ void write_kv(const float* k, const float* v, const int* slots, KV* kc, KV* vc,
                         int n, int kv_heads, int head_dim, int block_size) {
    int width = kv_heads * head_dim;
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)n * width) return;
    int i = t / width, e = t % width;
    long long at = kv_offset(slots[i], e / head_dim, e % head_dim, kv_heads, head_dim, block_size);
    kv_store(kc, at, k[t]);
    kv_store(vc, at, v[t]);
}

extern "C" __global__ void __launch_bounds__(256) write_kv_f16(const float* k, const float* v, const int* slots, u16* kc, u16* vc,
                                                               int n, int kv_heads, int head_dim, int block_size) {
    write_kv<u16>(k, v, slots, kc, vc, n, kv_heads, head_dim, block_size);
}

extern "C" __global__ void __launch_bounds__(256) write_kv_f32(const float* k, const float* v, const int* slots, float* kc, float* vc,
                                                               int n, int kv_heads, int head_dim, int block_size) {
    write_kv<float>(k, v, slots, kc, vc, n, kv_heads, head_dim, block_size);
}

// mix_rows: y[t] = the fused multiply-adds, in order, over the k ≤ 4
// sources of s_j[t] · (coefs[row·wide + c_j] + bias), plus base[t], over n
// values in rows of cols (gpu.MixRowsHost: Gemma 3n's AltUp streams); the
// sources past k are unread. y may be base or a source.
extern "C" __global__ void __launch_bounds__(256) mix_rows(const float* s0, const float* s1, const float* s2, const float* s3,
                                                           const float* base, const float* coefs, float* y, long long n,
                                                           int cols, int wide, int k, int c0, int c1, int c2, int c3,
                                                           float bias) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const float* c = coefs + (t / cols) * wide;
    float acc = __fmul_rn(s0[t], __fadd_rn(c[c0], bias));
    if (k > 1) acc = __fmaf_rn(s1[t], __fadd_rn(c[c1], bias), acc);
    if (k > 2) acc = __fmaf_rn(s2[t], __fadd_rn(c[c2], bias), acc);
    if (k > 3) acc = __fmaf_rn(s3[t], __fadd_rn(c[c3], bias), acc);
    y[t] = __fadd_rn(acc, base[t]);
}

// match_norm: each row of cols elements (blockIdx.x the row) of y becomes
// x's times the Euclidean norm of tg's row over x's, the squares summed in
// double and rounded, as gpu.MatchNormHost. y may be x: the writes follow
// both reductions.
extern "C" __global__ void __launch_bounds__(256) match_norm(const float* x, const float* tg, float* y, int cols) {
    long long o = (long long)blockIdx.x * cols;
    double sx = 0, st = 0;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = x[o + i], w = tg[o + i];
        sx += (double)__fmul_rn(v, v);
        st += (double)__fmul_rn(w, w);
    }
    sx = block_sum_d(sx);
    st = block_sum_d(st);
    float have = sqrtf((float)sx), want = sqrtf((float)st);
    for (int i = threadIdx.x; i < cols; i += blockDim.x) y[o + i] = __fdiv_rn(__fmul_rn(x[o + i], want), have);
}

// mul_row: y[t] = x[t] · w[t mod cols] over n values. y may be x.
extern "C" __global__ void __launch_bounds__(256) mul_row(const float* x, const float* w, float* y, long long n, int cols) {
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    y[t] = __fmul_rn(x[t], w[t % cols]);
}

// sparsify_rows: each row of cols elements (cols > 1, blockIdx.x the row)
// keeps what exceeds its mean plus mul sample standard deviations, 0
// elsewhere, in place (gpu.SparsifyRowsHost: sums in double, the mean a
// float quotient).
extern "C" __global__ void __launch_bounds__(256) sparsify_rows(float* x, int cols, float mul) {
    float* xr = x + (long long)blockIdx.x * cols;
    double q;
    float mean = row_centred(xr, cols, &q);
    float sd = sqrtf(__fmul_rn((float)q, __fdiv_rn(1.0f, (float)(cols - 1))));
    float cut = __fadd_rn(mean, __fmul_rn(sd, mul));
    for (int i = threadIdx.x; i < cols; i += blockDim.x) xr[i] = fmaxf(__fsub_rn(xr[i], cut), 0.0f);
}
