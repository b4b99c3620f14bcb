#!/usr/bin/env bash
# gen.sh regenerates the golden reference logits in this folder: for each case
# it writes a synthetic model with `folio dev synth` (or takes stories260K.gguf
# from ../shared/models), runs llama.cpp on a 64-token prompt (longer where family_prompt says) through
# ../shared/tools/llamaref with an F32 KV cache, flash attention off and one
# thread, and writes CASE.json with the last prompt position's logits and 32
# greedy tokens, and lists the cases in MANIFEST.json (all of it rewritten
# with no arguments; the named cases' entries replaced or added with some).
#
# Usage: models/arch/testdata/golden/gen.sh [CASE...]   (default: every case)
# Run from anywhere. The shared folder is $FOLIO_SHARED, else ../shared next
# to the repository. Needs go, node, jq and sha256sum. About 30 s.
#
# Prompts. stories260K: the first 64 tokens (BOS first) of stories_text.
# Synthetic models: BOS, then 63 ids drawn with splitmix64 from the NORMAL and
# BYTE tokens (no BOS/EOS/UNK/EOT/PAD id). Random-weight models have flat
# logits, so a greedy step can be a near tie that any rounding difference
# flips; the prompt seed of each family (llama, llama-tied, qwen2, qwen3; the
# same prompt for all its types) is therefore the first seed from
# $prompt_seed_base up for which every one of the 32 greedy steps of its F32
# and of its F16 model (those of the two it has) has a margin (chosen logit minus the best other) of at
# least $min_margin in llama.cpp. Each file records its seed and its margins.
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
prompt_seed_base=20260501
max_seed_tries=200
min_margin=0.02
stories_text="Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. One day, she saw a big red ball in the park. She ran to get it, but a small dog took it first."
run_flags=(--full-logits --kv-type f32 --flash-attn off --threads 1 --n-predict "$n_predict" --compact)
margin_flags=(--all-positions --top 2 --kv-type f32 --flash-attn off --threads 1 --n-predict 1 --compact)

