#version 450
#extension GL_GOOGLE_include_directive : require
// Softcap: x = c · tanh(x · inv), inv the float 1/c, in place over n values.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { uint n; float c, inv; } p;
#include "index.glsl"

void main() {
    uint i = elem();
    if (i < p.n) {
        x[i] = tanh(x[i] * p.inv) * p.c;
    }
}
