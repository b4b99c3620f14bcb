package cmd

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"folio/models/gguf"
	"folio/models/synth"
)

func newSynthCmd() *cobra.Command {
	var (
		arch, preset, typeName, vocabPath, out, name, pooling, gating string
		seed                                                          uint64
		tie, noTie                                                    bool
		ropeBase, eps, attnTemp                                       float32
		biases, qkNorm, doubleWide                                    bool
		rope                                                          synth.RopeScaling
		shape                                                         = map[string]*int{}
	)
	cmd := &cobra.Command{
		Use:   "synth -o OUT.gguf",
		Short: "Write a random-weight model of any architecture folio runs",
		Long: "synth writes a GGUF model (" + strings.Join(synth.Archs, ", ") + ") with deterministic random weights and a\n" +
			"working vocabulary, loadable by folio and llama.cpp. Presets give real models'\n" +
			"shapes (" + strings.Join(synth.PresetNames(), ", ") + ") in their own architecture, which\n" +
			"--arch overrides; the tiny preset of an architecture has its family's features\n" +
			"(phi3: partial rotary, longrope; granite: multipliers; the MoE families: experts);\n" +
			"the shape flags override them (--n-expert 8 --n-expert-used 2 makes a llama Mixtral).\n" +
			"Without --vocab the vocabulary is byte-level (SentencePiece byte fallback), or a\n" +
			"small WordPiece one for bert and nomic-bert;\n" +
			"--vocab copies the tokenizer of another GGUF file and takes its size.\n" +
			"The same flags always give the same bytes, and the same --seed gives the same\n" +
			"weights whatever --type (up to quantization).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("synth: no output file; pass -o OUT.gguf")
			}
			cfg, err := synth.ArchPreset(arch, preset)
			if err != nil {
				return err
			}
			cfg.Seed, cfg.Name = seed, name
			if pooling != "" {
				cfg.Pooling = pooling
			}
			if cfg.Type, err = gguf.ParseTensorType(typeName); err != nil {
				return err
			}
			if vocabPath != "" {
				if cfg.Vocab, err = synth.LoadVocab(vocabPath); err != nil {
					return err
				}
				cfg.VocabSize = 0 // the file's own size unless --vocab-size asks for more
			}
			flags := cmd.Flags()
			for flag, dst := range map[string]*int{"n-embd": &cfg.Embd, "n-layer": &cfg.Layers,
				"n-head": &cfg.Heads, "n-head-kv": &cfg.HeadsKV, "head-dim": &cfg.HeadDim,
				"n-ff": &cfg.FFN, "ctx": &cfg.Ctx, "vocab-size": &cfg.VocabSize, "window": &cfg.Window,
				"rope-dims": &cfg.RopeDims, "n-expert": &cfg.Experts, "n-expert-used": &cfg.ExpertsUsed,
				"n-ff-exp": &cfg.ExpertFFN, "n-ff-shexp": &cfg.SharedFFN, "n-nextn": &cfg.NextN,
				"n-lora-q": &cfg.QLora, "attn-temp-len": &cfg.AttnTempLen, "n-expert-groups": &cfg.ExpertGroups, "n-group-used": &cfg.GroupsUsed,
				"n-embd-per-layer": &cfg.PLEDim, "n-kv-shared": &cfg.SharedKV} {
				if flags.Changed(flag) {
					*dst = *shape[flag]
				}
			}
			if tie && noTie {
				return fmt.Errorf("synth: --tie-embeddings and --no-tie-embeddings both given")
			}
			if tie || noTie {
				cfg.Tied = tie
			}
			if flags.Changed("rope-base") {
				cfg.RopeBase = ropeBase
			}
			if flags.Changed("eps") {
				cfg.NormEps = eps
			}
			if rope != (synth.RopeScaling{}) {
				cfg.Rope = rope
			}
			cfg.AttnTemp = attnTemp
			cfg.Biases = biases
			cfg.QKNorm = qkNorm
			cfg.DoubleWide = doubleWide
			if gating != "" {
				cfg.Gating = gating
			}
			return runSynth(cmd, cfg, out)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&out, "output", "o", "", "file to write (required)")
	f.StringVar(&arch, "arch", "", "architecture (default the preset's; tiny's is llama): "+strings.Join(synth.Archs, ", "))
	f.StringVar(&pooling, "pooling", "", "embedding models' pooling: mean (default), cls, last, none")
	f.StringVar(&preset, "preset", "tiny", "shapes: "+strings.Join(synth.PresetNames(), ", "))
	f.StringVar(&typeName, "type", "f16", "type of the 2-D weights: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs mxfp4")
	f.StringVar(&vocabPath, "vocab", "", "GGUF file whose tokenizer.* metadata to copy (default: byte-level vocabulary)")
	f.Uint64Var(&seed, "seed", 1, "seed of the random weights")
	f.StringVar(&name, "name", "", "general.name (default: derived from the shapes)")
	for _, s := range []struct{ flag, usage string }{
		{"n-embd", "hidden size"}, {"n-layer", "blocks"}, {"n-head", "query heads"},
		{"n-head-kv", "key/value heads"}, {"head-dim", "per-head size (default n-embd/n-head)"},
		{"n-ff", "feed-forward size"}, {"ctx", "context length"},
		{"rope-dims", "leading elements of each head that rotate (default the whole head)"},
		{"vocab-size", "tokens; pads the vocabulary with [PAD<n>] tokens"},
		{"window", "sliding window of the windowed layers of gemma2, gemma3 (0: none), gemma3n, gemma4, olmo2 (OLMo 3; 0: none) and gpt-oss"},
		{"n-expert", "experts of a mixture of experts (llama with experts is Mixtral; granite, and the MoE families)"},
		{"n-expert-used", "experts chosen per token"},
		{"n-ff-exp", "an expert's feed-forward size (qwen3moe, qwen2moe, gpt-oss; the others' experts are n-ff wide)"},
		{"n-ff-shexp", "the shared expert's feed-forward size (qwen2moe, granitemoe, glm4moe: a multiple of n-ff-exp; 0: none)"},
		{"n-nextn", "multi-token-prediction layers after the others, as GLM-4.5's files have one (glm4moe)"},
		{"n-lora-q", "the queries' LoRA rank (deepseek2; 0: one attn_q, as DeepSeek-V2-Lite's)"},
		{"n-expert-groups", "groups of experts of which n-group-used are searched (deepseek2; 0 or 1: none)"},
		{"n-group-used", "expert groups searched for a token's experts (deepseek2)"},
		{"n-embd-per-layer", "each layer's per-layer embedding size (gemma4: E2B's and E4B's; gemma3n's is llama.cpp's 256)"},
		{"n-kv-shared", "last layers that attend earlier layers' K/V and write none (gemma4: E2B's and E4B's; gemma3n's are llama.cpp's, from the 20th on)"},
		{"attn-temp-len", "deepseek2's attention.temperature_length, the positions a step of --attn-temp-scale spans (default the context length)"},
	} {
		shape[s.flag] = f.Int(s.flag, 0, s.usage+" (overrides the preset)")
	}
	f.BoolVar(&tie, "tie-embeddings", false, "no output.weight: token_embd is the output matrix")
	f.BoolVar(&noTie, "no-tie-embeddings", false, "write a separate output.weight")
	f.StringVar(&gating, "gating", "", "how deepseek2's experts are weighted: softmax (V2's) or sigmoid with a selection bias (V3's, the tiny preset's)")
	f.BoolVar(&doubleWide, "double-wide", false, "the shared layers' feed-forwards twice as wide, a feed_forward_length per layer (gemma4)")
	f.BoolVar(&qkNorm, "qk-norm", false, "Q and K normed per head, as GLM-4.5's and GLM-4.6's files have them (glm4moe)")
	f.BoolVar(&biases, "biases", false, "a bias on Q, K, V, the output projection and the feed-forward (llama, exaone, internlm2)")
	f.Float32Var(&ropeBase, "rope-base", 0, "RoPE frequency base (overrides the preset)")
	f.Float32Var(&eps, "eps", 0, "RMS norm epsilon (default 1e-5 llama and mistral3, 1e-6 the others)")
	f.StringVar(&rope.Type, "rope-scaling", "", "rope.scaling.type: yarn (default none)")
	f.Float32Var(&rope.Factor, "rope-factor", 0, "rope.scaling.factor: how many times the original context")
	f.IntVar(&rope.OrigCtx, "rope-orig-ctx", 0, "rope.scaling.original_context_length (yarn; default the context length)")
	f.Float32Var(&rope.AttnFactor, "rope-attn-factor", 0, "rope.scaling.attn_factor (default 1)")
	f.Float32Var(&rope.BetaFast, "yarn-beta-fast", 0, "rope.scaling.yarn_beta_fast (mistral3 reads it; default 32)")
	f.Float32Var(&rope.BetaSlow, "yarn-beta-slow", 0, "rope.scaling.yarn_beta_slow (mistral3 reads it; default 1)")
	f.Float32Var(&rope.LogMul, "yarn-log-mul", 0, "rope.scaling.yarn_log_multiplier (mistral3 reads it; default 0)")
	f.Float32Var(&attnTemp, "attn-temp-scale", 0, "mistral3's and deepseek2's attention.temperature_scale (Ministral 3, Mistral Large 3): queries scaled by 1 + t·ln(⌊pos/original context⌋ + 1); default none")
	return cmd
}