# Families: NAME and the `folio dev synth` flags (besides -o and --type).
# Every row length is a multiple of 256 (K-quants apply to every 2-D weight,
# no fallbacks); all have at least 2 layers and GQA.
#   llama:      tiny preset: n_embd 256, 2 layers, 4 heads / 2 KV (head dim 64), n_ff 512, vocab 512, separate output.weight
#   llama-tied: 3 layers, 8 heads / 2 KV (head dim 32, 4 queries per KV head), RoPE base 500000, tied output
#   qwen2:      tiny shape with QKV biases, NEOX RoPE base 1e6, vocab padded to 1001 (odd output rows)
#   qwen3:      Q/K norms, head dim 128 != n_embd/n_head (q dim 512), NEOX RoPE base 1e6
#   gemma:      the first Gemma (CodeGemma): GeGLU, embeddings scaled by 16, tied, NEOX RoPE, one KV
#               head of 128 (q dim 512 != n_embd); no post-norms, windows or soft-caps
#   gemma2:     tiny shape, tied; a 16-token window on layer 0 (the prompt is 64), full layer 1,
#               attention and logit soft-caps 5 and 4, GeGLU, post-norms, embeddings scaled by 16
#   gemma3:     6 layers: 5 with a 16-token window and rope base 10000, then a global one with
#               base 1e6 and linear scaling 8; Q/K norms, head dim 128, one KV head, tied
#   qwen3-yarn, qwen2-yarn: YaRN rope scaling by 4 from an original context of 32, so that the
#               prompt's later half and every greedy step lie beyond it (rope ramp and mscale)
#   smollm3:    4 layers, the fourth without rope (NoPE), tied output
#   olmo2:      no pre-norms; whole-row Q/K norms, post-attention and post-FFN norms; NEOX RoPE
#   mistral3:   Mistral Small 3's head dim 128 != n_embd/n_head, RoPE base 1e9
#   mistral3-yarn: YaRN by 8 from 32 with the file's beta_fast 16, beta_slow 2, log multiplier 0.5
#   mistral3-temp: Ministral 3's attention temperature 0.1 over YaRN by 8 from 16: the queries of
#               positions 16 and on scaled by 1 + 0.1·ln(⌊pos/16⌋ + 1), up to ln 6 at the last step
#   llama-hd128: a Mistral-Small-shaped llama file: 8 heads of 128 over n_embd 256 (key_length)
#   olmo3:      an OLMo-3-shaped olmo2 file: 4 layers, the first three with a 16-token window and
#               unscaled rope, the fourth global with YaRN by 4 from 32
#   phi3:       fused QKV and gate-up, NEOX RoPE over 32 of 64 head elements, longrope (original
#               context 512 of 4096) at llama.cpp's default context (256): the short factors;
#               a 32-token sliding_window key, which llama.cpp ignores for phi3
#   phi3-long:  the same model at a context of 1024 (--ctx): the long factors
#   granite:    embedding 12, attention 1/32, residual 0.22 and logit 2 multipliers
#   qwen3moe:   qwen3's attention with 3 layers of 8 experts (expert FFN 256), top-2, routed on
#               softmax probabilities renormalized over the chosen
#   gpt-oss:    4 layers, a 16-token window with rope base 150000 on layers 0 and 2, Q/K/V/O
#               biases, a sink logit per head, YaRN by 32 from 4096, top-4 of 8 experts (softmax
#               over the chosen, router and expert biases, SwiGLUOAI); only F32 and MXFP4 (the
#               experts in MXFP4, the other matrices in BF16, as gpt-oss's release)
#   qwen2moe:   qwen2's attention (QKV biases) with 3 layers of 8 experts (expert FFN 256), top-2,
#               softmax weights not renormalized, and a shared expert of 512 behind a sigmoid gate
#   mixtral:    the tiny llama with 8 experts of its FFN (512), top-2, renormalized (llama with
#               llama.expert_count, as Mixtral's files)
#   olmoe:      3 layers, 4 heads and 4 KV heads, whole-projection Q/K norms, 8 experts of 512,
#               top-2, not renormalized, NEOX RoPE
#   granitemoe: granite's multipliers around 8 experts of 512, top-2, renormalized
#   starcoder2: LayerNorms with shifts (the output's too), a bias on every projection, an
#               ungated GELU feed-forward, NEOX RoPE, GQA, tied output
#   exaone:     EXAONE 3.x: llama's layer with NEOX RoPE; 8 heads / 2 KV heads of 32
#   command-r:  attention and a SwiGLU feed-forward side by side on one LayerNorm without a
#               shift, NORM RoPE, tied output, logits × logit_scale 0.5
#   cohere2:    Command R7B: command-r's layer on 4 layers, a 16-token window on the first three
#               (with rope), the fourth global without rope
#   qwen2vl, qwen3vl, qwen3vlmoe: the text models of Qwen2(.5)-VL and Qwen3-VL (dense and MoE):
#               M-RoPE sections in the file; text positions turn as NEOX rope
#   phi2:       attention and an ungated GELU feed-forward side by side on one LayerNorm with a
#               shift, fused QKV with a bias, biases everywhere, NEOX RoPE over half of each head,
#               an output matrix with a bias
#   llama-bias: llama with a bias on Q, K, V, the output projection and the feed-forward's three
#               (llama.cpp takes them where a file has them)
#   internlm2:  InternLM 2 as llama.cpp's converter writes it: llama's layer
#   stablelm:   StableLM 2: LayerNorms with shifts, Q/K/V biases, NEOX RoPE over a quarter of each head
#   exaone4:    EXAONE 4.0 1.2B's layer: no pre-norms, post-attention and post-FFN norms, Q/K normed
#               per head, NEOX RoPE
#   glm4:       GLM-4: sandwich norms, Q/K/V biases, gate and up fused in ffn_up, NORM RoPE over half
#               of each head
#   seed_oss:   Seed-OSS: llama's layer with Q/K/V biases, the FFN norm named post_attention_norm,
#               NEOX RoPE, heads of 128 (q dim 512 != n_embd)
#   ernie4_5:   ERNIE 4.5 (dense): llama's layer, Q/K/V biases applied, an output-projection bias in
#               the file that llama.cpp loads and does not apply; tied
#   hunyuan-dense: Q and K normed per head after NEOX RoPE, whose base the NTK alpha 1000 raises
#   glm4moe:    GLM-4.5: Q/K/V biases, NEOX RoPE over half of each head, a dense first layer, then
#               8 experts (2 chosen) by sigmoid plus a selection bias, normalized, times 2.5, and a
#               shared expert
#   glm4moe-mtp: glm4moe with a multi-token-prediction layer after the others, as GLM-4.5's files
#               have one (block_count 4, nextn_predict_layers 1), which neither engine runs
#   glm4moe-qknorm: glm4moe with Q and K normed per head, as GLM-4.5's and GLM-4.6's files have them
#   ernie4_5-moe: ERNIE 4.5's MoE: its dense layer's attention (Q/K/V biases, an output bias not
#               applied), a dense first layer, then 8 experts (2 chosen) by softmax plus a selection
#               bias, renormalized, beside a shared expert of 512; tied
#   hunyuan-moe: Hunyuan-A13B: hunyuan-dense's attention without the alpha, 8 experts of n_ff (2
#               chosen) by softmax, renormalized, beside a shared expert of 512
#   deepseek2:  DeepSeek-V3's layout: multi-head latent attention (a rank-128 query LoRA, a latent of
#               128 plus 32 rotated elements cached as one K/V head, NORM RoPE), a dense first layer,
#               then 8 experts in 4 groups (2 searched, 2 chosen) by sigmoid plus a selection bias,
#               normalized, times 2.5, beside a shared expert
#   deepseek2-lite: DeepSeek-V2-Lite's layout: attn_q without the LoRA, experts by softmax without
#               groups or bias, YaRN (factor 4 over 2048, the log multiplier 0.0707 that sets mscale)
#   bailingmoe2: Ling 2.0: Q, K and V fused in attn_qkv, Q and K normed per head before NEOX RoPE over
#               half of each head, a dense first layer, then 8 experts in 4 groups (2 searched, 2
#               chosen) by sigmoid plus a selection bias, normalized, times 2.5, beside a shared expert
#   minimax-m2: MiniMax-M2: Q and K each normed over the whole projection, NEOX RoPE over half of each
#               head, 8 experts in every layer by sigmoid plus a selection bias, normalized, top-2
#   dots1:      dots.llm1: Q and K normed per head, as many KV heads as heads, a dense first layer, then
#               8 experts by sigmoid plus a selection bias, normalized, times 2.5, beside 2 shared experts
#   mistral4:   Mistral 4: deepseek2's tiny model under the mistral4 name, its experts' gate and up
#               fused in ffn_gate_up_exps as Mistral 4's files have them
#   exaone-moe: K-EXAONE: Q and K normed per head, a 16-token window with NEOX RoPE on layers 0-2, the
#               fourth global without rope; a dense first layer, then 8 experts by sigmoid plus a
#               selection bias, normalized, times 2.5, beside a shared expert
#   afmoe:      Arcee's Trinity: embeddings times 16, per-head Q/K norms, the attention output gated by
#               the sigmoid of attn_gate, post-attention and post-FFN norms, a 16-token window with
#               rope on layers 0-2, the fourth global without rope; a dense first layer, then 8
#               experts by sigmoid plus a selection bias, normalized, times 2.5, beside a shared expert
#   llama4:     Llama 4: NORM RoPE with Q and K normed per head after it on layers 0-2, the fourth
#               without rope (its queries' temperature is 1 below position 8191); a dense first and
#               third layer, experts in the second and fourth: 8 by their logits, one chosen, its
#               sigmoid weighting its input, beside a shared expert (chunks of 8192 reach no prompt)
#   llama4-long: llama4 of 8 layers over an 8320-token prompt: past position 8192 the chunked layers read their
#               own chunk only, and from position 8191 the fourth layer's queries are scaled by
#               1 + 0.1·ln 2 (whose first step, at 8191, TestAttnTempAt checks: no logit shows it)
#   gemma4:     Gemma 4: three layers with a 16-token window, heads of 64 over 2 K/V heads and NEOX rope
#               over 32 of them at base 10000, then a global layer with heads of 128 over 1 K/V head, V
#               its K, rope over all with rope_freqs holding three quarters of the pairs still; Q, K and
#               V normed per head, unscaled scores, sandwich norms, GeGLU, each layer's output scaled,
#               embeddings times 16, logits soft-capped at 30, an output matrix of its own
#   gemma4-moe: gemma4 with 8 experts of 256 (2 chosen by softmax, renormalized, each output scaled)
#               routed from the scaled, weightless-normed layer input beside the dense feed-forward,
#               each with its own norms (26B-A4B's layout)
#   gemma4-e:   gemma4 of 8 layers as E2B and E4B are made: 64-wide per-layer embeddings, and the last 4
#               layers writing no K/V, the windowed ones attending layer 2's and the global one layer
#               3's, with feed-forwards twice as wide (a feed_forward_length per layer)
#   gemma3n:    Gemma 3n: 25 layers (llama.cpp fixes the first 20 as the ones with K/V), every fifth global
#               (rope base 1e6), the others a 16-token window (base 10000); four AltUp streams predicted
#               and corrected each layer, a rank-64 LAuReL branch, 256-wide per-layer embeddings, sparse
#               gates on the first 10 layers, layers 20-23 reading layer 18's K/V and 24 layer 19's, V
#               normed, unscaled scores, logits soft-capped at 30, tied output
#   deepseek2-temp: deepseek2 with Mistral Large 3's attention temperature (0.3 over steps of 16
#               positions: the prompt's queries scaled by 1 to 1 + 0.3·ln 4)
# deepseek2's and mistral4's quantized cases were made with llama.cpp's other x86 builds: its AMX build
# (libggml-cpu-sapphirerapids) aborts on them (LLAMAREF_HOME pointing at an install without it).
# A family may add llamaref run flags after a second |.
types=(f32 f16 q8_0 q4_0 q4_k q6_k)
# Families with their own list of types (default: types). The prompt seed's
# margin rule looks at those of F32 and F16 the family has. llama also runs
# the types whose kernels the others' files do not reach: BF16, Q4_1, Q5_0,
# Q5_1, Q2_K, Q3_K, Q5_K, IQ4_NL and IQ4_XS.
declare -A family_types=([llama4-long]="f32 q8_0" [gpt-oss]="f32 mxfp4" [glm4moe-mtp]="f32 q8_0" [glm4moe-qknorm]="f32 q8_0" [deepseek2-lite]="f32 q8_0" [deepseek2-temp]="f32 q8_0" [llama]="f32 f16 q8_0 q4_0 q4_k q6_k bf16 q4_1 q5_0 q5_1 q2_k q3_k q5_k iq4_nl iq4_xs")
# Families whose prompt is longer than n_prompt: llama4-long's reaches past
# Llama 4's attention chunk of 8192 (and its temperature's first step).
declare -A family_prompt=([llama4-long]=8320)
families=(
	"llama|--arch llama --preset tiny --seed 1"
	"llama-tied|--arch llama --preset tiny --seed 4 --n-layer 3 --n-head 8 --n-head-kv 2 --rope-base 500000 --tie-embeddings"
	"qwen2|--arch qwen2 --preset tiny --seed 2 --rope-base 1000000 --vocab-size 1001"
	"qwen3|--arch qwen3 --preset tiny --seed 3 --head-dim 128 --rope-base 1000000"
	"gemma|--arch gemma --preset tiny --seed 14"
	"gemma2|--arch gemma2 --preset tiny --seed 5"
	"gemma3|--arch gemma3 --preset tiny --seed 6"
	"qwen3-yarn|--arch qwen3 --preset tiny --seed 9 --head-dim 128 --ctx 128 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32"
	"qwen2-yarn|--arch qwen2 --preset tiny --seed 10 --ctx 128 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32"
	"smollm3|--arch smollm3 --preset tiny --seed 5 --n-layer 4 --tie-embeddings"
	"olmo2|--arch olmo2 --preset tiny --seed 6 --rope-base 500000"
	"mistral3|--arch mistral3 --preset tiny --seed 7 --head-dim 128 --rope-base 1000000000"
	"mistral3-yarn|--arch mistral3 --preset tiny --seed 11 --n-layer 3 --ctx 256 --rope-scaling yarn --rope-factor 8 --rope-orig-ctx 32 --yarn-beta-fast 16 --yarn-beta-slow 2 --yarn-log-mul 0.5"
	"mistral3-temp|--arch mistral3 --preset tiny --seed 13 --n-layer 3 --ctx 256 --rope-scaling yarn --rope-factor 8 --rope-orig-ctx 16 --attn-temp-scale 0.1"
	"llama-hd128|--arch llama --preset tiny --seed 8 --n-head 8 --n-head-kv 2 --head-dim 128"
	"olmo3|--arch olmo2 --preset tiny --seed 12 --n-layer 4 --window 16 --ctx 128 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32"
	"phi3|--arch phi3 --preset tiny --seed 21"
	"phi3-long|--arch phi3 --preset tiny --seed 21|--ctx 1024"
	"granite|--arch granite --preset tiny --seed 22"
	"qwen3moe|--arch qwen3moe --preset tiny --seed 23 --head-dim 128 --rope-base 1000000"
	"gpt-oss|--arch gpt-oss --preset tiny --seed 24"
	"qwen2moe|--arch qwen2moe --preset tiny --seed 25 --rope-base 1000000"
	"mixtral|--arch llama --preset tiny --seed 26 --n-expert 8 --n-expert-used 2"
	"olmoe|--arch olmoe --preset tiny --seed 27"
	"granitemoe|--arch granitemoe --preset tiny --seed 28"
	"starcoder2|--arch starcoder2 --preset tiny --seed 15"
	"exaone|--arch exaone --preset tiny --seed 16 --n-head 8 --n-head-kv 2"
	"command-r|--arch command-r --preset tiny --seed 17 --n-head-kv 2"
	"cohere2|--arch cohere2 --preset tiny --seed 18 --n-head-kv 2"
	"qwen2vl|--arch qwen2vl --preset tiny --seed 19 --rope-base 1000000"
	"qwen3vl|--arch qwen3vl --preset tiny --seed 20 --head-dim 128 --rope-base 5000000"
	"qwen3vlmoe|--arch qwen3vlmoe --preset tiny --seed 29 --head-dim 128 --rope-base 5000000"
	"phi2|--arch phi2 --preset tiny --seed 21"
	"llama-bias|--arch llama --preset tiny --seed 30 --biases"
	"internlm2|--arch internlm2 --preset tiny --seed 31"
	"stablelm|--arch stablelm --preset tiny --seed 32"
	"exaone4|--arch exaone4 --preset tiny --seed 33 --n-head-kv 2"
	"glm4|--arch glm4 --preset tiny --seed 34 --n-head-kv 2"
	"seed_oss|--arch seed_oss --preset tiny --seed 35 --n-head-kv 2 --head-dim 128"
	"ernie4_5|--arch ernie4_5 --preset tiny --seed 36 --biases --tie-embeddings"
	"hunyuan-dense|--arch hunyuan-dense --preset tiny --seed 37 --n-head-kv 2"
	"glm4moe|--arch glm4moe --preset tiny --seed 38 --n-head-kv 2"
	"glm4moe-mtp|--arch glm4moe --preset tiny --seed 39 --n-head-kv 2 --n-nextn 1"
	"glm4moe-qknorm|--arch glm4moe --preset tiny --seed 40 --n-head-kv 2 --qk-norm"
	"ernie4_5-moe|--arch ernie4_5-moe --preset tiny --seed 41 --biases --tie-embeddings"
	"hunyuan-moe|--arch hunyuan-moe --preset tiny --seed 42 --n-head-kv 2"
	"deepseek2|--arch deepseek2 --preset tiny --seed 43"
	"deepseek2-lite|--arch deepseek2 --preset tiny --seed 44 --n-lora-q 0 --gating softmax --n-expert-groups 0 --ctx 8192 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 2048 --yarn-log-mul 0.0707"
	"bailingmoe2|--arch bailingmoe2 --preset tiny --seed 46 --n-head-kv 2"
	"deepseek2-temp|--arch deepseek2 --preset tiny --seed 45 --attn-temp-scale 0.3 --attn-temp-len 16"
	"minimax-m2|--arch minimax-m2 --preset tiny --seed 47 --n-head-kv 2"
	"dots1|--arch dots1 --preset tiny --seed 48"
	"mistral4|--arch mistral4 --preset tiny --seed 49"
	"exaone-moe|--arch exaone-moe --preset tiny --seed 52 --n-head-kv 2"
	"afmoe|--arch afmoe --preset tiny --seed 53 --n-head-kv 2"
	"llama4|--arch llama4 --preset tiny --seed 54"
	"llama4-long|--arch llama4 --preset tiny --seed 55 --n-layer 8|--ctx 8448"
	"gemma4|--arch gemma4 --preset tiny --seed 56"
	"gemma4-moe|--arch gemma4 --preset tiny --seed 57 --n-expert 8 --n-expert-used 2 --n-ff-exp 256"
	"gemma4-e|--arch gemma4 --preset tiny --seed 58 --n-layer 8 --n-kv-shared 4 --n-embd-per-layer 64 --double-wide"
	"gemma3n|--arch gemma3n --preset tiny --seed 59"
)

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

