#!/usr/bin/env bash
# llamatok.sh VOCAB.gguf TEXTS - compile llamatok.c against the llama.cpp
# libraries of llamaref's install ($LLAMAREF_HOME, default
# $HOME/.cache/llamaref; any llamaref call installs them) and run it,
# printing its JSON. gemma4_test.go runs it with -update:
#
#   go test ./models/tokenizer -run TestGemma4MatchesLlamaCpp -update
set -euo pipefail
fail() { printf 'llamatok.sh: %s\n' "$*" >&2; exit 1; }
[ $# -eq 2 ] || fail "usage: llamatok.sh VOCAB.gguf TEXTS"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=${LLAMAREF_HOME:-$HOME/.cache/llamaref}
LIBDIR=$DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
LIBLLAMA=$(cd "$LIBDIR" 2>/dev/null && ls libllama.v*.so | head -n 1) || true
LIBGGML=$(cd "$LIBDIR" 2>/dev/null && ls libggml.v*.so | head -n 1) || true
[ -n "$LIBLLAMA" ] && [ -n "$LIBGGML" ] && [ -d "$DIR/include" ] ||
    fail "no llama.cpp libraries and headers in $DIR: run ../shared/tools/llamaref/llamaref install"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"${CC:-cc}" -O2 -std=c11 -Wall -Wextra -o "$TMP/llamatok" "$HERE/llamatok.c" -I"$DIR/include" \
    -L"$LIBDIR" -l:"$LIBLLAMA" -l:"$LIBGGML" -l:libggml-base.so -Wl,-rpath,"$LIBDIR"
"$TMP/llamatok" "$1" "$2"
