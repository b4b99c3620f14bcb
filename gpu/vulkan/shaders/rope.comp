#version 450
#extension GL_GOOGLE_include_directive : require
// Rope: rotates, in place, pair i of each head of row r of x (cols values
// a row, heads of headDim) by the angle whose cos and sin are cs[r·dims +
// 2i] and cs[r·dims + 2i + 1] (computed on the host: gpu.Rope.Angles).
// Pair i is elements (2i, 2i+1) of the head, or (i, i + dims/2) with
// neox. One invocation a pair, n = rows · heads · dims/2 of them. Each
// product is rounded before the sum (precise), as gpu/cpu computes it.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer CS { float cs[]; };
layout(push_constant) uniform Push { uint n, cols, headDim, dims, neox; } p;
#include "index.glsl"

void main() {
    uint e = elem();
    if (e >= p.n) {
        return;
    }
    uint half_ = p.dims / 2u;
    uint heads = p.cols / p.headDim;
    uint i = e % half_;
    uint rh = e / half_;
    uint row = rh / heads, head = rh % heads;
    uint base = row * p.cols + head * p.headDim;
    uint j = p.neox != 0u ? base + i : base + 2u * i;
    uint k = p.neox != 0u ? j + half_ : j + 1u;
    float c = cs[row * p.dims + 2u * i], s = cs[row * p.dims + 2u * i + 1u];
    float x0 = x[j], x1 = x[k];
    precise float a = x0 * c;
    precise float b = x1 * s;
    precise float d = x0 * s;
    precise float f = x1 * c;
    x[j] = a - b;
    x[k] = d + f;
}
