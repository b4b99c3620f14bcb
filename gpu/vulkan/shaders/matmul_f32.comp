#version 450
#extension GL_GOOGLE_include_directive : require
// MatMul of an F32 weight: w's row o is k floats from o·k.
#include "matmul.glsl"

void dot_rows(uint o, uint r0, uint nr) {
    uint base = o * p.k;
    for (uint i = gl_LocalInvocationID.x; i < p.k; i += GROUP) {
        float wv = uintBitsToFloat(w[base + i]);
        for (uint r = 0u; r < nr; r++) {
            acc[r] += wv * x[(r0 + r) * p.k + i];
        }
    }
}
