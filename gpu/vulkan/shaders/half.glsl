// round_half is x rounded to the nearest half-precision value, ties to
// even, as models/gguf's F32ToF16 rounds (subnormal halves, infinity past
// 65504): integer steps, since packHalf2x16's rounding is the driver's.
float round_half(float x) {
    uint b = floatBitsToUint(x);
    uint sign = b & 0x80000000u;
    uint a = b & 0x7fffffffu;
    if (a >= 0x7f800000u) {
        return x; // infinity or NaN
    }
    if (a >= 0x477ff000u) {
        return uintBitsToFloat(sign | 0x7f800000u); // rounds past 65504
    }
    if (a < 0x38800000u) { // below the smallest normal half: steps of 2^-24
        float q = uintBitsToFloat(a) * 16777216.0; // exact: a power of two
        return uintBitsToFloat(sign | floatBitsToUint(roundEven(q) / 16777216.0));
    }
    // keep 10 mantissa bits, ties to even
    uint lsb = (a >> 13) & 1u;
    a = (a + 0xfffu + lsb) & ~0x1fffu;
    return uintBitsToFloat(sign | a);
}

// half_bits is x as a half's bits, rounded to the nearest, ties to even,
// as models/gguf's F32ToF16 (subnormal halves; infinity from 65520).
uint half_bits(float x) {
    uint b = floatBitsToUint(x);
    uint sign = (b >> 16) & 0x8000u;
    uint a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return sign | 0x7e00u | ((a >> 13) & 0x3ffu); // NaN stays NaN
    }
    if (a >= 0x477ff000u) {
        return sign | 0x7c00u;
    }
    if (a < 0x38800000u) { // a subnormal half or zero: units of 2^-24
        return sign | uint(roundEven(uintBitsToFloat(a) * 16777216.0));
    }
    a += 0xfffu + ((a >> 13) & 1u);
    return sign | ((a - 0x38000000u) >> 13);
}
