#version 450
#extension GL_GOOGLE_include_directive : require
// MulRow: d[i] = x[i] · w[i mod cols] over total values. d may be x.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint total, cols; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i >= p.total) {
        return;
    }
    d[i] = x[i] * w[i % p.cols];
}
