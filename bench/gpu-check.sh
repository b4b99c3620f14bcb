#!/usr/bin/env bash
# gpu-check.sh: folio on an NVIDIA GPU, end to end, in one command of at
# most 540 seconds: a GPU session's one shot.
#
# 1. Here, where Go is (never on the GPU machine, which has no Go and no
#    network; this script refuses to run without the binaries):
#
#      bench/gpu-build.sh
#
#    which builds bin/folio (CGO_ENABLED=1 go build -trimpath -ldflags='-s -w'
#    -o bin/folio .) and bin/cuda.test (go test -c of ./gpu/cuda), about 30 MB.
#    bin/ is ignored by git, so the device call must carry it.
# 2. Check the plumbing here, on the CPU: bench/gpu-check.sh --dry-run
# 3. One device call (device time is counted from the machine's start: the
#    script's 540 s plus a minute or two to start and copy):
#
#      run  command: bench/gpu-check.sh   carry: ["bin"]   timeout_s: 600
#
# What it runs, in order, each step under `timeout -s QUIT` (a hang dumps
# every goroutine, GOTRACEBACK=all) within one deadline:
#   - the synthetic llama-1b and llama-8b models in Q4_K, written by
#     `folio dev synth` in the background from the start (niced);
#   - folio gpu preflight (the first failure named: libraries, NVRTC log,
#     kernel attributes, a launch of every kernel, cuBLAS, a graph);
#   - folio gpu selftest (every op against the CPU, greedy generations);
#   - the Vulkan backend, where a Vulkan loader and device are (the NVIDIA
#     driver's ICD; lavapipe in a dry run): folio gpu selftest --vulkan and
#     folio bench --gpu=vulkan on the first preset, after its CUDA benches;
#   - folio bench --gpu on 1B eagerly, 1B with FOLIO_CUDA_GRAPHS=1, 8B
#     eagerly, 8B with graphs (prompt 512, gen 128, 3 rounds); a bench that
#     fails is run once more with FOLIO_CUDA_SYNC=1 and a short generation,
#     so that the log names the failing kernel;
#   - with time left (90 s or more), compute-sanitizer --tool memcheck over
#     bin/cuda.test's GPU tests (preflight, every op, a generation).
# FOLIO_HOME is a temporary folder beside the results (not in them), so
# the kernels NVRTC compiles in preflight are reused by every later step.
#
# Results, in $OUT (or a new /tmp/folio-gpu-check-out.* without it), at most
# 8 files as the device tool returns them: gpu-check.log (everything, the
# summary table last), summary.txt (the table alone), bench-ROW.json (one
# per bench: tok/s, and whether cuBLAS and graphs actually ran: blas_calls,
# graph_steps), memcheck.log, gpu-checks.json (gpu/vet's first-run check of
# the device, made by the first bench's load). Exit status 0 when every step
# passed.
#
# --dry-run runs every step here on the CPU (FOLIO_GPU=cpu): the tiny and
# smollm-135m presets in place of 1B and 8B, prompt 32, gen 8, one round,
# bench without --gpu, and preflight and selftest expected to say that
# there is no driver; cuda.test runs without compute-sanitizer. It checks the
# binaries, the steps, the files and the deadline, not the GPU.
#
# Knobs: GPU_CHECK_SECONDS (deadline, default 540), GPU_CHECK_PRESETS
# (default "llama-1b llama-8b"), GPU_CHECK_BREAK=ROW (make ROW's first bench
# fail, to see the rerun: e.g. "tiny+graphs" in a dry run).
set -uo pipefail

dry=0
case "${1:-}" in
--dry-run) dry=1 ;;
"") ;;
*)
	echo "usage: bench/gpu-check.sh [--dry-run]" >&2
	exit 2
	;;
esac
cd "$(dirname "$0")/.." || exit 2

folio=$PWD/bin/folio
cudatest=$PWD/bin/cuda.test
for b in "$folio" "$cudatest"; do
	if [ ! -x "$b" ]; then
		echo "gpu-check: $b is missing: build it where Go is with bench/gpu-build.sh, and carry bin/ (this script never builds)" >&2
		exit 2
	fi
done

deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-540}))
out=${OUT:-$(mktemp -d /tmp/folio-gpu-check-out.XXXXXX)}
mkdir -p "$out" || exit 2
work=$(mktemp -d "${TMPDIR:-/tmp}/folio-gpu-check.XXXXXX") || exit 2
export FOLIO_HOME=$work/home GOTRACEBACK=all
log=$out/gpu-check.log

# Everything goes to the log too; at exit the tee is waited for and the
# file synced, so that the summary, last, is in it when $OUT is collected.
exec 3>&1 4>&2
exec > >(tee -a "$log") 2>&1
teepid=$!

