#version 450
#extension GL_GOOGLE_include_directive : require
// GetRows (Embed, Gather): d[i, c] = t[ids[i], c], dequantized, over n =
// len(ids)·cols values. t's rows are rowBytes apart, of type typ: 0 F32,
// 1 F16, 8 Q8_0 (blocks of 34 bytes: an F16 scale and 32 signed bytes),
// 2 Q4_0 (blocks of 18 bytes: an F16 scale and 16 bytes, value m of a
// block in byte m's low nibble, value m+16 in its high one, less 8).
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer T { uint t[]; };
layout(std430, binding = 1) readonly buffer Ids { int ids[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform Push { uint n, cols, rowBytes, typ; } p;
#include "index.glsl"

uint half16(uint h) {
    return (t[h >> 1] >> ((h & 1u) * 16u)) & 0xffffu;
}

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
    } else {
        uint h = row * (p.rowBytes / 2u) + (c / 32u) * 17u;
        uint j = c % 32u;
        uint q = half16(h + 1u + j / 2u) >> ((j & 1u) * 8u);
        v = unpackHalf2x16(half16(h)).x * float(int(q << 24) >> 24);
    }
    d[e] = v;
}
