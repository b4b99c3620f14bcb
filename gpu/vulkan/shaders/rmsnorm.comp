#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm: run r (g values from r·g) of x becomes x / sqrt(mean(x²) + eps)
// · w, one workgroup a run. d may be x.
#define GROUP 256u
#include "reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { float w[]; };
layout(std430, binding = 2) buffer D { float d[]; };
layout(push_constant) uniform Push { uint g; float eps; uint runs; } p;

void main() {
    uint run = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (run >= p.runs) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = run * p.g;
    float s = 0.0;
    for (uint i = t; i < p.g; i += GROUP) {
        float v = x[base + i];
        s += v * v;
    }
    float scale = 1.0 / sqrt(group_sum(s) / float(p.g) + p.eps);
    for (uint i = t; i < p.g; i += GROUP) {
        d[base + i] = x[base + i] * scale * w[i];
    }
}