if [ $dry = 1 ]; then
	export FOLIO_GPU=cpu
	presets=${GPU_CHECK_PRESETS:-tiny smollm-135m}
	prompt=32 gen=8 repeat=1 gpuflag=
else
	presets=${GPU_CHECK_PRESETS:-llama-1b llama-8b}
	prompt=512 gen=128 repeat=3 gpuflag=--gpu
fi

declare -A status prefill decode share blascalls graphsteps
rows=()
failures=()
note() { printf '\n== %s (%ds left)\n' "$*" $((deadline - SECONDS)); }

# run BUDGET NAME CMD...: CMD under a timeout of BUDGET seconds, cut to
# what is left of the deadline; a failure is recorded by NAME.
run() {
	local budget=$1 name=$2
	shift 2
	local left=$((deadline - SECONDS - 5))
	if [ "$left" -le 5 ]; then
		echo "-- $name: skipped, no time left" >&2
		failures+=("$name (no time left)")
		return 1
	fi
	[ "$budget" -gt "$left" ] && budget=$left
	local t0=$SECONDS rc
	timeout -s QUIT --kill-after=10 "$budget" "$@"
	rc=$?
	echo "-- $name: exit $rc after $((SECONDS - t0)) s" >&2
	if [ $rc -ne 0 ]; then
		[ $rc -eq 124 ] && echo "-- $name: timed out after ${budget}s" >&2
		failures+=("$name (exit $rc)")
	fi
	return $rc
}

# nodriver NAME CMD...: in a dry run, CMD must fail saying there is no
# driver (preflight and selftest on the CPU).
nodriver() {
	local name=$1 rc
	shift
	timeout -s QUIT 60 "$@" >"$work/nodriver.txt" 2>&1
	rc=$?
	cat "$work/nodriver.txt"
	if [ $rc -ne 0 ] && grep -q 'no NVIDIA driver' "$work/nodriver.txt"; then
		echo "-- $name: exit $rc, no driver, as expected in a dry run"
		return 0
	fi
	echo "-- $name: exit $rc, but a dry run expects the no-driver failure"
	return 1
}

