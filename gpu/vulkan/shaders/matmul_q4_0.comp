#version 450
#extension GL_GOOGLE_include_directive : require
// MatMul of a Q4_0 weight: w's row o is k/32 blocks of 18 bytes from byte
// o·rowBytes, each an F16 scale and 16 bytes of 4-bit quants: byte m
// holds value m in its low nibble and value m+16 in its high one, and
// value j is scale · (q[j] - 8). A block starts on an even byte, so it
// is read as 9 halves: the scale, then the quants two bytes at a time.
#include "matmul.glsl"

void dot_rows(uint o, uint r0, uint nr) {
    uint blocks = p.k / 32u;
    uint row = o * (p.rowBytes / 2u);
    for (uint b = gl_LocalInvocationID.x; b < blocks; b += GROUP) {
        uint h = row + b * 9u;
        float scale = unpackHalf2x16(half16(h)).x;
        float q[32];
        for (uint j = 0u; j < 8u; j++) {
            uint v = half16(h + 1u + j); // bytes 2j and 2j+1
            q[2u * j] = float(int(v & 0xfu) - 8);
            q[2u * j + 16u] = float(int((v >> 4) & 0xfu) - 8);
            q[2u * j + 1u] = float(int((v >> 8) & 0xfu) - 8);
            q[2u * j + 17u] = float(int((v >> 12) & 0xfu) - 8);
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
