// iq4.c computes the IQ4_NL and IQ4_XS digests in models/gguf/ggmlref_test.go
// (ggmlRef) with llama.cpp's own kernels, from libggml-base.so: the quant
// digests from quantize_iq4_nl and quantize_iq4_xs (one row, no importance
// matrix: what llama-quantize runs), the dequant ones from
// dequantize_row_iq4_nl and dequantize_row_iq4_xs.
//
// Inputs are the files TestMatchesGGML writes when it runs with
// FOLIO_GGMLREF_DUMP=DIR; then
//
//	L=~/.cache/llamaref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
//	cc -O2 -o /tmp/iq4ref iq4.c -L$L -lggml-base -Wl,-rpath,$L -lcrypto
//	/tmp/iq4ref DIR
#include <math.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

size_t quantize_iq4_nl(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *imatrix);
size_t quantize_iq4_xs(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *imatrix);
void dequantize_row_iq4_nl(const void *x, float *y, int64_t k);
void dequantize_row_iq4_xs(const void *x, float *y, int64_t k);

// run digests one type: block elems in bytes.
static void run(const char *dir, const char *type, int elems, int bytes,
                size_t (*quant)(const float *, void *, int64_t, int64_t, const float *),
                void (*dequant)(const void *, float *, int64_t)) {
    size_t n;
    float *x = slurp(dir, "normal.f32", &n);
    int64_t k = (int64_t)(n / 4);
    size_t qn = (size_t)(k / elems * bytes);
    unsigned char *q = malloc(qn);
    quant(x, q, 1, k, NULL);
    printf("%s ", type);
    digest("quant", q, qn);

    char name[64];
    snprintf(name, sizeof name, "random-%s.q", type);
    unsigned char *r = slurp(dir, name, &n);
    k = (int64_t)(n / bytes * elems);
    float *y = malloc((size_t)k * 4);
    dequant(r, y, k);
    for (int64_t i = 0; i < k; i++)
        if (isnan(y[i])) memcpy(&y[i], &(uint32_t){0x7fc00000}, 4);
    printf("%s ", type);
    digest("dequant", y, (size_t)k * 4);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: iq4ref DIR\n"); return 2; }
    run(argv[1], "IQ4_NL", 32, 18, quantize_iq4_nl, dequantize_row_iq4_nl);
    run(argv[1], "IQ4_XS", 256, 136, quantize_iq4_xs, dequantize_row_iq4_xs);
    return 0;
}
