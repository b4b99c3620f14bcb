#!/usr/bin/env bash
# How far a quantized K/V cache moves the logits, in folio and in llama.cpp:
# one prompt of N pseudo-random token ids (BOS first) through MODEL with an
# F16 and a Q8_0 cache in each engine (llama.cpp through llamaref run,
# flash attention on, which its Q8_0 V cache needs), then per pair of runs
# the largest logit difference, the largest log-probability difference
# over the top 20 tokens, and whether the top token agrees.
#
#   bench/kvtype-logits.sh MODEL.gguf [N]
#
# Environment: FOLIO (go run .), LLAMAREF (../shared/tools/llamaref/llamaref),
# DIR (a temporary folder). Needs python3.
set -euo pipefail
cd "$(dirname "$0")/.."

model=$1
n=${2:-500}
dir=${DIR:-$(mktemp -d)}
llamaref=${LLAMAREF:-$PWD/../shared/tools/llamaref/llamaref}
if [ -n "${FOLIO:-}" ]; then
	folio=$FOLIO
else
	go build -o "$dir/folio" .
	folio=$dir/folio
fi
ids=$(python3 -c "import random; random.seed(7); print([1] + [random.randrange(3, 1000) for _ in range($n - 1)])" | tr -d ' ')
for kv in f16 q8_0; do
	"$folio" dev logits "$model" --tokens "$ids" --kv-type "$kv" --num-ctx $((n + 16)) --json >"$dir/folio-$kv.json"
	"$llamaref" run "$model" --tokens "$ids" --full-logits --logits-bin "$dir/llama-$kv.f32" --kv-type "$kv" \
		--flash-attn on --n-predict 1 --top 1 >/dev/null 2>"$dir/llama-$kv.err"
done
python3 - "$dir" <<'PY'
import array, json, math, sys
d = sys.argv[1]
def folio(kv): return json.load(open(f"{d}/folio-{kv}.json"))["logits"]
def llama(kv):
    a = array.array("f"); a.frombytes(open(f"{d}/llama-{kv}.f32", "rb").read()); return list(a)
def logprobs(x):
    m = max(x); s = math.log(sum(math.exp(v - m) for v in x)); return [v - m - s for v in x]
runs = {"folio f16": folio("f16"), "folio q8_0": folio("q8_0"), "llama.cpp f16": llama("f16"), "llama.cpp q8_0": llama("q8_0")}
lp = {k: logprobs(v) for k, v in runs.items()}
print(f"{'pair':<36} {'max |Δ logit|':>14} {'max |Δ logprob| top 20':>23} {'top-1':>6}")
for a, b in [("folio f16", "folio q8_0"), ("llama.cpp f16", "llama.cpp q8_0"), ("folio f16", "llama.cpp f16"),
             ("folio q8_0", "llama.cpp q8_0")]:
    x, y = runs[a], runs[b]
    top = sorted(range(len(x)), key=lambda i: -x[i])[:20]
    dl = max(abs(p - q) for p, q in zip(x, y))
    dp = max(abs(lp[a][i] - lp[b][i]) for i in top)
    agree = max(range(len(x)), key=x.__getitem__) == max(range(len(y)), key=y.__getitem__)
    print(f"{a + ' vs ' + b:<36} {dl:>14.4f} {dp:>23.4f} {'same' if agree else 'differs':>6}")
PY
