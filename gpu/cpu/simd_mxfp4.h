// The code tables of the 4-bit non-linear types, for the packed kernels'
// byte shuffles (simd_packed.c, simd_packed256.h) and NEON's table lookups
// (simd_neon.c): a block's 4-bit codes
// become int8 values, and from there the dot product is Q8_0's on X8P
// activations, as ggml dots both with Q8_0 blocks. The block's scale
// (MXFP4's power of two, IQ4_NL's half, IQ4_XS's d·(scale−32)) is exact
// as a float32 (repack.go), so each block's sum is scaled as ggml scales it.

// The 16 E2M1 codes, doubled (gguf.MXFP4Values; the scale is halved).
#define MXFP4_TABLE 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12
// The 16 IQ4_NL levels (gguf.IQ4NLValues), IQ4_XS's too.
#define IQ4NL_TABLE -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
