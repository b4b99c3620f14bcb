#version 450
#extension GL_GOOGLE_include_directive : require
// SiLUMul: d = silu(g) · u = g / (1 + e^-g) · u, elementwise over n
// values. d may be g.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer G { float g[]; };
layout(std430, binding = 1) readonly buffer U { float u[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint n; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i >= p.n) {
        return;
    }
    float v = g[i];
    d[i] = v / (1.0 + exp(-v)) * u[i];
}
