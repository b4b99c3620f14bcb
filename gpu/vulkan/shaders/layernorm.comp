#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNorm: row r (cols values) of x becomes (x - mean) / sqrt(var +
// eps) · w + b, one workgroup a row; w is 1 and b 0 when hasW or hasB is
// 0 (the binding is then x, unread). d may be x.
#define GROUP 256u
#include "reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) readonly buffer B { float b[]; };
layout(std430, binding = 3) buffer D { float d[]; };
layout(push_constant) uniform Push { uint cols; float eps; uint rows, hasW, hasB; } p;

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = row * p.cols;
    float s = 0.0;
    for (uint i = t; i < p.cols; i += GROUP) {
        s += x[base + i];
    }
    float mean = group_sum(s) / float(p.cols);
    float sq = 0.0;
    for (uint i = t; i < p.cols; i += GROUP) {
        float c = x[base + i] - mean;
        sq += c * c;
    }
    float scale = 1.0 / sqrt(group_sum(sq) / float(p.cols) + p.eps);
    for (uint i = t; i < p.cols; i += GROUP) {
        float v = (x[base + i] - mean) * scale;
        if (p.hasW != 0u) {
            v *= w[i];
        }
        if (p.hasB != 0u) {
            v += b[i];
        }
        d[base + i] = v;
    }
}