summary() {
	local row
	echo "== gpu-check summary ($SECONDS s of ${GPU_CHECK_SECONDS:-540}$([ $dry = 1 ] && echo ', dry run on the CPU'))"
	printf '%-24s %s\n' "preflight" "${status[preflight]:-not run}"
	printf '%-24s %s\n' "selftest" "${status[selftest]:-not run}"
	printf '%-24s %s\n' "selftest --vulkan" "${status[vulkan-selftest]:-not run}"
	printf '%-24s %s\n' "memcheck" "${status[memcheck]:-not run}"
	local vet="not run"
	if [ -f "$FOLIO_HOME/gpu-checks.json" ]; then
		vet="passed $(grep -c '"pass": true' "$FOLIO_HOME/gpu-checks.json"), failed $(grep -c '"pass": false' "$FOLIO_HOME/gpu-checks.json")"
	fi
	printf '%-24s %s\n' "first-run check (vet)" "$vet"
	printf '%-24s %-22s %10s %10s %8s %7s %7s\n' bench result "prefill/s" "decode/s" ceiling sgemms graphs
	for row in "${rows[@]}"; do
		printf '%-24s %-22s %10s %10s %8s %7s %7s\n' "$row" "${status[$row]:-not run}" "${prefill[$row]:--}" \
			"${decode[$row]:--}" "${share[$row]:--}" "${blascalls[$row]:--}" "${graphsteps[$row]:--}"
	done
	if [ ${#failures[@]} -gt 0 ]; then
		printf 'failed: %s\n' "${failures[@]}"
	else
		echo "all steps passed"
	fi
}

finish() {
	local rc=$?
	kill "${synth_pids[@]}" 2>/dev/null
	echo
	if [ -f "$FOLIO_HOME/gpu-checks.json" ]; then # gpu/vet's verdicts from the first bench's load
		cp "$FOLIO_HOME/gpu-checks.json" "$out/gpu-checks.json"
		cat "$out/gpu-checks.json"
		echo # the JSON ends without a newline: the summary starts a line of its own
	fi
	summary | tee "$out/summary.txt"
	echo "results in $out"
	exec 1>&3 2>&4
	wait "$teepid" 2>/dev/null
	sync "$log" 2>/dev/null || sync
	rm -rf "$work"
	[ ${#failures[@]} -gt 0 ] && exit 1
	exit $rc
}
synth_pids=()
trap finish EXIT

# --- the machine ------------------------------------------------------------
note "machine"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); $(uname -srm); glibc $(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2)"
cat "$PWD/bin/BUILD" 2>/dev/null
echo "folio: $("$folio" version 2>&1 | head -1)"
if [ $dry = 0 ]; then
	timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.mem --format=csv
	echo "nvcc: $(timeout 10 nvcc --version 2>&1 | tail -1)"
	ls /usr/local/cuda/lib64/libnvrtc.so* /usr/local/cuda/lib64/libcublas.so* 2>&1 | head -8
fi
echo "nproc $(nproc); FOLIO_HOME=$FOLIO_HOME; results in $out"

# --- the synthetic models, in the background from the start ----------------
declare -A model synth_pid
for preset in $presets; do
	model[$preset]=$work/$preset-q4_k.gguf
	GOMAXPROCS=$(($(nproc) > 4 ? $(nproc) - 2 : $(nproc))) timeout -s QUIT $((deadline - SECONDS - 30)) \
		nice -n 10 "$folio" dev synth --preset "$preset" --type q4_k \
		-o "${model[$preset]}" >"$work/synth-$preset.txt" 2>&1 &
	synth_pid[$preset]=$!
	synth_pids+=($!)
	echo "synth $preset: started (pid $!)"
done

# --- preflight and selftest -------------------------------------------------
note "folio gpu preflight"
if [ $dry = 1 ]; then
	nodriver preflight "$folio" gpu preflight && status[preflight]="no driver (dry run)" || failures+=("preflight")
else
	run 90 preflight "$folio" gpu preflight && status[preflight]=pass || status[preflight]=FAIL
fi

note "folio gpu selftest"
if [ $dry = 1 ]; then
	nodriver selftest "$folio" gpu selftest && status[selftest]="no driver (dry run)" || failures+=("selftest")
else
	run 150 selftest "$folio" gpu selftest >"$work/selftest.txt" 2>&1
	rc=$?
	cat "$work/selftest.txt"
	ops=$(sed -n 's/^ops: \([0-9]* of [0-9]*\) pass$/\1/p' "$work/selftest.txt")
	status[selftest]="$([ $rc = 0 ] && echo pass || echo FAIL), ops ${ops:-?} pass"
fi

# --- benchmarks -------------------------------------------------------------
# waitsynth PRESET: wait for PRESET's writer (within the deadline).
waitsynth() {
	local preset=$1 pid=${synth_pid[$1]} rc
	while kill -0 "$pid" 2>/dev/null && [ $((deadline - SECONDS)) -gt 20 ]; do
		sleep 1
	done
	wait "$pid"
	rc=$?
	cat "$work/synth-$preset.txt"
	if [ $rc -ne 0 ]; then
		echo "-- synth $preset: exit $rc"
		failures+=("synth $preset (exit $rc)")
	fi
	return $rc
}

# bench ROW BUDGET GRAPHS PROMPT GEN REPEAT: one bench of the current model.
bench() {
	local row=$1 budget=$2 graphs=$3 p=$4 g=$5 r=$6
	FOLIO_CUDA_GRAPHS=$graphs run "$budget" "bench $row" "$folio" bench $gpuflag --model "${model[$preset]}" \
		--prompt "$p" --gen "$g" --repeat "$r" --json
}

# vulkan_bench PRESET: the first preset again on the Vulkan backend (the
# GPU's Vulkan driver; lavapipe in a dry run), when a Vulkan device is
# there: selftest --vulkan, then bench --gpu=vulkan.
vulkan_done=0
vulkan_bench() {
	local preset=$1 row=$1+vulkan json
	[ $vulkan_done = 1 ] && return 0
	vulkan_done=1
	note "Vulkan: folio gpu selftest --vulkan, then folio bench --gpu=vulkan $preset"
	if ! "$folio" gpu info 2>&1 | grep -q '^vulkan:[0-9]'; then
		"$folio" gpu info 2>&1 | grep -i vulkan
		status[vulkan-selftest]="skipped (no Vulkan device)"
		return 0
	fi
	run 90 "selftest --vulkan" "$folio" gpu selftest --vulkan >"$work/selftest-vulkan.txt" 2>&1
	local rc=$?
	grep -v ' pass$' "$work/selftest-vulkan.txt" | head -40
	ops=$(sed -n 's/^ops: \([0-9]* of [0-9]*\) pass$/\1/p' "$work/selftest-vulkan.txt")
	status[vulkan-selftest]="$([ $rc = 0 ] && echo pass || echo FAIL), ops ${ops:-?} pass"
	rows+=("$row")
	json=$out/bench-$preset-vulkan.json
	if run 75 "bench $row" "$folio" bench --gpu=vulkan --model "${model[$preset]}" --prompt "$prompt" --gen "$gen" \
		--repeat "$repeat" --json >"$json"; then
		status[$row]=pass
	else
		status[$row]=FAIL
	fi
	cat "$json"
	num() { sed -n "s/^ *\"$1\": *\([-0-9.e+]*\),*$/\1/p" "$json" | head -1; }
	prefill[$row]=$(num prefill_tps | awk '{ if ($1 != "") printf "%.1f", $1 }')
	decode[$row]=$(num decode_tps | awk '{ if ($1 != "") printf "%.1f", $1 }')
	share[$row]=$(num decode_of_ceiling | awk '{ if ($1 != "") printf "%.1f%%", 100 * $1 }')
}

for preset in $presets; do
	note "folio dev synth $preset q4_k (waiting for the writer)"
	t0=$SECONDS
	waitsynth "$preset" || continue
	echo "-- synth $preset: ready after $((SECONDS - t0)) s more; $(du -h "${model[$preset]}" | cut -f1)"
	budget=75
	[ "$preset" = llama-8b ] && budget=110
	for graphs in 0 1; do
		row=$preset
		[ $graphs = 1 ] && row=$preset+graphs
		rows+=("$row")
		json=$out/bench-${row/+/-}.json # $OUT returns names of letters, digits, . _ - only
		note "folio bench${gpuflag:+ $gpuflag} $row"
		for other in $presets; do # their CPU use slows the launches
			kill -0 "${synth_pid[$other]}" 2>/dev/null && echo "(the $other writer is still running)"
		done
		p=$prompt
		[ "${GPU_CHECK_BREAK:-}" = "$row" ] && p=0 # a bench that fails, to see the rerun
		if bench "$row" $budget $graphs "$p" "$gen" "$repeat" >"$json"; then
			status[$row]=pass
		else
			status[$row]=FAIL
			cat "$json"
			note "again with FOLIO_CUDA_SYNC=1 and a short generation: $row"
			if FOLIO_CUDA_SYNC=1 bench "$row (sync)" 60 $graphs 64 16 1 >"$json"; then
				status[$row]="FAIL, pass synced"
			else
				status[$row]="FAIL, FAIL synced"
			fi
		fi
		cat "$json"
		num() { sed -n "s/^ *\"$1\": *\([-0-9.e+]*\),*$/\1/p" "$json" | head -1; }
		prefill[$row]=$(num prefill_tps | awk '{ if ($1 != "") printf "%.1f", $1 }')
		decode[$row]=$(num decode_tps | awk '{ if ($1 != "") printf "%.1f", $1 }')
		share[$row]=$(num decode_of_ceiling | awk '{ if ($1 != "") printf "%.1f%%", 100 * $1 }')
		blascalls[$row]=$(num blas_calls)
		graphsteps[$row]=$(num graph_steps)
	done
	vulkan_bench "$preset"
	rm -f "${model[$preset]}"
done

# --- memcheck, with the time left ---------------------------------------------
note "compute-sanitizer memcheck over cuda.test's GPU tests"
tests='^(TestOnTheGPU|TestPreflightHere)$'
if [ $((deadline - SECONDS)) -lt 90 ]; then
	echo "skipped: under 90 s left"
	status[memcheck]="skipped (time)"
elif [ $dry = 1 ]; then
	run 60 "cuda.test" "$cudatest" -test.run "$tests" -test.v >"$out/memcheck.log" 2>&1 &&
		status[memcheck]="cuda.test ran, no sanitizer (dry run)" || status[memcheck]=FAIL
	tail -20 "$out/memcheck.log"
elif ! command -v compute-sanitizer >/dev/null; then
	echo "skipped: no compute-sanitizer"
	status[memcheck]="skipped (no compute-sanitizer)"
else
	# Not through run: a sanitizer that cannot watch this device (gVisor
	# machines) or runs out of time is not a failure of folio's.
	timeout -s QUIT --kill-after=10 $((deadline - SECONDS - 15)) compute-sanitizer --tool memcheck --error-exitcode 3 \
		--print-limit 50 "$cudatest" -test.run "$tests" -test.v >"$out/memcheck.log" 2>&1
	rc=$?
	tail -40 "$out/memcheck.log"
	if [ $rc = 0 ]; then
		status[memcheck]=pass
	elif grep -q 'Device not supported' "$out/memcheck.log"; then
		status[memcheck]="compute-sanitizer does not support this device (gVisor?)"
	elif [ $rc = 124 ]; then
		status[memcheck]="timed out (no error before)"
	else
		status[memcheck]="FAIL (exit $rc)"
		failures+=("memcheck (exit $rc)")
	fi
fi
