#version 450
#extension GL_GOOGLE_include_directive : require
// SwiGLUOAI: with g = min(gate, limit) and u = clamp(up, -limit, limit),
// d = g / (1 + e^(-alpha·g)) · (u + 1), elementwise over n values; a NaN
// stays NaN. d may be gate.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer G { float g[]; };
layout(std430, binding = 1) readonly buffer U { float u[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint n; float alpha, limit; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i >= p.n) {
        return;
    }
    float gv = g[i];
    if (gv > p.limit) {
        gv = p.limit;
    }
    float uv = u[i];
    if (uv < -p.limit) {
        uv = -p.limit;
    } else if (uv > p.limit) {
        uv = p.limit;
    }
    d[i] = gv / (1.0 + exp(p.alpha * -gv)) * (uv + 1.0);
}
