#version 450
#extension GL_GOOGLE_include_directive : require
// Add: d = a + b, elementwise over n values, b broadcast over rows of
// cols values when brows is 1 (a bias). d may be a.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint n, cols, brows; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i >= p.n) {
        return;
    }
    d[i] = a[i] + b[p.brows == 1u ? i % p.cols : i];
}
