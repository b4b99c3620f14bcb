#!/usr/bin/env bash
# gen.sh regenerates the golden reference logits in this folder: for each case
# it writes a synthetic model with `folio dev synth` (or takes stories260K.gguf
# from ../shared/models), runs llama.cpp on a fixed 64-token prompt through
# ../shared/tools/llamaref with an F32 KV cache, flash attention off and one
# thread, and writes CASE.json with the last position's logits and 32 greedy
# tokens. It also rewrites MANIFEST.json (cases, command lines, versions).
#
# Usage: models/arch/testdata/golden/gen.sh [CASE...]   (default: every case)
# Run from anywhere. The shared folder is $FOLIO_SHARED, else ../shared next
# to the repository. Needs go, node, jq and sha256sum.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../../.." && pwd)
shared=${FOLIO_SHARED:-$root/../shared}
shared=$(cd "$shared" && pwd)
llamaref=$shared/tools/llamaref/llamaref
stories=$shared/models/stories260K.gguf
[[ -x $llamaref ]] || { echo "gen.sh: no llamaref at $llamaref (set FOLIO_SHARED)" >&2; exit 1; }
[[ -f $stories ]] || { echo "gen.sh: no $stories" >&2; exit 1; }
for t in go node jq sha256sum; do
	command -v "$t" >/dev/null || { echo "gen.sh: $t not found" >&2; exit 1; }
done

# Fixed settings of every case.
n_prompt=64
n_predict=32
prompt_seed=20260501
stories_text="Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day, she saw a big red ball in the park. She ran to get it, but a small dog took it first."
run_flags=(--full-logits --kv-type f32 --flash-attn off --threads 1 --n-predict "$n_predict" --compact)

# Cases: NAME and the `folio dev synth` flags (besides -o), or "stories260K".
# All synth shapes have rows that are multiples of 256 (K-quants apply to
# every 2-D weight, no fallbacks), at least 2 layers and GQA.
#   llama:      tiny preset: n_embd 256, 2 layers, 4 heads / 2 KV (head dim 64), n_ff 512, vocab 512, separate output.weight
#   llama-tied: 3 layers, 8 heads / 2 KV (head dim 32, 4 queries per KV head), RoPE base 500000, tied output
#   qwen2:      tiny shape with QKV biases, NEOX RoPE base 1e6, vocab padded to 1001 (odd output rows)
#   qwen3:      Q/K norms, head dim 128 != n_embd/n_head (q dim 512), NEOX RoPE base 1e6
types=(f32 f16 q8_0 q4_0 q4_k q6_k)
cases=()
for t in "${types[@]}"; do cases+=("llama-$t|--arch llama --preset tiny --type $t --seed 1"); done
for t in "${types[@]}"; do cases+=("llama-tied-$t|--arch llama --preset tiny --type $t --seed 4 --n-layer 3 --n-head 8 --n-head-kv 2 --rope-base 500000 --tie-embeddings"); done
for t in "${types[@]}"; do cases+=("qwen2-$t|--arch qwen2 --preset tiny --type $t --seed 2 --rope-base 1000000 --vocab-size 1001"); done
for t in "${types[@]}"; do cases+=("qwen3-$t|--arch qwen3 --preset tiny --type $t --seed 3 --head-dim 128 --rope-base 1000000"); done
cases+=("stories260K|")

