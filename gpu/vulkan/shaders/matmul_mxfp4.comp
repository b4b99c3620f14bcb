#version 450
#extension GL_GOOGLE_include_directive : require
// MatMul of an MXFP4 weight: w's row o is k/32 blocks of 17 bytes from
// byte o·rowBytes (rows and blocks start on any byte, so w is read a
// byte at a time): an E8M0 scale e, then 16 bytes of 4-bit E2M1 codes,
// byte j holding value j in its low nibble and value j+16 in its high
// one. Value j is kvalues[q[j]] · 2^(e-128), kvalues the codes' values
// doubled (ggml's kvalues_mxfp4); an invocation takes one block at a time.
#include "matmul.glsl"

const float kvalues[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);

uint byte_at(uint i) {
    return (w[i >> 2] >> ((i & 3u) * 8u)) & 0xffu;
}

// e8m0_half is 2^(e-128), as models/gguf's E8M0Half: float32 subnormals
// for e < 2.
float e8m0_half(uint e) {
    return uintBitsToFloat(e < 2u ? 0x00200000u << e : (e - 1u) << 23);
}

void dot_rows(uint o, uint r0, uint nr) {
    uint blocks = p.k / 32u;
    uint row = o * p.rowBytes;
    for (uint b = gl_LocalInvocationID.x; b < blocks; b += GROUP) {
        uint base = row + b * 17u;
        float scale = e8m0_half(byte_at(base));
        float q[32];
        for (uint j = 0u; j < 16u; j++) {
            uint v = byte_at(base + 1u + j);
            q[j] = kvalues[v & 0xfu];
            q[j + 16u] = kvalues[v >> 4];
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
