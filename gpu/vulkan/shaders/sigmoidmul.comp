#version 450
#extension GL_GOOGLE_include_directive : require
// SigmoidMul: d = x · σ(g), σ(g) = 1 / (1 + e^-g), elementwise over n
// values (Trinity's gated attention output). d may be x.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint n; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i >= p.n) {
        return;
    }
    d[i] = x[i] * (1.0 / (1.0 + exp(-g[i])));
}