cversion=$("$llamaref" cversion 2>/dev/null)
nversion=$("$llamaref" version --compact 2>/dev/null)
llamaref_info=$(jq -cn --argjson c "$cversion" --argjson n "$nversion" '{
	llama_cpp: $c.versions.llama_cpp, ggml: $c.versions.ggml, ggml_commit: $c.versions.ggml_commit,
	source_commit: $c.versions.source_commit, package: $c.versions.package, cpu_backend: $c.versions.cpu_backend,
	node_llama_cpp: $n.node_llama_cpp, llama_cpp_release: $n.llama_cpp_release.release,
	system_info: ($n.system_info | rtrimstr(" ")),
	run_flags: ["--full-logits","--kv-type","f32","--flash-attn","off","--threads","1","--n-predict","32"]
}')

# assemble.mjs MODE ...: the prompt, the greedy margins and CASE.json.
cat >"$tmp/assemble.mjs" <<'JS'
import fs from "node:fs";
const [mode, ...args] = process.argv.slice(2);
const readJSON = (p) => JSON.parse(fs.readFileSync(p, "utf8"));

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

// Shortest decimal that parses back to the same float32 (at most 9 digits).
function fmt32(x) {
	if (!Number.isFinite(x)) throw new Error(`non-finite value ${x}`);
	for (let p = 1; p <= 9; p++) {
		const s = Number(x.toPrecision(p));
		if (Math.fround(s) === x) return String(s);
	}
	throw new Error(`no 9-digit form for ${x}`);
}