want=("$@")
selected() {
	((${#want[@]} == 0)) && return 0
	local w
	for w in "${want[@]}"; do [[ $w == "$1" ]] && return 0; done
	return 1
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/folio-golden.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

echo "gen.sh: building folio" >&2
(cd "$root" && go build -o "$tmp/folio" .)

versions=$("$llamaref" cversion 2>/dev/null)
nodeversions=$("$llamaref" version --compact 2>/dev/null)
llamaref_info=$(jq -cn --argjson c "$versions" --argjson n "$nodeversions" '{
	llama_cpp: $c.versions.llama_cpp, ggml: $c.versions.ggml, ggml_commit: $c.versions.ggml_commit,
	source_commit: $c.versions.source_commit, package: $c.versions.package, cpu_backend: $c.versions.cpu_backend,
	node_llama_cpp: $n.node_llama_cpp, llama_cpp_release: $n.llama_cpp_release.release,
	system_info: ($n.system_info | rtrimstr(" ")),
	run_flags: ["--full-logits","--kv-type","f32","--flash-attn","off","--threads","1","--n-predict","32"]
}')

# assemble.mjs: picks the prompt and writes CASE.json. Argument order below.
cat >"$tmp/assemble.mjs" <<'JS'
import fs from "node:fs";
const [mode, name, synthFlags, modelName, sha, promptSrc, promptSeed, nPrompt, refPath, binPath, infoJSON, outPath] =
	process.argv.slice(2);
const N = Number(nPrompt);

// splitmix64: the prompt generator.
function splitmix64(seed) {
	let s = BigInt.asUintN(64, BigInt(seed));
	return () => {
		s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
		let z = s;
		z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
		z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
		return z ^ (z >> 31n);
	};
}

if (mode === "prompt") {
	// promptSrc: for a synthetic model, `folio show --json --max-array 0`
	// output; for stories260K, `llamaref tokenize` output.
	const src = JSON.parse(fs.readFileSync(promptSrc, "utf8"));
	let ids;
	if (synthFlags === "") {
		const t = src.tokenization.with_special.ids;
		if (t[0] !== src.model.bos) throw new Error("stories prompt does not start with BOS");
		if (t.length < N) throw new Error(`stories text gives ${t.length} tokens, want >= ${N}`);
		ids = t.slice(0, N);
	} else {
		const md = src.metadata;
		const types = md["tokenizer.ggml.token_type"];
		const bos = md["tokenizer.ggml.bos_token_id"], eos = md["tokenizer.ggml.eos_token_id"];
		const special = new Set([bos, eos, md["tokenizer.ggml.unknown_token_id"],
			md["tokenizer.ggml.eot_token_id"], md["tokenizer.ggml.padding_token_id"]]);
		// Eligible: NORMAL (1) and BYTE (6) tokens that are none of the special ids.
		const eligible = [];
		types.forEach((ty, id) => { if ((ty === 1 || ty === 6) && !special.has(id)) eligible.push(id); });
		const next = splitmix64(promptSeed);
		ids = [bos];
		while (ids.length < N) ids.push(eligible[Number(next() % BigInt(eligible.length))]);
	}
	process.stdout.write(JSON.stringify(ids));
	process.exit(0);
}

// mode "write"
const ref = JSON.parse(fs.readFileSync(refPath, "utf8"));
const buf = fs.readFileSync(binPath);
const V = ref.model.n_vocab;
if (buf.length !== 4 * V) throw new Error(`logits file has ${buf.length} bytes, want ${4 * V}`);
const f32 = new Float32Array(buf.buffer, buf.byteOffset, V);
// Shortest decimal that parses back to the same float32 (at most 9 digits).
function fmt(x) {
	if (!Number.isFinite(x)) throw new Error(`non-finite logit ${x}`);
	for (let p = 1; p <= 9; p++) {
		const s = x.toPrecision(p);
		if (Math.fround(Number(s)) === x) return String(Number(s));
	}
	throw new Error(`no 9-digit form for ${x}`);
}
const logits = Array.from(f32, fmt);
// Cross-check against the JSON copy of the logits.
ref.next_token.logits.forEach((v, i) => { if (Math.fround(v) !== f32[i]) throw new Error(`logit ${i} differs`); });
const tokens = ref.tokenization.eval_ids;
let synth = null;
if (synthFlags !== "") {
	synth = {};
	const a = synthFlags.split(" ");
	for (let i = 0; i < a.length; i++) {
		const k = a[i].replace(/^--/, "");
		if (i + 1 < a.length && !a[i + 1].startsWith("--")) {
			const v = a[++i];
			synth[k] = /^-?[0-9.]+(e[-+]?[0-9]+)?$/.test(v) && k !== "type" ? Number(v) : v;
		} else synth[k] = true;
	}
}
const greedy = ref.greedy.ids;
if (greedy.length !== 32) throw new Error(`greedy has ${greedy.length} tokens`);
const head = {
	case: name, synth, model: modelName === "" ? null : modelName, model_sha256: sha,
	tokens, vocab_size: V,
};
// One line; logits spliced in as the formatted strings (numbers in JSON).
let out = JSON.stringify(head).slice(0, -1);
out += `,"logits":[${logits.join(",")}],"greedy":${JSON.stringify(greedy)},"llamaref":${infoJSON}}\n`;
JSON.parse(out);
fs.writeFileSync(outPath, out);
JS

manifest_cases=()
for c in "${cases[@]}"; do
	name=${c%%|*}
	flags=${c#*|}
	selected "$name" || continue
	start=$SECONDS
	if [[ -z $flags ]]; then
		model=$stories
		model_name=stories260K.gguf
		"$llamaref" tokenize "$model" --prompt "$stories_text" --compact >"$tmp/$name.src.json" 2>/dev/null
		synth_cmd=null
	else
		model=$tmp/$name.gguf
		model_name=
		# shellcheck disable=SC2086 # flags are space-separated words
		"$tmp/folio" dev synth -o "$model" $flags >/dev/null
		"$tmp/folio" show --json --max-array 0 "$model" >"$tmp/$name.src.json"
		synth_cmd="go run . dev synth -o $name.gguf $flags"
	fi
	sha=$(sha256sum "$model" | cut -d' ' -f1)
	tokens=$(node "$tmp/assemble.mjs" prompt "$name" "$flags" "" "" "$tmp/$name.src.json" "$prompt_seed" "$n_prompt")
	"$llamaref" run "$model" --tokens "$tokens" --logits-bin "$tmp/$name.bin" "${run_flags[@]}" \
		>"$tmp/$name.ref.json" 2>"$tmp/$name.err" || { cat "$tmp/$name.err" >&2; exit 1; }
	node "$tmp/assemble.mjs" write "$name" "$flags" "$model_name" "$sha" "" "" "$n_prompt" \
		"$tmp/$name.ref.json" "$tmp/$name.bin" "$llamaref_info" "$here/$name.json"
	manifest_cases+=("$(jq -cn --arg name "$name" --arg synth "$synth_cmd" --arg sha "$sha" \
		--arg run "llamaref run MODEL --tokens TOKENS --logits-bin LOGITS.f32 ${run_flags[*]}" \
		'{case: $name, file: ($name + ".json"), synth_command: (if $synth == "null" then null else $synth end),
		  model: (if $synth == "null" then "stories260K.gguf" else null end), model_sha256: $sha, llamaref_command: $run}')")
	echo "gen.sh: $name ($((SECONDS - start))s)" >&2
done

# MANIFEST.json lists every case (only when all were regenerated).
if ((${#want[@]} == 0)); then
	printf '%s\n' "${manifest_cases[@]}" | jq -s --argjson info "$llamaref_info" \
		--arg seed "$prompt_seed" --arg text "$stories_text" '{
		what: "Reference outputs of llama.cpp (through ../shared/tools/llamaref), regenerated by gen.sh in this folder: the logits of the last prompt position over the whole vocabulary and 32 greedy tokens, for a 64-token prompt, F32 KV cache, flash attention off, 1 thread.",
		prompt_rule: {
			synthetic: ("BOS, then 63 ids drawn with splitmix64 seeded with " + $seed + ": each id is eligible[next() mod len(eligible)], eligible = the ids of NORMAL (1) and BYTE (6) tokens in token-id order, minus BOS, EOS, UNK, EOT and PAD ids"),
			stories260K: "the first 64 ids (BOS included) of llamaref tokenize of stories_text with special tokens added",
			stories_text: $text
		},
		llamaref: $info,
		cases: .
	}' >"$here/MANIFEST.json"
fi
echo "gen.sh: done in ${SECONDS}s" >&2
