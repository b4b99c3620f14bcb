#!/usr/bin/env bash
# CPU backend against llama.cpp (issue 10): for each model, ROUNDS runs of
#   folio bench --model M --threads T --prompt 512 --gen 128 --repeat 3 --vs-llamacpp --json
# (llamaref cbench's rounds on the same file, then folio's, then the read
# bandwidth), one JSON report a line in $OUT, and a table of the medians
# over the runs.
#
#   bench/cpu.sh [MODEL.gguf ...]
#
# Without models it makes the issue's three synthetic ones in $DIR (once;
# llama-1b Q4_K takes a few minutes): smollm-135m Q8_0 and Q4_0, llama-1b
# Q4_K. Environment: THREADS (2), ROUNDS (3), KVTYPES (K/V cache types,
# "f16"; e.g. "f16 q8_0"), DEPTHS (tokens in the cache before each prefill
# and decode, llama-bench's -d: "0"; e.g. "0 2048"), LEVELS (folio's CPU
# levels to run, FOLIO_CPU_LEVEL: default every one from avx2 up that this
# CPU has; bench --vs-llamacpp runs llama.cpp's matching variant at each), DIR (/tmp/folio-bench-cpu),
# OUT ($DIR/results.jsonl), FOLIO (go run .), LLAMAREF
# (../shared/tools/llamaref/llamaref), RT (0; 1 runs both engines under
# SCHED_FIFO, chrt -f 10, which needs root).
#
# RT is for a machine shared with other work: llama.cpp's threads wait for
# each other spinning and yielding, so any other runnable program (even at
# nice 19) stalls every barrier, and it then decodes at a few tokens per
# second; folio's pool falls back to one thread. Under SCHED_FIFO neither
# engine is preempted by ordinary programs (the kernel still keeps 5% of
# each second for them), and a run takes seconds.
#
# Needs jq. On a machine shared with other work, runs differ a lot: use
# several rounds, and compare folio and llama.cpp within one run only. Each
# report gets the 1-minute load average before its run (loadavg).
set -euo pipefail
cd "$(dirname "$0")/.."

threads=${THREADS:-2}
sched=()
[ "${RT:-0}" = 1 ] && sched=(chrt -f 10)
rounds=${ROUNDS:-3}
kvtypes=${KVTYPES:-f16}
depths=${DEPTHS:-0}
dir=${DIR:-/tmp/folio-bench-cpu}
out=${OUT:-$dir/results.jsonl}
llamaref=${LLAMAREF:-$PWD/../shared/tools/llamaref/llamaref}
mkdir -p "$dir"
if [ -n "${FOLIO:-}" ]; then
	folio=$FOLIO
else
	go build -o "$dir/folio" .
	folio=$dir/folio
fi

models=("$@")
if [ ${#models[@]} -eq 0 ]; then
	for spec in smollm-135m:q8_0 smollm-135m:q4_0 llama-1b:q4_k; do
		preset=${spec%:*} type=${spec#*:}
		f=$dir/$preset-$type.gguf
		[ -f "$f" ] || "$folio" dev synth --preset "$preset" --type "$type" -o "$f" >&2
		models+=("$f")
	done
fi

levels=${LEVELS:-}
if [ -z "$levels" ]; then
	for l in avx2 avxvnni avx512 avx512bf16 amx neon; do
		FOLIO_CPU_LEVEL=$l "$folio" version >/dev/null 2>&1 && levels="$levels $l"
	done
	[ -n "$levels" ] || levels=scalar
fi
echo "levels:$levels" >&2

: >"$out"
for r in $(seq "$rounds"); do
	for level in $levels; do
		for m in "${models[@]}"; do
			for kv in $kvtypes; do
				for depth in $depths; do
					load=$(cut -d' ' -f1 /proc/loadavg)
					echo "round $r: $m, $level, $kv K/V, depth $depth (load $load)" >&2
					FOLIO_CPU_LEVEL=$level "${sched[@]}" "$folio" bench --model "$m" --threads "$threads" --prompt 512 --gen 128 --repeat 3 \
						--kv-type "$kv" --depth "$depth" --vs-llamacpp --llamaref "$llamaref" --json |
						jq -c --argjson load "$load" '. + {loadavg: $load}' >>"$out"
				done
			done
		done
	done
done

printf '%-52s %9s %9s %7s %9s %9s %7s %8s %7s %5s\n' model prefill llama ratio decode llama ratio 'GB/s' ceiling load
jq -s -r 'group_by([.model, .simd, .kv_type, .depth])[] |
	def med: sort | if length % 2 == 1 then .[length/2|floor] else (.[length/2-1] + .[length/2]) / 2 end;
	[(.[0].model | split("/") | last) + " " + .[0].simd + " " + (.[0].llamacpp.cpu_backend // "" | ltrimstr("libggml-cpu-") | rtrimstr(".so")) + " " + (.[0].kv_type // "f16") + " d" + (.[0].depth // 0 | tostring),
	 (map(.prefill_tps) | med), (map(.llamacpp.prefill_tps) | med), (map(.prefill_ratio) | med),
	 (map(.decode_tps) | med), (map(.llamacpp.decode_tps) | med), (map(.decode_ratio) | med),
	 (map(.bandwidth_gbs) | med), (map(.decode_of_ceiling * 100) | med), (map(.loadavg // 0) | med)] |
	@tsv' "$out" |
	awk -F'\t' '{printf "%-52s %9.1f %9.1f %6.2fx %9.1f %9.1f %6.2fx %8.1f %6.0f%% %5.1f\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10}'
echo "(medians over $rounds runs; reports in $out)"