if (mode === "synth-prompt") {
	// args: `folio show --json --max-array 0` output, seed, length.
	const [showPath, seed, n] = args;
	const md = readJSON(showPath).metadata;
	const types = md["tokenizer.ggml.token_type"];
	const bos = md["tokenizer.ggml.bos_token_id"];
	const special = new Set([bos, md["tokenizer.ggml.eos_token_id"], md["tokenizer.ggml.unknown_token_id"],
		md["tokenizer.ggml.eot_token_id"], md["tokenizer.ggml.padding_token_id"]]);
	// Eligible: NORMAL (1) and BYTE (6) tokens that are none of the special ids, in id order.
	const eligible = [];
	types.forEach((ty, id) => { if ((ty === 1 || ty === 6) && !special.has(id)) eligible.push(id); });
	const next = splitmix64(seed);
	const ids = [bos];
	while (ids.length < Number(n)) ids.push(eligible[Number(next() % BigInt(eligible.length))]);
	process.stdout.write(JSON.stringify(ids));
} else if (mode === "text-prompt") {
	// args: `llamaref tokenize` output, length.
	const [tokPath, n] = args;
	const src = readJSON(tokPath);
	const t = src.tokenization.with_special.ids;
	if (t[0] !== src.model.bos) throw new Error("text prompt does not start with BOS");
	if (t.length < Number(n)) throw new Error(`text gives ${t.length} tokens, want >= ${n}`);
	process.stdout.write(JSON.stringify(t.slice(0, Number(n))));
} else if (mode === "margin-tokens") {
	// args: run output. Prints the prompt followed by all greedy tokens but the last.
	const r = readJSON(args[0]);
	process.stdout.write(JSON.stringify(r.tokenization.eval_ids.concat(r.greedy.ids.slice(0, -1))));
} else if (mode === "margins") {
	// args: run output, --all-positions output. Prints the margin of each
	// greedy step: the chosen token's logit minus the best other logit
	// (negative if the batch evaluation ranks another token first).
	const r = readJSON(args[0]), a = readJSON(args[1]);
	const n = r.tokenization.eval_ids.length, g = r.greedy.ids;
	const m = g.map((id, i) => {
		let it = a.positions.items[n - 1 + i];
		if (it.position !== n - 1 + i) throw new Error("all-positions items out of order");
		if (i === g.length - 1) it = a.next_token; // the last position's top is there
		if (it.position !== n - 1 + i || it.top.length !== 2) throw new Error(`no top 2 at step ${i}`);
		const [t0, t1] = it.top;
		if (t0.id === id) return t0.logit - t1.logit;
		if (t1.id === id) return t1.logit - t0.logit;
		throw new Error(`greedy step ${i}: token ${id} is not in the batch top 2`);
	});
	process.stdout.write(JSON.stringify(m));
} else if (mode === "write") {
	// args: case name, synth flags ("" for none), model name ("" for none),
	// sha256, prompt seed ("" for none), run output, logits file, margins,
	// llamaref info, output path.
	const [name, synthFlags, modelName, sha, seed, refPath, binPath, marginsJSON, infoJSON, outPath] = args;
	const ref = readJSON(refPath);
	const buf = fs.readFileSync(binPath);
	const V = ref.model.n_vocab;
	if (buf.length !== 4 * V) throw new Error(`logits file has ${buf.length} bytes, want ${4 * V}`);
	const f32 = new Float32Array(buf.buffer, buf.byteOffset, V);
	ref.next_token.logits.forEach((v, i) => { if (Math.fround(v) !== f32[i]) throw new Error(`logit ${i} differs`); });
	const ctx = ref.context;
	if (ctx.kv_cache_type_k !== "F32" || ctx.kv_cache_type_v !== "F32" || ctx.flash_attention_resolved !== false || ctx.threads !== 1)
		throw new Error(`unexpected llama.cpp context ${JSON.stringify(ctx)}`);
	const info = JSON.parse(infoJSON);
	info.context = {
		context_size: ctx.context_size, batch_size: ctx.batch_size, threads: ctx.threads,
		flash_attention: ctx.flash_attention_resolved, kv_cache_type_k: ctx.kv_cache_type_k, kv_cache_type_v: ctx.kv_cache_type_v,
	};
	let synth = null;
	if (synthFlags !== "") {
		synth = {};
		const a = synthFlags.split(" ");
		for (let i = 0; i < a.length; i++) {
			const k = a[i].replace(/^--/, "");
			if (i + 1 < a.length && !a[i + 1].startsWith("--")) {
				const v = a[++i];
				synth[k] = k !== "type" && /^-?[0-9.]+(e[-+]?[0-9]+)?$/.test(v) ? Number(v) : v;
			} else synth[k] = true;
		}
	}
	const greedy = ref.greedy.ids;
	if (greedy.length !== 32) throw new Error(`greedy has ${greedy.length} tokens`);
	const margins = JSON.parse(marginsJSON).map((m) => Number(m.toPrecision(3)));
	const head = {
		case: name, synth, model: modelName === "" ? null : modelName, model_sha256: sha,
		prompt_seed: seed === "" ? null : Number(seed), tokens: ref.tokenization.eval_ids, vocab_size: V,
	};
	// One line; the logits are spliced in as formatted numbers.
	let out = JSON.stringify(head).slice(0, -1);
	out += `,"logits":[${Array.from(f32, fmt32).join(",")}],"greedy":${JSON.stringify(greedy)}`;
	out += `,"greedy_margins":${JSON.stringify(margins)},"llamaref":${JSON.stringify(info)}}\n`;
	JSON.parse(out);
	fs.writeFileSync(outPath, out);
} else throw new Error(`unknown mode ${mode}`);
JS
asm() { node "$tmp/assemble.mjs" "$@"; }

