// mxfp4.c computes the digests in models/gguf/mxfp4_test.go (mxfp4Ref)
// with llama.cpp's own MXFP4 kernels, from libggml-base.so.
//
// Inputs are the files TestMXFP4MatchesGGML's data writes when the test
// runs with FOLIO_MXFP4_DUMP=DIR; then
//
//	L=~/.cache/llamaref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
//	cc -O2 -o /tmp/mxfp4ref mxfp4.c -L$L -lggml-base -Wl,-rpath,$L -lcrypto
//	/tmp/mxfp4ref DIR
#include <math.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

void quantize_row_mxfp4_ref(const float *x, void *y, int64_t k);
void dequantize_row_mxfp4(const void *x, float *y, int64_t k);

static void quant(const char *dir, const char *name) {
    size_t n;
    float *x = slurp(dir, name, &n);
    int64_t k = (int64_t)(n / 4);
    size_t out = (size_t)k / 32 * 17;
    unsigned char *q = malloc(out);
    quantize_row_mxfp4_ref(x, q, k);
    digest(name, q, out);
}

static void dequant(const char *dir, const char *name) {
    size_t n;
    unsigned char *q = slurp(dir, name, &n);
    int64_t k = (int64_t)(n / 17 * 32);
    float *y = malloc((size_t)k * 4);
    dequantize_row_mxfp4(q, y, k);
    for (int64_t i = 0; i < k; i++)
        if (isnan(y[i])) memcpy(&y[i], &(uint32_t){0x7fc00000}, 4);
    digest(name, y, (size_t)k * 4);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: mxfp4ref DIR\n"); return 2; }
    quant(argv[1], "normal.f32");
    quant(argv[1], "edge.f32");
    dequant(argv[1], "random.q");
    dequant(argv[1], "all.q");
    return 0;
}
