#!/usr/bin/env bash
# The serving-engine benchmarks of issue 6, with llama.cpp's single-stream
# speed on the same file for scale (../shared/tools/llamaref):
#   - folio bench serve: 256 requests (the default), 16 at a time, ShareGPT's
#     length ratio (prompt 64, output 136 on average), smollm-135m Q8_0
#     (synthetic), also with num_batch 64, with 64 requests (the drain a
#     third of the run), on the F16 file (`dev synth`'s default type), and
#     batched decoding alone;
#   - folio bench multiturn: a 2,000-token history, same model;
#   - folio bench extraction: an 8,000-token document, 20 questions, 4 at a
#     time, on the tiny synthetic model with a 16k context (smollm-135m would
#     take over an hour without the prefix cache on 2 cores);
#   - llamaref cbench: pp512 and tg128 of smollm-135m with 2 threads and 1;
#   - llama.cpp batching 16 sequences against 1 on the same file
#     (bench/llamacpp-batch.sh), the reference for bench serve's ratio.
# Prints the JSON of each, with the load average before each step.
# Usage: [RT=1] bench/engine.sh [WORKDIR]   (20 to 25 minutes on 2 idle
# cores; the extraction without the prefix cache is most of it). RT=1 runs
# folio and llama.cpp under SCHED_FIFO (chrt -f 10, needs root), as
# bench/cpu.sh does: on a VM shared with other work, the single request's
# speed and the batch's otherwise swing by 2x from run to run.
set -euo pipefail
cd "$(dirname "$0")/.."
sched=()
[ "${RT:-0}" = 1 ] && sched=(chrt -f 10)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
llamaref=../shared/tools/llamaref/llamaref
go build -o "$work/folio" .
smollm=$work/smollm-135m-q8_0.gguf
smollm16=$work/smollm-135m-f16.gguf
tiny=$work/tiny-ctx16k-q8_0.gguf
[ -f "$smollm" ] || "$work/folio" dev synth --preset smollm-135m --type q8_0 -o "$smollm"
[ -f "$smollm16" ] || "$work/folio" dev synth --preset smollm-135m -o "$smollm16"
[ -f "$tiny" ] || "$work/folio" dev synth --preset tiny --type q8_0 --ctx 16384 -o "$tiny"

step() { echo "== $1 (load average: $(cut -d' ' -f1-3 /proc/loadavg))"; }
step "folio bench serve, smollm-135m Q8_0, 16 at a time"
"${sched[@]}" "$work/folio" bench serve --model "$smollm" --concurrency 16 --json
step "folio bench serve, same, num_batch 64 (shorter steps: inter-token latency)"
"${sched[@]}" "$work/folio" bench serve --model "$smollm" --concurrency 16 --num-batch 64 --json
step "folio bench serve, same, 64 requests"
"${sched[@]}" "$work/folio" bench serve --model "$smollm" --concurrency 16 --requests 64 --json
step "folio bench serve, smollm-135m F16, 16 at a time"
"${sched[@]}" "$work/folio" bench serve --model "$smollm16" --concurrency 16 --json
step "folio bench serve, batched decoding alone: 16 requests of 4 + 32 tokens at once"
"${sched[@]}" "$work/folio" bench serve --model "$smollm" --concurrency 16 --requests 16 --fixed-lengths --prompt-mean 4 --output-mean 32 --json
step "folio bench multiturn, smollm-135m Q8_0, history 2000"
"${sched[@]}" "$work/folio" bench multiturn --model "$smollm" --history 2000 --json
step "folio bench extraction, tiny (ctx 16k) Q8_0, 8000-token document, 20 questions"
"${sched[@]}" "$work/folio" bench extraction --model "$tiny" --doc-tokens 8000 --questions 20 --concurrency 4 --num-ctx 8192 --json
# On a loaded machine ggml's spinning thread barrier makes 2 threads far
# slower than 1 (tg128 1.6 tok/s against 94): both are printed.
for threads in 2 1; do
  step "llamaref cbench, smollm-135m Q8_0, $threads thread(s)"
  "${sched[@]}" "$llamaref" cbench "$smollm" --threads $threads --pp 512 --tg 128 --reps 3 2>/dev/null |
    jq -c '{pp512_tps: .pp_tokens_per_s, tg128_tps: .tg_tokens_per_s, cpu_backend: .versions.cpu_backend}'
done
step "llama.cpp batched decoding, smollm-135m Q8_0, 16 sequences against 1 (prompt 64, 136 steps)"
RT=${RT:-0} bench/llamacpp-batch.sh "$smollm" 16 64 136 2 3
step "done"
