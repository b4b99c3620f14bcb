#version 450
#extension GL_GOOGLE_include_directive : require
// MatMul of a Q5_K weight: w's row o is k/256 super-blocks of 176 bytes
// (44 words) from byte o·rowBytes: d and dmin (F16) in word 0, 8 6-bit
// scales and mins packed in 12 bytes (words 1-3, as Q4_K's), 32 bytes of
// fifth bits qh (words 4-11), then 128 bytes of 4-bit quants (words
// 12-43). Part p (0-3) of a super-block is its 64 values from 64p: value
// 64p+l is the low nibble of quant byte 32p+l plus 16 if bit 2p of qh[l]
// is set, scaled by sub-block 2p's d·scale less its dmin·min, and value
// 64p+32+l its high nibble plus 16 for bit 2p+1, of sub-block 2p+1. An
// invocation takes one part at a time.
#include "matmul.glsl"

uint sbyte(uint base, uint i) {
    return (w[base + 1u + i / 4u] >> ((i % 4u) * 8u)) & 0xffu;
}

// scale_min is sub-block j's 6-bit scale and min.
uvec2 scale_min(uint base, uint j) {
    if (j < 4u) {
        return uvec2(sbyte(base, j) & 63u, sbyte(base, j + 4u) & 63u);
    }
    uint hi = sbyte(base, j + 4u);
    return uvec2((hi & 0xfu) | ((sbyte(base, j - 4u) >> 6) << 4), (hi >> 4) | ((sbyte(base, j) >> 6) << 4));
}

void dot_rows(uint o, uint r0, uint nr) {
    uint parts = p.k / 64u;
    uint row = o * (p.rowBytes / 4u);
    for (uint u = gl_LocalInvocationID.x; u < parts; u += GROUP) {
        uint b = u / 4u, part = u % 4u;
        uint base = row + b * 44u;
        vec2 dm = unpackHalf2x16(w[base]);
        uvec2 sm1 = scale_min(base, 2u * part), sm2 = scale_min(base, 2u * part + 1u);
        float d1 = dm.x * float(sm1.x), min1 = dm.y * float(sm1.y);
        float d2 = dm.x * float(sm2.x), min2 = dm.y * float(sm2.y);
        uint qw = base + 12u + 8u * part;
        float ql[32], qu[32];
        for (uint l = 0u; l < 32u; l++) {
            uint sh = (l % 4u) * 8u;
            uint q = (w[qw + l / 4u] >> sh) & 0xffu;
            uint h = (w[base + 4u + l / 4u] >> (sh + 2u * part)) & 3u;
            ql[l] = float((q & 0xfu) | ((h & 1u) << 4));
            qu[l] = float((q >> 4) | ((h >> 1) << 4));
        }
        for (uint r = 0u; r < nr; r++) {
            uint xb = (r0 + r) * p.k + b * 256u + part * 64u;
            float lo = 0.0, hi = 0.0, xlo = 0.0, xhi = 0.0;
            for (uint l = 0u; l < 32u; l++) {
                float a = x[xb + l], c = x[xb + 32u + l];
                lo += ql[l] * a;
                hi += qu[l] * c;
                xlo += a;
                xhi += c;
            }
            acc[r] += d1 * lo - min1 * xlo + d2 * hi - min2 * xhi;
        }
    }
}
