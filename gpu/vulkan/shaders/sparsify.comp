#version 450
#extension GL_GOOGLE_include_directive : require
// SparsifyRows: row r (cols values, cols > 1) of x keeps what exceeds its
// mean plus mul sample standard deviations, and 0 elsewhere (Gemma 3n's
// Gaussian top-k), one workgroup a row, in place.
#define GROUP 256u
#include "reduce.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { uint cols, rows; float mul; } p;

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
    float cut = mean + sqrt(group_sum(sq) * (1.0 / float(p.cols - 1u))) * p.mul;
    for (uint i = t; i < p.cols; i += GROUP) {
        x[base + i] = max(x[base + i] - cut, 0.0);
    }
}
