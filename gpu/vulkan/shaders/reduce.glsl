// Workgroup reductions for kernels of GROUP invocations in x (GROUP
// defined before the include): group_sum(v) and group_max(v) return to
// every invocation the sum or maximum of the v of all, and are called by
// every invocation (in uniform control flow).
//
// With SUBGROUPS (the _sg.spv variant, chosen at Open when compute
// shaders have subgroup arithmetic and the subgroup size, 4 or more,
// divides GROUP) each subgroup reduces in registers, its first active
// invocation writes the result, and after one barrier every subgroup
// reduces those partial results again: two barriers a reduction. Without,
// a tree in shared memory: log2(GROUP) + 2 barriers.
#ifdef SUBGROUPS
#extension GL_KHR_shader_subgroup_arithmetic : require

shared float red[GROUP / 4u];

float group_sum(float v) {
    float s = subgroupAdd(v);
    if (subgroupElect()) {
        red[gl_SubgroupID] = s;
    }
    barrier();
    s = 0.0;
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
        s += red[i];
    }
    s = subgroupAdd(s);
    barrier(); // red is free again
    return s;
}

float group_max(float v) {
    float m = subgroupMax(v);
    if (subgroupElect()) {
        red[gl_SubgroupID] = m;
    }
    barrier();
    m = -1.0 / 0.0;
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize) {
        m = max(m, red[i]);
    }
    m = subgroupMax(m);
    barrier();
    return m;
}
#else
shared float red[GROUP];

float group_sum(float v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint h = GROUP / 2u; h > 0u; h >>= 1) {
        if (t < h) {
            red[t] += red[t + h];
        }
        barrier();
    }
    float s = red[0];
    barrier();
    return s;
}

float group_max(float v) {
    uint t = gl_LocalInvocationID.x;
    red[t] = v;
    barrier();
    for (uint h = GROUP / 2u; h > 0u; h >>= 1) {
        if (t < h) {
            red[t] = max(red[t], red[t + h]);
        }
        barrier();
    }
    float m = red[0];
    barrier();
    return m;
}
#endif
