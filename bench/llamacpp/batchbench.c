// batchbench: llama.cpp's side of folio's `bench serve` ratio. Loads a GGUF
// model with the llama.cpp libraries that ../shared/tools/llamaref installs
// and runs SEQS sequences at once through one context, as llama-server's
// continuous batching does with -np SEQS: all prompts of PROMPT tokens in
// one batch, then GEN steps of one token per sequence in one batch, logits
// for every sequence. Tokens are random ordinary tokens (speed only). The
// run repeats REPS times after a warm-up; the median decode and whole-run
// rates are printed as JSON. Run it with SEQS=1 and SEQS=16 for the ratio.
//
// usage: batchbench LIBDIR MODEL.gguf SEQS PROMPT GEN THREADS REPS [UNIFIED]
// (UNIFIED 1: one K/V buffer for all sequences, llama.cpp's kv_unified;
// default 0, the library's default: a stream per sequence.)
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-backend.h"
#include "llama.h"

#include "common.h"

// next_token is a random token that is neither a control token nor an end
// of generation.
static llama_token next_token(const struct llama_vocab *vocab, uint64_t *state) {
    int32_t n = llama_vocab_n_tokens(vocab);
    for (;;) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        llama_token t = (llama_token)((*state >> 33) % (uint64_t)n);
        if (!llama_vocab_is_control(vocab, t) && !llama_vocab_is_eog(vocab, t))
            return t;
    }
}

static void add(struct llama_batch *b, llama_token t, llama_pos pos, llama_seq_id seq, int logits) {
    int i = b->n_tokens++;
    b->token[i] = t;
    b->pos[i] = pos;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = seq;
    b->logits[i] = (int8_t)logits;
}

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: batchbench LIBDIR MODEL.gguf SEQS PROMPT GEN THREADS REPS [UNIFIED]\n");
        return 2;
    }
    const char *libdir = argv[1], *model_path = argv[2];
    int seqs = atoi(argv[3]), prompt = atoi(argv[4]), gen = atoi(argv[5]), threads = atoi(argv[6]), reps = atoi(argv[7]);
    int unified = argc > 8 && atoi(argv[8]) != 0;
    if (seqs < 1 || prompt < 1 || gen < 1 || threads < 1 || reps < 1) {
        fprintf(stderr, "batchbench: SEQS, PROMPT, GEN, THREADS and REPS must be at least 1\n");
        return 2;
    }

    ggml_log_set(quiet, NULL);
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(libdir);
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(model_path, mp);
    if (!model) { fprintf(stderr, "batchbench: cannot load %s\n", model_path); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);

    int per_seq = prompt + gen + 8;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(seqs * per_seq);
    cp.n_batch = (uint32_t)(seqs * prompt > 512 ? seqs * prompt : 512);
    cp.n_ubatch = 512;
    cp.n_seq_max = (uint32_t)seqs;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.kv_unified = unified;
    cp.no_perf = true;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "batchbench: cannot create a context of %d sequences\n", seqs); return 1; }
    llama_memory_t mem = llama_get_memory(ctx);

    struct llama_batch batch = llama_batch_init(seqs * prompt, 0, 1);
    double *decode_tps = malloc(sizeof(double) * reps), *whole_tps = malloc(sizeof(double) * reps);
    uint64_t state = 42;
    for (int rep = -1; rep < reps; rep++) { // rep -1 warms up
        llama_memory_clear(mem, true);
        double t0 = now();
        batch.n_tokens = 0;
        for (int s = 0; s < seqs; s++)
            for (int p = 0; p < prompt; p++)
                add(&batch, next_token(vocab, &state), p, s, p == prompt - 1);
        // The prompts go in n_batch-token decodes; llama.cpp splits them
        // into n_ubatch pieces.
        if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "batchbench: the prompts failed\n"); return 1; }
        llama_synchronize(ctx);
        double t1 = now();
        for (int i = 0; i < gen; i++) {
            batch.n_tokens = 0;
            for (int s = 0; s < seqs; s++)
                add(&batch, next_token(vocab, &state), prompt + i, s, 1);
            if (llama_decode(ctx, batch) != 0) { fprintf(stderr, "batchbench: step %d failed\n", i); return 1; }
            llama_synchronize(ctx);
        }
        double t2 = now();
        if (rep >= 0) {
            decode_tps[rep] = (double)seqs * gen / (t2 - t1);
            whole_tps[rep] = (double)seqs * gen / (t2 - t0);
        }
    }
    qsort(decode_tps, reps, sizeof(double), cmp_double);
    qsort(whole_tps, reps, sizeof(double), cmp_double);
    printf("{\"impl\": \"llama.cpp %s\", \"seqs\": %d, \"prompt\": %d, \"gen\": %d, \"threads\": %d, \"reps\": %d, "
           "\"kv_unified\": %s, \"decode_tps\": %.2f, \"whole_tps\": %.2f}\n",
           llama_version(), seqs, prompt, gen, threads, reps, unified ? "true" : "false", decode_tps[reps / 2], whole_tps[reps / 2]);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