# reference NAME MODEL TOKENS: llama.cpp's run and greedy margins for the
# model, into $tmp/NAME.{ref.json,bin,margins}.
reference() {
	local name=$1 model=$2 tokens=$3
	"$llamaref" run "$model" --tokens "$tokens" --logits-bin "$tmp/$name.bin" "${run_flags[@]}" $extra \
		>"$tmp/$name.ref.json" 2>"$tmp/$name.err" || { cat "$tmp/$name.err" >&2; return 1; }
	"$llamaref" run "$model" --tokens "$(asm margin-tokens "$tmp/$name.ref.json")" "${margin_flags[@]}" $extra \
		>"$tmp/$name.all.json" 2>"$tmp/$name.err" || { cat "$tmp/$name.err" >&2; return 1; }
	asm margins "$tmp/$name.ref.json" "$tmp/$name.all.json" >"$tmp/$name.margins"
}

min_of() { jq 'min' "$1"; }

manifest_cases=()
# write_case NAME SYNTH_FLAGS MODEL_NAME MODEL SEED: CASE.json and its manifest entry.
write_case() {
	local name=$1 flags=$2 model_name=$3 model=$4 seed=$5 sha synth_cmd=
	sha=$(sha256sum "$model" | cut -d' ' -f1)
	asm write "$name" "$flags" "$model_name" "$sha" "$seed" "$tmp/$name.ref.json" "$tmp/$name.bin" \
		"$(cat "$tmp/$name.margins")" "$llamaref_info" "$here/$name.json"
	[[ -n $flags ]] && synth_cmd="go run . dev synth -o $name.gguf $flags"
	manifest_cases+=("$(jq -cn --arg name "$name" --arg synth "$synth_cmd" --arg sha "$sha" --arg seed "$seed" \
		--arg run "llamaref run MODEL.gguf --tokens TOKENS --logits-bin LOGITS.f32 ${run_flags[*]}${extra:+ $extra}" \
		--arg margin "llamaref run MODEL.gguf --tokens TOKENS+GREEDY[:31] ${margin_flags[*]}${extra:+ $extra}" \
		--argjson min "$(min_of "$tmp/$name.margins")" \
		'{case: $name, file: ($name + ".json"), synth_command: (if $synth == "" then null else $synth end),
		  model: (if $synth == "" then "stories260K.gguf" else null end), model_sha256: $sha,
		  prompt_seed: (if $seed == "" then null else ($seed | tonumber) end),
		  llamaref_command: $run, margins_command: $margin, min_greedy_margin: $min}')")
	echo "gen.sh: $name: min greedy margin $(min_of "$tmp/$name.margins")" >&2
}

