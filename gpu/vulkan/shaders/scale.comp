#version 450
#extension GL_GOOGLE_include_directive : require
// Scale: d = x · s, elementwise over n values. d may be x.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) buffer D { float d[]; };
layout(push_constant) uniform Push { uint n; float s; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i < p.n) {
        d[i] = x[i] * p.s;
    }
}
