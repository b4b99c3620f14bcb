#!/usr/bin/env bash
# llama.cpp's batched decoding on the same file, beside folio's `bench serve`
# ratio: bench/llamacpp/batchbench.c runs 1 and then SEQS sequences at once
# through one llama.cpp context (as llama-server -np SEQS batches them),
# prompts of PROMPT tokens, GEN decode steps, with llama.cpp's libraries from
# ../shared/tools/llamaref. Prints each run's JSON, then the ratios of the
# SEQS-sequence rates to the single sequence's.
# Usage: [RT=1] bench/llamacpp-batch.sh MODEL.gguf [SEQS PROMPT GEN THREADS REPS]
# (defaults 16 64 136 2 3: bench serve's concurrency and mean lengths).
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:?usage: bench/llamacpp-batch.sh MODEL.gguf [SEQS PROMPT GEN THREADS REPS]}
seqs=${2:-16} prompt=${3:-64} gen=${4:-136} threads=${5:-2} reps=${6:-3}
sched=()
[ "${RT:-0}" = 1 ] && sched=(chrt -f 10)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
libdir=$(bench/llamacpp/build.sh bench/llamacpp/batchbench.c "$work/batchbench")
one=$("${sched[@]}" "$work/batchbench" "$libdir" "$model" 1 "$prompt" "$gen" "$threads" "$reps")
many=$("${sched[@]}" "$work/batchbench" "$libdir" "$model" "$seqs" "$prompt" "$gen" "$threads" "$reps")
echo "$one"
echo "$many"
jq -nc --argjson a "$one" --argjson b "$many" \
  '{decode_ratio: ($b.decode_tps / $a.decode_tps), whole_ratio: ($b.whole_tps / $a.whole_tps)}'