for fam in "${families[@]}"; do
	family=${fam%%|*}
	base=${fam#*|}
	extra=
	if [[ $base == *"|"* ]]; then
		extra=${base#*|}
		base=${base%%|*}
	fi
	read -ra ftypes <<<"${family_types[$family]:-${types[*]}}"
	margin_types=()
	for t in f32 f16; do [[ " ${ftypes[*]} " == *" $t "* ]] && margin_types+=("$t"); done
	any=false
	for t in "${ftypes[@]}"; do selected "$family-$t" && any=true; done
	$any || continue
	for t in "${ftypes[@]}"; do
		"$tmp/folio" dev synth -o "$tmp/$family-$t.gguf" $base --type "$t" >/dev/null
	done
	"$tmp/folio" show --json --max-array 0 "$tmp/$family-f32.gguf" >"$tmp/$family.show.json"
	# The prompt seed: the first one whose F32 and F16 greedy margins all reach min_margin.
	seed=$prompt_seed_base
	while :; do
		tokens=$(asm synth-prompt "$tmp/$family.show.json" "$seed" "${family_prompt[$family]:-$n_prompt}")
		ok=true
		for t in "${margin_types[@]}"; do
			reference "$family-$t" "$tmp/$family-$t.gguf" "$tokens"
			if jq -e --argjson m "$min_margin" 'min < $m' "$tmp/$family-$t.margins" >/dev/null; then ok=false; break; fi
		done
		$ok && break
		seed=$((seed + 1))
		if ((seed - prompt_seed_base >= max_seed_tries)); then
			echo "gen.sh: $family: no prompt seed in $max_seed_tries tries gives greedy margins >= $min_margin" >&2
			exit 1
		fi
	done
	echo "gen.sh: $family: prompt seed $seed" >&2
	for t in "${ftypes[@]}"; do
		name=$family-$t
		selected "$name" || continue
		[[ " ${margin_types[*]} " == *" $t "* ]] || reference "$name" "$tmp/$name.gguf" "$tokens"
		# Record the flags as given, with --type after the family's base flags.
		write_case "$name" "$base --type $t" "" "$tmp/$name.gguf" "$seed"
	done
done

extra=
if selected stories260K; then
	"$llamaref" tokenize "$stories" --prompt "$stories_text" --compact >"$tmp/stories.tok.json" 2>/dev/null
	reference stories260K "$stories" "$(asm text-prompt "$tmp/stories.tok.json" "$n_prompt")"
	write_case stories260K "" stories260K.gguf "$stories" ""
fi

# MANIFEST.json lists every case: rewritten when all were regenerated, else
# the regenerated cases' entries replace theirs (or join the list).
if ((${#want[@]} > 0)); then
	printf '%s\n' "${manifest_cases[@]}" | jq -s --slurpfile m "$here/MANIFEST.json" '. as $new | $m[0] |
		.cases |= (map(. as $c | ([$new[] | select(.case == $c.case)] | first) // $c)
			+ [$new[] | select(.case as $n | ($m[0].cases | map(.case) | index($n)) == null)])' >"$tmp/MANIFEST.json"
	mv "$tmp/MANIFEST.json" "$here/MANIFEST.json"
else
	printf '%s\n' "${manifest_cases[@]}" | jq -s --argjson info "$llamaref_info" --arg text "$stories_text" \
		--argjson base "$prompt_seed_base" --argjson mm "$min_margin" '{
		what: "Reference outputs of llama.cpp (through ../shared/tools/llamaref), not folio output; regenerated by gen.sh in this folder. Per case: the logits of the last prompt position over the whole vocabulary and 32 greedy tokens, for a 64-token prompt, F32 KV cache, flash attention off, 1 thread.",
		prompt_rule: {
			synthetic: "BOS, then 63 ids: id = eligible[splitmix64(prompt_seed).next() mod len(eligible)], eligible = ids of NORMAL (1) and BYTE (6) tokens in id order minus the BOS, EOS, UNK, EOT and PAD ids",
			prompt_seed: ("per family (all its types share the prompt): the first seed from " + ($base|tostring) + " up for which all 32 greedy margins of its F32 and F16 models (those it has) are >= " + ($mm|tostring)),
			stories260K: "the first 64 ids (BOS included) of `llamaref tokenize stories260K.gguf --prompt stories_text` (with_special)",
			stories_text: $text
		},
		greedy_margins: "per greedy step, the chosen token logit minus the best other logit, from llama.cpp evaluating prompt + greedy[:31] in one batch (margins_command)",
		llamaref: $info,
		cases: .
	}' >"$here/MANIFEST.json"
fi
echo "gen.sh: done in ${SECONDS}s" >&2
