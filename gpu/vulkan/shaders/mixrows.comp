#version 450
#extension GL_GOOGLE_include_directive : require
// MixRows: d[i] = the sum over the k ≤ 4 sources s_j of (coefs[row·wide +
// c_j] + bias) · s_j[i], taken in order by fused multiply-adds, plus
// base[i], over total values in rows of n (Gemma 3n's AltUp streams). The
// sources past k are bound to base and unread. d may be base or a source.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer S0 { float s0[]; };
layout(std430, binding = 1) buffer S1 { float s1[]; };
layout(std430, binding = 2) buffer S2 { float s2[]; };
layout(std430, binding = 3) buffer S3 { float s3[]; };
layout(std430, binding = 4) buffer Base { float base[]; };
layout(std430, binding = 5) readonly buffer C { float coefs[]; };
layout(std430, binding = 6) buffer D { float d[]; };
layout(push_constant) uniform Push { uint total, n, wide, k, c0, c1, c2, c3; float bias; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i >= p.total) {
        return;
    }
    uint r = (i / p.n) * p.wide;
    float acc = s0[i] * (coefs[r + p.c0] + p.bias);
    if (p.k > 1u) {
        acc = fma(s1[i], coefs[r + p.c1] + p.bias, acc);
    }
    if (p.k > 2u) {
        acc = fma(s2[i], coefs[r + p.c2] + p.bias, acc);
    }
    if (p.k > 3u) {
        acc = fma(s3[i], coefs[r + p.c3] + p.bias, acc);
    }
    d[i] = acc + base[i];
}
