// ref.h: what the C programs in this folder share: reading one of
// TestMatchesGGML's or TestMXFP4MatchesGGML's input files, and printing a
// SHA-256.
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>

static void *slurp(const char *dir, const char *name, size_t *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) { perror(path); exit(1); }
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(*n);
    if (fread(p, 1, *n, f) != *n) { perror(path); exit(1); }
    fclose(f);
    return p;
}

static void digest(const char *what, const void *p, size_t n) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(p, n, md);
    printf("%s: ", what);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++) printf("%02x", md[i]);
    printf("\n");
}
