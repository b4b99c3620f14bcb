// tokbench: llama.cpp's side of bench/tokenize.sh. Loads a GGUF vocabulary
// (vocab_only) with the llama.cpp libraries that ../shared/tools/llamaref
// installs, tokenizes a text file REPS times with llama_tokenize and prints
// the median throughput as JSON, in the same shape as `go run ./bench/tokbench`.
//
// usage: tokbench LIBDIR MODEL.gguf TEXT REPS [parse_special 0|1]
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

#include "common.h"

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: tokbench LIBDIR MODEL.gguf TEXT REPS [parse_special]\n");
        return 2;
    }
    const char *libdir = argv[1], *model_path = argv[2], *text_path = argv[3];
    int reps = atoi(argv[4]);
    int parse_special = argc > 5 && atoi(argv[5]) != 0;
    if (reps < 1) reps = 1;

    ggml_log_set(quiet, NULL);
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(libdir);
    llama_backend_init();

    FILE *f = fopen(text_path, "rb");
    if (!f) { perror(text_path); return 1; }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc(n + 1);
    if (fread(text, 1, n, f) != (size_t)n) { fprintf(stderr, "short read\n"); return 1; }
    fclose(f);

    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", model_path); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    int32_t cap = (int32_t)n + 16;
    llama_token *tokens = malloc(sizeof(llama_token) * cap);
    double *times = malloc(sizeof(double) * reps);
    int32_t count = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        count = llama_tokenize(vocab, text, (int32_t)n, tokens, cap, false, parse_special);
        times[r] = now() - t0;
        if (count < 0) { fprintf(stderr, "llama_tokenize failed: %d\n", count); return 1; }
    }
    qsort(times, reps, sizeof(double), cmp_double);
    double med = times[reps / 2];
    printf("{\"impl\": \"llama.cpp %s\", \"bytes\": %ld, \"tokens\": %d, \"reps\": %d, "
           "\"median_s\": %.6f, \"mb_per_s\": %.3f}\n",
           llama_version(), n, count, reps, med, n / med / 1e6);
    llama_model_free(model);
    return 0;
}
