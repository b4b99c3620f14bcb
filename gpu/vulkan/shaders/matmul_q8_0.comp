#version 450
#extension GL_GOOGLE_include_directive : require
// MatMul of a Q8_0 weight: w's row o is k/32 blocks of 34 bytes from
// byte o·rowBytes, each an F16 scale and 32 signed bytes; value j of a
// block is scale · q[j]. A block starts on an even byte, so it is read
// as 17 halves: the scale, then the quants two by two.
#include "matmul.glsl"

void dot_rows(uint o, uint r0, uint nr) {
    uint blocks = p.k / 32u;
    uint row = o * (p.rowBytes / 2u);
    for (uint b = gl_LocalInvocationID.x; b < blocks; b += GROUP) {
        uint h = row + b * 17u;
        float scale = unpackHalf2x16(half16(h)).x;
        float q[32];
        for (uint j = 0u; j < 16u; j++) {
            uint v = half16(h + 1u + j);
            q[2u * j] = float(int(v << 24) >> 24);
            q[2u * j + 1u] = float(int(v << 16) >> 24);
        }
        for (uint r = 0u; r < nr; r++) {
            uint xb = (r0 + r) * p.k + b * 32u;
            float s = 0.0;
            for (uint j = 0u; j < 32u; j++) {
                s += q[j] * x[xb + j];
            }
            acc[r] += scale * s;
        }
    }
}
