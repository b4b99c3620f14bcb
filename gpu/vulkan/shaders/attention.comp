#version 450
#extension GL_GOOGLE_include_directive : require
// Attention: paged attention for one layer, one workgroup a (row, query
// head). Row r reads positions first … last of its sequence (meta[3r+1],
// meta[3r+2]; the host applies the window and direction), each through
// the block table at tables[meta[3r]]: position p's K and V are at slot
// offset p % blockSize of block table[p / blockSize] of K/V head h /
// (heads / kvHeads), laid out as writekv.comp writes them. Scores are
// q·k, soft-capped (c·tanh(s·inv)) when softcap > 0, then scaled; the
// softmax is taken 256 positions at a time with a running maximum (a
// sink's logit starting it and joining the sum), and each invocation
// accumulates output dims t and t+256. headDim ≤ 512.
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer Pool { uint pool[]; };
layout(std430, binding = 2) readonly buffer Meta { int meta[]; };
layout(std430, binding = 3) readonly buffer Tables { int tables[]; };
layout(std430, binding = 4) writeonly buffer D { float d[]; };
layout(std430, binding = 5) readonly buffer Sinks { float sinks[]; };
layout(push_constant) uniform Push {
    uint rows, heads, kvHeads, headDim, blockSize, kBase, layerElems, f16;
    float scale, softcap, inv;
    uint hasSinks;
} p;

shared float qs[512];
shared float sc[256];

// kv is element e of the pool, an F16 pool's halves two a word.
float kv(uint e) {
    if (p.f16 != 0u) {
        return unpackHalf2x16((pool[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu).x;
    }
    return uintBitsToFloat(pool[e]);
}

void main() {
    uint wid = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (wid >= p.rows * p.heads) {
        return;
    }
    uint row = wid / p.heads, h = wid % p.heads, t = gl_LocalInvocationID.x;
    uint kvh = h / (p.heads / p.kvHeads);
    int toff = meta[3u * row], first = meta[3u * row + 1u], last = meta[3u * row + 2u];
    uint hd = p.headDim;
    for (uint i = t; i < hd; i += 256u) {
        qs[i] = q[(row * p.heads + h) * hd + i];
    }
    barrier();
    float m = p.hasSinks != 0u ? sinks[h] : -1.0 / 0.0;
    float l = 0.0, acc0 = 0.0, acc1 = 0.0;
    for (int c0 = first; c0 <= last; c0 += 256) {
        int pos = c0 + int(t);
        float s = -1.0 / 0.0;
        if (pos <= last) {
            uint blk = uint(tables[toff + pos / int(p.blockSize)]);
            uint at = p.kBase + ((blk * p.kvHeads + kvh) * p.blockSize + uint(pos) % p.blockSize) * hd;
            s = 0.0;
            for (uint i = 0u; i < hd; i++) {
                s += qs[i] * kv(at + i);
            }
            if (p.softcap > 0.0) {
                s = tanh(s * p.inv) * p.softcap;
            }
            s *= p.scale;
        }
        sc[t] = s;
        barrier();
        uint cnt = uint(min(256, last - c0 + 1));
        float cm = m;
        for (uint j = 0u; j < cnt; j++) {
            cm = max(cm, sc[j]);
        }
        float corr = exp(m - cm);
        l *= corr;
        acc0 *= corr;
        acc1 *= corr;
        for (uint j = 0u; j < cnt; j++) {
            float e = exp(sc[j] - cm);
            l += e;
            int pj = c0 + int(j);
            uint blk = uint(tables[toff + pj / int(p.blockSize)]);
            uint at = p.kBase + p.layerElems + ((blk * p.kvHeads + kvh) * p.blockSize + uint(pj) % p.blockSize) * hd;
            if (t < hd) {
                acc0 += e * kv(at + t);
            }
            if (t + 256u < hd) {
                acc1 += e * kv(at + t + 256u);
            }
        }
        m = cm;
        barrier();
    }
    if (p.hasSinks != 0u) {
        l += exp(sinks[h] - m);
    }
    float inv_l = l > 0.0 ? 1.0 / l : 0.0;
    uint out_ = (row * p.heads + h) * hd;
    if (t < hd) {
        d[out_ + t] = acc0 * inv_l;
    }
    if (t + 256u < hd) {
        d[out_ + t + 256u] = acc1 * inv_l;
    }
}
