#version 450
#extension GL_GOOGLE_include_directive : require
// MatMul of a Q6_K weight: w's row o is k/256 super-blocks of 210 bytes
// from byte o·rowBytes: ql (128 bytes of low 4 bits), qh (64 bytes of
// high 2 bits), 16 int8 scales, then d (F16) at byte 208. Value
// 128h+32g+l (h < 2, g < 4, l < 32) takes its low bits from ql byte
// 64h+l+32(g&1) (low nibble for g < 2, high for g ≥ 2) and its high bits
// from bits 2g, 2g+1 of qh byte 32h+l; it is d · scales[8h+2g+l/16] ·
// (q - 32). Blocks start on even bytes and are read as halves; an
// invocation takes one run of 32 values (h, g) at a time.
#include "matmul.glsl"

uint byte_at(uint hb, uint i) {
    return (half16(hb + i / 2u) >> ((i & 1u) * 8u)) & 0xffu;
}

void dot_rows(uint o, uint r0, uint nr) {
    uint runs = p.k / 32u;
    uint row = o * (p.rowBytes / 2u);
    for (uint u = gl_LocalInvocationID.x; u < runs; u += GROUP) {
        uint b = u / 8u, h = (u % 8u) / 4u, g = u % 4u;
        uint hb = row + b * 105u;
        float d = unpackHalf2x16(half16(hb + 104u)).x;
        float sc0 = float(int(byte_at(hb, 192u + 8u * h + 2u * g) << 24) >> 24);
        float sc1 = float(int(byte_at(hb, 193u + 8u * h + 2u * g) << 24) >> 24);
        float q[32];
        for (uint l = 0u; l < 32u; l++) {
            uint lo = byte_at(hb, 64u * h + l + 32u * (g & 1u)) >> (g < 2u ? 0u : 4u);
            uint hi = byte_at(hb, 128u + 32u * h + l) >> (2u * g);
            q[l] = float(int((lo & 0xfu) | ((hi & 3u) << 4)) - 32);
        }
        for (uint r = 0u; r < nr; r++) {
            uint xb = (r0 + r) * p.k + b * 256u + h * 128u + g * 32u;
            float s0 = 0.0, s1 = 0.0;
            for (uint l = 0u; l < 16u; l++) {
                s0 += q[l] * x[xb + l];
                s1 += q[l + 16u] * x[xb + 16u + l];
            }
            acc[r] += d * (sc0 * s0 + sc1 * s1);
        }
    }
}
