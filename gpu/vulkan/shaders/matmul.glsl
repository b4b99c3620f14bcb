// The frame of the matmul kernels, d[i,o] = x[i,:] · w[o,:] with x [n, k]
// F32, w [m, k] and d [n, m]: a workgroup takes output column o (its
// workgroup index over x and y) for the ROWS rows of x from
// ROWS·gl_WorkGroupID.z. The kernel defines dot_rows(o, r0, nr), which
// returns into acc[r] this invocation's share of the dot products of
// w's row o with x's rows r0 … r0+nr-1; the shares are summed here,
// after one barrier, by invocation r for row r: a tree of barriers costs
// lavapipe (which switches invocations at each) six times as much.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer W { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform Push { uint n, k, m, rowBytes; } p;

#define GROUP 64u
#define ROWS 8

float acc[ROWS];
shared float part[ROWS][GROUP];

// half16 is the 16 bits at 16-bit index h of w.
uint half16(uint h) {
    return (w[h >> 1] >> ((h & 1u) * 16u)) & 0xffffu;
}

void dot_rows(uint o, uint r0, uint nr);

void main() {
    uint o = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (o >= p.m) {
        return;
    }
    uint r0 = gl_WorkGroupID.z * uint(ROWS);
    uint nr = min(uint(ROWS), p.n - r0);
    uint t = gl_LocalInvocationID.x;
    for (int r = 0; r < ROWS; r++) {
        acc[r] = 0.0;
    }
    dot_rows(o, r0, nr);
    for (int r = 0; r < ROWS; r++) {
        part[r][t] = acc[r];
    }
    barrier();
    if (t < nr) {
        float s = 0.0;
        for (uint i = 0u; i < GROUP; i++) {
            s += part[t][i];
        }
        d[(r0 + t) * p.m + o] = s;
    }
}
