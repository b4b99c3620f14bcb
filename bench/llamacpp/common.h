// Helpers shared by the llama.cpp benchmark programs of this folder, which
// define _POSIX_C_SOURCE 199309L before any header (clock_gettime).
#ifndef FOLIO_BENCH_LLAMACPP_COMMON_H
#define FOLIO_BENCH_LLAMACPP_COMMON_H

#include <time.h>

#include "ggml.h"

// quiet is a log callback that drops llama.cpp's and ggml's messages.
static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level; (void)text; (void)user;
}

// now is a monotonic clock in seconds.
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// cmp_double orders doubles for qsort.
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
