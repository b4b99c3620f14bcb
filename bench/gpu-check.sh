#!/usr/bin/env bash
# gpu-check.sh: folio on an NVIDIA GPU, end to end, in under 10 minutes.
#
#   bench/gpu-check.sh            (from the repository root)
#
# It builds folio (or takes $FOLIO_BIN, or a bin/folio built elsewhere and
# carried here), then runs `folio gpu info`, `folio gpu selftest`, makes the
# synthetic llama-1b and llama-8b models in Q4_K with `folio dev synth`,
# runs `folio bench --gpu` on each (prompt 512, gen 128; eagerly, then with
# FOLIO_CUDA_GRAPHS=1) and prints a table
# last: ops passed, prefill and decode tokens/s, and decode's share of the
# 4.8 TB/s HBM ceiling (weight bytes × decode tok/s ÷ 4.8e12).
#
# On a machine without Go (the device machines here), build folio first
# where Go is and carry it: `go build -ldflags='-s -w' -o bin/folio .` (about
# 23 MB) with bin/ listed in .git/info/exclude, then run this script with
# bin/ carried.
#
# No network is used: Go builds offline from the module cache
# (GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local). Every step runs under
# `timeout` within one deadline ($GPU_CHECK_SECONDS, default 570). The
# full output goes to $OUT/gpu-check.log when $OUT is set, with the JSON
# reports beside it. Exit status: 0 when every step passed.
set -uo pipefail

deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-570}))
out=${OUT:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/folio-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
if [ -n "$out" ]; then
	mkdir -p "$out"
	exec > >(tee "$out/gpu-check.log") 2>&1
fi
report=${out:-$work}

failures=()
note() { printf '\n== %s (%ds left)\n' "$*" $((deadline - SECONDS)); }

# run SECONDS NAME CMD...: CMD under a timeout of at most SECONDS, cut to
# what is left of the deadline; a failure is recorded by NAME.
run() {
	local budget=$1 name=$2
	shift 2
	local left=$((deadline - SECONDS))
	if [ "$left" -le 5 ]; then
		echo "skipped: no time left"
		failures+=("$name (no time left)")
		return 1
	fi
	[ "$budget" -gt "$left" ] && budget=$left
	timeout --kill-after=10 "$budget" "$@"
	local rc=$?
	if [ $rc -ne 0 ]; then
		[ $rc -eq 124 ] && echo "timed out after ${budget}s"
		failures+=("$name (exit $rc)")
	fi
	return $rc
}

# --- folio ---------------------------------------------------------------
note "folio binary"
folio=${FOLIO_BIN:-}
if [ -z "$folio" ] && [ -x bin/folio ]; then
	folio=bin/folio
fi
if [ -z "$folio" ]; then
	gobin=$(command -v go || true)
	for g in /usr/local/go/bin/go "$HOME"/go/bin/go "$HOME"/sdk/go*/bin/go /usr/lib/go/bin/go; do
		[ -z "$gobin" ] && [ -x "$g" ] && gobin=$g
	done
	if [ -z "$gobin" ]; then
		echo "gpu-check: no Go toolchain (looked on PATH, /usr/local/go/bin, ~/go/bin, ~/sdk/go*/bin)"
		echo "gpu-check: install Go $(sed -n 's/^go //p' go.mod) or newer, or build folio elsewhere and set FOLIO_BIN"
		exit 2
	fi
	echo "go: $gobin ($("$gobin" version))"
	export GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1
	if ! run 240 "build" "$gobin" build -o "$work/folio" .; then
		echo "gpu-check: go build failed; offline it needs folio's modules in $("$gobin" env GOMODCACHE)"
		echo "gpu-check: (carry the module cache, or build where there is network and set FOLIO_BIN)"
		exit 2
	fi
	folio=$work/folio
fi
echo "folio: $folio ($("$folio" version 2>/dev/null | head -1))"

# --- info and selftest ----------------------------------------------------
note "folio gpu info"
run 30 "gpu info" "$folio" gpu info
command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv

note "folio gpu selftest"
run 150 "selftest" "$folio" gpu selftest >"$work/selftest.txt" 2>&1
cat "$work/selftest.txt"
ops=$(sed -n 's/^ops: \([0-9]* of [0-9]*\) pass$/\1/p' "$work/selftest.txt")
gens=$(grep -c '^generation .*: pass$' "$work/selftest.txt")
genfail=$(grep -c '^generation .*: FAIL$' "$work/selftest.txt")

# --- synthetic models and benchmarks --------------------------------------
declare -A prefill decode share
rows=()
for preset in ${GPU_CHECK_PRESETS:-llama-1b llama-8b}; do
	model=$work/$preset-q4_k.gguf
	budget=90
	[ "$preset" = llama-8b ] && budget=180
	note "folio dev synth $preset q4_k"
	run $budget "synth $preset" "$folio" dev synth --preset "$preset" --type q4_k -o "$model" || continue
	# Each model eagerly, then with decode steps replayed as CUDA graphs.
	for graphs in 0 1; do
		row=$preset
		[ $graphs = 1 ] && row=$preset+graphs
		rows+=("$row")
		note "folio bench --gpu $row"
		json=$report/bench-${row/+/-}.json  # $OUT returns names of letters, digits, . _ - only
		FOLIO_CUDA_GRAPHS=$graphs run 150 "bench $row" "$folio" bench --gpu --model "$model" \
			--prompt 512 --gen 128 --repeat 3 --json >"$json" || continue
		cat "$json"
		num() { sed -n "s/^ *\"$1\": *\([-0-9.e+]*\),*$/\1/p" "$json" | head -1; }
		prefill[$row]=$(num prefill_tps)
		decode[$row]=$(num decode_tps)
		share[$row]=$(num decode_of_ceiling)
	done
	rm -f "$model"
done

# --- table ------------------------------------------------------------------
echo
echo "== gpu-check summary ($SECONDS s)"
printf '%-22s %s\n' "selftest ops passed" "${ops:-none run}"
printf '%-22s %s pass, %s fail\n' "generation checks" "$gens" "$genfail"
printf '%-16s %14s %14s %16s\n' model "prefill tok/s" "decode tok/s" "decode/ceiling"
for row in "${rows[@]}"; do
	if [ -n "${decode[$row]:-}" ]; then
		printf '%-16s %14.1f %14.1f %15.1f%%\n' "$row" "${prefill[$row]}" "${decode[$row]}" \
			"$(awk -v s="${share[$row]}" 'BEGIN { print 100 * s }')"
	else
		printf '%-16s %14s %14s %16s\n' "$row" - - -
	fi
done
if [ ${#failures[@]} -gt 0 ]; then
	printf 'failed: %s\n' "${failures[@]}"
	exit 1
fi
echo "all steps passed"
