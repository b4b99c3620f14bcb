#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax: row r (cols values) of x becomes e^(x - max) / Σ e^(x - max),
// in place, one workgroup a row.
#define GROUP 256u
#include "reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { uint cols, rows; } p;

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = row * p.cols;
    float m = -1.0 / 0.0;
    for (uint i = t; i < p.cols; i += GROUP) {
        m = max(m, x[base + i]);
    }
    m = group_max(m);
    float s = 0.0;
    for (uint i = t; i < p.cols; i += GROUP) {
        float e = exp(x[base + i] - m);
        x[base + i] = e;
        s += e;
    }
    float inv = 1.0 / group_sum(s);
    for (uint i = t; i < p.cols; i += GROUP) {
        x[base + i] *= inv;
    }
}
