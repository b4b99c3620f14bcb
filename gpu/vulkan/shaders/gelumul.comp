#version 450
#extension GL_GOOGLE_include_directive : require
// GELUMul: d = gelu(g) · u, or gelu(g) when hasUp is 0 (u is then bound
// to g and unread), elementwise over n values. gelu is ggml's CPU gelu,
// a table of halves: g rounded to a half, 0.5·h·(1 + tanh(√(2/π)·h·(1 +
// 0.044715·h²))) rounded to a half, for |g| < 10; 0 at or below -10, g
// itself from 10 (and for NaN). d may be g.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer G { float g[]; };
layout(std430, binding = 1) readonly buffer U { float u[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint n, hasUp; } p;
#include "index.glsl"
#include "half.glsl"

float gelu(float x) {
    if (x <= -10.0) {
        return 0.0;
    }
    if (!(x < 10.0)) {
        return x;
    }
    float h = round_half(x);
    float in_ = 0.7978845608028654 * h * (1.0 + 0.044715 * h * h);
    return round_half(0.5 * h * (1.0 + tanh(in_)));
}

void main() {
    uint i = elem();
    if (i >= p.n) {
        return;
    }
    float y = gelu(g[i]);
    if (p.hasUp != 0u) {
        y *= u[i];
    }
    d[i] = y;
}