func runSynth(cmd *cobra.Command, cfg synth.Config, out string) error {
	m, err := synth.New(cfg)
	if err != nil {
		return err
	}
	reportFallbacks(cmd, m)
	start := time.Now()
	if err := m.WriteFile(out); err != nil {
		return err
	}
	c := m.Config
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %s, %.1fM params, %s weights, vocab %d, %d layers x %d, in %.1fs\n",
		out, c.Arch, float64(m.Params())/1e6, c.Type, c.VocabSize, c.Layers, c.Embd, time.Since(start).Seconds())
	return nil
}

// reportFallbacks says on stderr which weights could not take the asked
// type, one line per row length, as llama.cpp's quantizer does per tensor.
func reportFallbacks(cmd *cobra.Command, m *synth.Model) {
	type key struct {
		rowLen int
		typ    gguf.TensorType
	}
	groups := map[key][]string{}
	for _, fb := range m.Fallbacks {
		k := key{fb.RowLen, fb.Type}
		groups[k] = append(groups[k], fb.Tensor)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].rowLen < keys[j].rowLen })
	for _, k := range keys {
		names := groups[k]
		shown := strings.Join(names[:min(3, len(names))], ", ")
		if len(names) > 3 {
			shown += fmt.Sprintf(", ... (%d in all)", len(names))
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "synth: row length %d is not a multiple of the %s block size %d: %s written as %s\n",
			k.rowLen, m.Config.Type, m.Config.Type.BlockSize(), shown, k.typ)
	}
}
