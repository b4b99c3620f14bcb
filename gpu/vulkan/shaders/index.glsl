// elem is this invocation's element when a dispatch of 256-wide
// workgroups spreads over x and y (Backend.grid).
uint elem() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * 256u + gl_LocalInvocationID.x;
}
