// llamatok.c: llama.cpp's tokenization of a vocabulary, for folio's
// tokenizer tests (gemma4_test.go runs it, through llamatok.sh, with -update).
//
//   llamatok VOCAB.gguf TEXTS > OUT.json
//
// TEXTS holds one text a line, hex-encoded, so that any bytes (invalid
// UTF-8 too) reach llama_tokenize as they are. OUT.json holds, for the
// vocabulary: its BOS, EOS, add_bos and add_eos, the ids llama_vocab_is_eog
// accepts, and every token's llama_token_to_piece with and without special
// rendering; for each text: llama_tokenize without and with special-token
// parsing (add_special false), with add_special and parsing, and
// llama_detokenize of the first two (unparse_special false and true).
// Byte strings are hex in the output too.
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *msg) {
    fprintf(stderr, "llamatok: %s\n", msg);
    exit(1);
}

static void quiet(enum ggml_log_level level, const char *text, void *data) {
    (void)data;
    if (level >= GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

static void put_hex(const char *s, int n) {
    putchar('"');
    for (int i = 0; i < n; i++) printf("%02x", (unsigned char)s[i]);
    putchar('"');
}

static void put_ids(const llama_token *ids, int n) {
    putchar('[');
    for (int i = 0; i < n; i++) printf(i ? ",%d" : "%d", ids[i]);
    putchar(']');
}

static int tokenize(const struct llama_vocab *v, const char *text, int len, llama_token *ids, bool add, bool special) {
    int n = llama_tokenize(v, text, len, ids, len + 8, add, special);
    if (n < 0) die("llama_tokenize: more tokens than bytes + 8");
    return n;
}

static void detokenize(const struct llama_vocab *v, const llama_token *ids, int n, bool special) {
    static char buf[1 << 16];
    int k = llama_detokenize(v, ids, n, buf, sizeof buf, false, special);
    if (k < 0) die("llama_detokenize: text too long");
    put_hex(buf, k);
}

static int unhex(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    die("TEXTS: not lower-case hex");
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) die("usage: llamatok VOCAB.gguf TEXTS");
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) die("cannot load the vocabulary");
    const struct llama_vocab *v = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(v);

    printf("{\"bos\":%d,\"eos\":%d,\"add_bos\":%s,\"add_eos\":%s,\n\"eog\":[", llama_vocab_bos(v), llama_vocab_eos(v),
           llama_vocab_get_add_bos(v) ? "true" : "false", llama_vocab_get_add_eos(v) ? "true" : "false");
    for (int id = 0, first = 1; id < n_vocab; id++) {
        if (llama_vocab_is_eog(v, id)) {
            printf(first ? "%d" : ",%d", id);
            first = 0;
        }
    }
    for (int special = 1; special >= 0; special--) {
        printf(special ? "],\n\"pieces\":[" : "],\n\"plain_pieces\":[");
        for (int id = 0; id < n_vocab; id++) {
            char buf[256];
            int k = llama_token_to_piece(v, id, buf, sizeof buf, 0, special);
            if (k < 0) die("llama_token_to_piece: piece too long");
            if (id) putchar(',');
            put_hex(buf, k);
        }
    }
    printf("],\n\"cases\":[");

    FILE *f = fopen(argv[2], "r");
    if (!f) die("cannot open TEXTS");
    static char line[1 << 16], text[1 << 15];
    llama_token *ids = malloc(sizeof(llama_token) * (sizeof text + 8));
    for (int c = 0; fgets(line, sizeof line, f); c++) {
        int len = (int)strcspn(line, "\n");
        if (len % 2 || len / 2 > (int)sizeof text) die("TEXTS: bad line");
        for (int i = 0; i < len / 2; i++) text[i] = (char)(unhex(line[2 * i]) << 4 | unhex(line[2 * i + 1]));
        len /= 2;
        printf(c ? ",\n{\"text\":" : "\n{\"text\":");
        put_hex(text, len);
        int n = tokenize(v, text, len, ids, false, false);
        printf(",\"ids\":");
        put_ids(ids, n);
        printf(",\"decoded\":");
        detokenize(v, ids, n, false);
        n = tokenize(v, text, len, ids, false, true);
        printf(",\"special_ids\":");
        put_ids(ids, n);
        printf(",\"special_decoded\":");
        detokenize(v, ids, n, true);
        n = tokenize(v, text, len, ids, true, true);
        printf(",\"added_ids\":");
        put_ids(ids, n);
        putchar('}');
    }
    printf("]}\n");
    fclose(f);
    free(ids);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
