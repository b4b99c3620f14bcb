#version 450
#extension GL_GOOGLE_include_directive : require
// WriteKV: row i of k and v (width = kvHeads·headDim values each) goes to
// slot slots[i] of one layer's K and V in the pool: element c of the row
// (head c / headDim, d = c % headDim) of the slot at offset o of block B
// is pool element ((B·kvHeads + head)·blockSize + o)·headDim + d from
// kBase (K) or kBase + layerElems (V). An F16 pool (f16 = 1) packs two
// halves a word, and an invocation writes a pair (headDim is even); an
// F32 pool holds float bits, an invocation a value.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer K { float k[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer Slots { int slots[]; };
layout(std430, binding = 3) buffer Pool { uint pool[]; };
layout(push_constant) uniform Push { uint n, width, blockSize, headDim, kBase, layerElems, f16; } p;
#include "index.glsl"
#include "half.glsl"

void main() {
    uint e = elem();
    if (e >= p.n) {
        return;
    }
    uint per = p.f16 != 0u ? p.width / 2u : p.width; // invocations a row
    uint i = e / per, c = (e % per) * (p.f16 != 0u ? 2u : 1u);
    uint s = uint(slots[i]);
    uint blk = s / p.blockSize, o = s % p.blockSize;
    uint kvHeads = p.width / p.headDim;
    uint at = ((blk * kvHeads + c / p.headDim) * p.blockSize + o) * p.headDim + c % p.headDim;
    uint ki = p.kBase + at, vi = ki + p.layerElems;
    uint src = i * p.width + c;
    if (p.f16 != 0u) {
        pool[ki / 2u] = half_bits(k[src]) | (half_bits(k[src + 1u]) << 16);
        pool[vi / 2u] = half_bits(v[src]) | (half_bits(v[src + 1u]) << 16);
    } else {
        pool[ki] = floatBitsToUint(k[src]);
        pool[vi] = floatBitsToUint(v[src]);
    }
}
