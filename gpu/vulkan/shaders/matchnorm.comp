#version 450
#extension GL_GOOGLE_include_directive : require
// MatchNorm: row r (cols values) of d becomes x's times the Euclidean norm
// of t's row over x's, one workgroup a row. d may be x.
#define GROUP 256u
#include "reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) buffer T { float tg[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint cols, rows; } p;

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = row * p.cols;
    float sx = 0.0, st = 0.0;
    for (uint i = t; i < p.cols; i += GROUP) {
        float v = x[base + i], w = tg[base + i];
        sx += v * v;
        st += w * w;
    }
    float have = sqrt(group_sum(sx)), want = sqrt(group_sum(st));
    for (uint i = t; i < p.cols; i += GROUP) {
        d[base + i] = x[base + i] * want / have;
    }
}
