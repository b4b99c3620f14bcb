// The frame of the matmul kernels, d[i,o] = x[i,:] · w[o,:] with x [n, k]
// F32, w [m, k] and d [n, m]: a workgroup takes output column o (its
// workgroup index over x and y) for the ROWS rows of x from
// ROWS·gl_WorkGroupID.z. The kernel defines dot_rows(o, r0, nr), which
// returns into acc[r] this invocation's share of the dot products of
// w's row o with x's rows r0 … r0+nr-1; the shares are summed here,
// after one barrier, by invocation r for row r: a tree of barriers costs
// lavapipe (which switches invocations at each) six times as much. With
// SUBGROUPS (the _sg.spv variant, chosen at Open when compute shaders
// have subgroup arithmetic and the subgroup size, 4 or more, divides 64)
// each subgroup first adds its shares with subgroupAdd, and invocation r
// adds the subgroups' sums.
#ifdef SUBGROUPS
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer W { uint w[]; };
layout(std430, binding = 1) readonly buffer X { float x[]; };
layout(std430, binding = 2) writeonly buffer D { float d[]; };
layout(push_constant) uniform Push { uint n, k, m, rowBytes; } p;

#define GROUP 64u
#define ROWS 8

float acc[ROWS];
#ifdef SUBGROUPS
shared float part[ROWS][GROUP / 4u];
#else
shared float part[ROWS][GROUP];
#endif

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
#ifdef SUBGROUPS
    for (uint r = 0u; r < nr; r++) {
        float s = subgroupAdd(acc[r]);
        if (subgroupElect()) {
            part[r][gl_SubgroupID] = s;
        }
    }
    uint shares = gl_NumSubgroups;
#else
    for (int r = 0; r < ROWS; r++) {
        part[r][t] = acc[r];
    }
    uint shares = GROUP;
#endif
    barrier();
    if (t < nr) {
        float s = 0.0;
        for (uint i = 0u; i < shares; i++) {
            s += part[t][i];
        }
        d[(r0 + t) * p.m + o] = s;
    }
}
