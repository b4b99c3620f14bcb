#version 450
#extension GL_GOOGLE_include_directive : require
// GetRows (Embed, Gather): d[i, c] = t[ids[i], c], dequantized, over n =
// len(ids)·cols values. t's rows are rowBytes apart, of type typ (its
// GGUF id), each decoded as models/gguf's Dequantize decodes it:
//   0 F32; 1 F16;
//   8 Q8_0 (blocks of 34 bytes: an F16 scale and 32 signed bytes);
//   2 Q4_0 (blocks of 18 bytes: an F16 scale and 16 bytes, value m of a
//     block in byte m's low nibble, value m+16 in its high one, less 8);
//   12 Q4_K, 13 Q5_K (super-blocks of 144 and 176 bytes: d and dmin, 12
//     bytes of 6-bit scales and mins, Q5_K's 32 bytes of fifth bits, the
//     nibbles; matmul_q4_k.comp and matmul_q5_k.comp give the layout);
//   14 Q6_K (super-blocks of 210 bytes, matmul_q6_k.comp);
//   39 MXFP4 (blocks of 17 bytes, matmul_mxfp4.comp).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer T { uint t[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform Push { uint n, cols, rowBytes, typ; } p;
#include "index.glsl"

uint half16(uint h) {
    return (t[h >> 1] >> ((h & 1u) * 16u)) & 0xffffu;
}

uint byte_at(uint i) {
    return (t[i >> 2] >> ((i & 3u) * 8u)) & 0xffu;
}

// kquant is value j (< 256) of the Q4_K or Q5_K super-block at byte
// base: sub-block s = j/32 of part j/64, its 6-bit scale and min as
// ggml's get_scale_min_k4.
float kquant(uint base, uint j, bool five) {
    uint s = j / 32u, l = j % 32u;
    uint sc, m;
    if (s < 4u) {
        sc = byte_at(base + 4u + s) & 63u;
        m = byte_at(base + 8u + s) & 63u;
    } else {
        uint hi = byte_at(base + 8u + s);
        sc = (hi & 0xfu) | ((byte_at(base + s) >> 6) << 4);
        m = (hi >> 4) | ((byte_at(base + 4u + s) >> 6) << 4);
    }
    vec2 dm = unpackHalf2x16(t[base / 4u]);
    uint qs = five ? base + 48u : base + 16u;
    uint q = (byte_at(qs + 32u * (j / 64u) + l) >> ((s & 1u) * 4u)) & 0xfu;
    if (five) {
        q |= ((byte_at(base + 16u + l) >> s) & 1u) << 4;
    }
    return dm.x * float(sc) * float(q) - dm.y * float(m);
}

const float kvalues[16] = float[16](0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0);

void main() {
    uint e = elem();
    if (e >= p.n) {
        return;
    }
    uint i = e / p.cols, c = e % p.cols;
    uint row = uint(ids[i]);
    float v;
    if (p.typ == 0u) {
        v = uintBitsToFloat(t[row * (p.rowBytes / 4u) + c]);
    } else if (p.typ == 1u) {
        v = unpackHalf2x16(half16(row * (p.rowBytes / 2u) + c)).x;
    } else if (p.typ == 2u) {
        uint h = row * (p.rowBytes / 2u) + (c / 32u) * 9u;
        uint j = c % 32u, m = j % 16u;
        uint q = half16(h + 1u + m / 2u) >> ((m & 1u) * 8u + (j / 16u) * 4u);
        v = unpackHalf2x16(half16(h)).x * float(int(q & 0xfu) - 8);
    } else if (p.typ == 8u) {
        uint h = row * (p.rowBytes / 2u) + (c / 32u) * 17u;
        uint j = c % 32u;
        uint q = half16(h + 1u + j / 2u) >> ((j & 1u) * 8u);
        v = unpackHalf2x16(half16(h)).x * float(int(q << 24) >> 24);
    } else if (p.typ == 12u) {
        v = kquant(row * p.rowBytes + (c / 256u) * 144u, c % 256u, false);
    } else if (p.typ == 13u) {
        v = kquant(row * p.rowBytes + (c / 256u) * 176u, c % 256u, true);
    } else if (p.typ == 14u) {
        // value 128h+32g+l: low bits from ql[64h+l+32(g&1)] (high nibble
        // for g ≥ 2), high bits 2g, 2g+1 of qh[32h+l], scale 8h+2g+l/16
        uint base = row * p.rowBytes + (c / 256u) * 210u;
        uint j = c % 256u, h = j / 128u, g = (j % 128u) / 32u, l = j % 32u;
        uint lo = byte_at(base + 64u * h + l + 32u * (g & 1u)) >> (g < 2u ? 0u : 4u);
        uint hi = byte_at(base + 128u + 32u * h + l) >> (2u * g);
        int q = int((lo & 0xfu) | ((hi & 3u) << 4)) - 32;
        int sc = int(byte_at(base + 192u + 8u * h + 2u * g + l / 16u) << 24) >> 24;
        v = unpackHalf2x16(half16(base / 2u + 104u)).x * float(sc) * float(q);
    } else {
        // MXFP4: 2^(e-128) as models/gguf's E8M0Half, times the code's value
        uint base = row * p.rowBytes + (c / 32u) * 17u;
        uint j = c % 32u;
        uint ex = byte_at(base);
        float scale = uintBitsToFloat(ex < 2u ? 0x00200000u << ex : (ex - 1u) << 23);
        v = kvalues[(byte_at(base + 1u + j % 16u) >> ((j / 16u) * 4u)) & 0xfu] * scale;
    }
    d[e] = v;
}
