#version 450
// Softmax: row r (cols values) of x becomes e^(x - max) / Σ e^(x - max),
// in place, one workgroup a row.
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform Push { uint cols, rows; } p;

shared float part[256];

void main() {
    uint row = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (row >= p.rows) {
        return;
    }
    uint t = gl_LocalInvocationID.x;
    uint base = row * p.cols;
    float m = -1.0 / 0.0;
    for (uint i = t; i < p.cols; i += 256u) {
        m = max(m, x[base + i]);
    }
    part[t] = m;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1) {
        if (t < h) {
            part[t] = max(part[t], part[t + h]);
        }
        barrier();
    }
    m = part[0];
    barrier();
    float s = 0.0;
    for (uint i = t; i < p.cols; i += 256u) {
        float e = exp(x[base + i] - m);
        x[base + i] = e;
        s += e;
    }
    part[t] = s;
    barrier();
    for (uint h = 128u; h > 0u; h >>= 1) {
        if (t < h) {
            part[t] += part[t + h];
        }
        barrier();
    }
    float inv = 1.0 / part[0];
    for (uint i = t; i < p.cols; i += 256u) {
        x[base + i] *= inv;
    }
}
