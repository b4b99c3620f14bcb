// Package synth writes random-weight models of every architecture folio
// runs (Archs: the llama family with smollm3, olmo2 and mistral3, Gemma 2,
// 3, 3n and 4, Phi-3, Granite, the mixtures of experts and the embedding
// models)
// as GGUF files that llama.cpp loads: the tensor names, shapes and
// metadata keys are llama.cpp's, the vocabulary works (a byte-level
// SentencePiece fallback, a small WordPiece one for BERT, or the tokenizer
// of any GGUF file), and the weights are a deterministic function of the
// seed.
//
// Determinism is per value: element j of row r of a tensor is drawn from a
// generator seeded by (seed, tensor name, r), and the F32 value does not
// depend on the output type. A model written as F32 and the same model
// written as Q8_0 are therefore the same model up to quantization, and rows
// can be generated in parallel without changing a byte.
//
// Tensors are generated and quantized a batch of rows at a time while the
// file is written, so memory stays bounded whatever the model size.
package synth

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"folio/models/gguf"
)

// ErrConfig is wrapped by New for a configuration that cannot make a model.
var ErrConfig = errors.New("synth: bad model configuration")

// Archs lists the architectures New can write.
var Archs = []string{"llama", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "granite", "bert", "nomic-bert", "smollm3", "olmo2", "mistral3", "gemma-embedding", "qwen3moe", "gpt-oss", "qwen2moe", "olmoe", "granitemoe", "starcoder2", "exaone", "command-r", "cohere2", "qwen2vl", "qwen3vl", "qwen3vlmoe", "phi2", "internlm2", "stablelm", "exaone4", "glm4", "seed_oss", "ernie4_5", "hunyuan-dense", "glm4moe", "ernie4_5-moe", "hunyuan-moe", "deepseek2", "bailingmoe2", "minimax-m2", "dots1", "mistral4", "exaone-moe", "afmoe", "llama4", "gemma4", "gemma3n"}

// Config describes a synthetic model. Zero NormEps, HeadDim and VocabSize
// take defaults (see New).
type Config struct {
	Arch      string // one of Archs
	Name      string // general.name; empty: derived from the shapes
	Embd      int    // hidden size, n_embd
	Layers    int    // blocks, n_layer
	Heads     int    // query heads
	HeadsKV   int    // key/value heads; Heads must be a multiple
	HeadDim   int    // per-head size; 0: Embd/Heads
	FFN       int    // feed-forward hidden size
	Ctx       int    // training context length written to the metadata
	VocabSize int    // tokens; 0: the vocabulary's own count, else padded up to it
	Tied      bool   // no output.weight: token_embd is also the output matrix
	RopeBase  float32
	// RopeScale is the linear rope scaling factor (rope.scaling.factor);
	// 0: no scaling. Gemma 3 applies it on its global layers only.
	RopeScale float32
	Rope      RopeScaling // yarn's rope.scaling.*; zero: none (RopeScale is linear's)
	AttnTemp  float32     // mistral3's and deepseek2's attention.temperature_scale (Ministral 3, Mistral Large 3); 0: not written
	// AttnTempLen is deepseek2's attention.temperature_length, written
	// with AttnTemp (0: Ctx).
	AttnTempLen int
	RopeAlpha   float32 // hunyuan-dense's rope.scaling.alpha (the NTK alpha); 0: not written
	// Biases writes a bias on Q, K, V, the output projection and the
	// feed-forward's three, which llama.cpp's llama, exaone and internlm2
	// take where a file has them (llama-arch conversions of such models);
	// on ernie4_5, Q, K, V and the output projection's, whose last
	// llama.cpp loads and does not apply.
	Biases  bool
	NormEps float32         // RMS norm epsilon; 0: 1e-5 for llama and mistral3, 1e-6 for the others
	Type    gguf.TensorType // type of the 2-D weights; norms and biases stay F32
	Seed    uint64
	Vocab   *Vocab // nil: the byte-level vocabulary (ByteVocab); WordPieceVocab for bert and nomic-bert
	Pooling string // embedding models' pooling_type: "mean" (default), "cls", "last" or "none"
	Dense   int    // gemma-embedding: width of the projections after pooling (dense_2, dense_3); 0: none

	// attention.sliding_window: gemma's sliding layers' (0: gemma3 has
	// none, gemma2 4096), OLMo 3's (olmo2.go; 0: none), phi3's as its
	// converter writes it (0: none; llama.cpp ignores it for phi3).
	Window      int
	AttnSoftcap float32 // gemma2's attn_logit_softcapping; 0: 50
	LogitCap    float32 // final_logit_softcapping; 0: gemma2 30, gemma3 none
	RopeDims    int     // leading elements of each head that rotate; 0: the whole head
	// gemma4: the windowed layers' head size, K/V heads and rotated
	// elements (gemma4.go); 0 for every other family
	SWAHeadDim, SWAHeadsKV, SWARopeDims int
	// gemma4 E2B's and E4B's: per-layer embeddings of PLEDim, the last
	// SharedKV layers attending earlier layers' K/V, their feed-forwards
	// twice as wide with DoubleWide (gemma4.go); gemma3n's, fixed by
	// llama.cpp, are filled in (gemma3n.go); 0 and false elsewhere
	PLEDim, SharedKV int
	DoubleWide       bool
	// phi3 (longrope): OrigCtx > 0 is the context the model was trained at
	// before longrope stretched it to Ctx; the file then has
	// rope_factors_long and rope_factors_short and the attention factor
	// the converter computes from Ctx/OrigCtx.
	OrigCtx int
	// Mixture of experts (moe.go): Experts experts of a feed-forward of
	// ExpertFFN (llama's, olmoe's and granite's: FFN), ExpertsUsed of
	// them chosen per token, and a shared expert of SharedFFN (qwen2moe,
	// granitemoe; 0: none). llama and granite with Experts > 0 are
	// Mixtral and Granite's MoE.
	Experts, ExpertsUsed, ExpertFFN, SharedFFN int
	// glm4moe (moe.go): the first DenseLead layers dense, the experts'
	// weights times ExpertScale (0: not written).
	DenseLead   int
	ExpertScale float32
	// MoEEvery > 0: only every MoEEvery-th layer has experts, the others
	// a dense feed-forward (llama4's interleave_moe_layer_step).
	MoEEvery int
	// NextN multi-token-prediction layers follow the Layers others (a
	// whole layer each, its nextn.* tensors besides), as GLM-4.5's files
	// have one; block_count counts them. glm4moe's alone.
	NextN int
	// QKNorm: Q and K normed per head, as GLM-4.5's and GLM-4.6's files
	// have them and GLM-4.5-Air's do not (glm4moe's alone).
	QKNorm bool
	// deepseek2 (deepseek2.go): the queries' LoRA rank (0: attn_q), the
	// K/V latent's rank, the values' width a head, the experts' groups
	// (0: none) and how many are searched, and the experts' gating,
	// "softmax" or "sigmoid" (the latter with a selection bias).
	QLora, KVLora, VHeadDim  int
	ExpertGroups, GroupsUsed int
	Gating                   string
	// granite's multipliers (0 leaves the key out): token embeddings ×
	// EmbedScale, attention scores × AttnScale (instead of 1/√head size),
	// each block's attention and feed-forward outputs × ResidualScale,
	// logits ÷ LogitScale (command-r: logits × LogitScale, its logit_scale).
	EmbedScale, AttnScale, ResidualScale, LogitScale float32
}

// presets are shapes of real models (weights stay random). Type is left to
// the caller; the zero value is F32.
var presets = map[string]Config{
	// A few MB; every row length is a multiple of 256, so K-quants apply to all.
	"tiny": {Arch: "llama", Embd: 256, Layers: 2, Heads: 4, HeadsKV: 2, FFN: 512,
		Ctx: 2048, VocabSize: 512, RopeBase: 10000},
	// SmolLM-135M: n_embd 576 is not a multiple of 256, so K-quants fall back.
	"smollm-135m": {Arch: "llama", Embd: 576, Layers: 30, Heads: 9, HeadsKV: 3, FFN: 1536,
		Ctx: 8192, VocabSize: 49152, Tied: true, RopeBase: 10000},
	// Llama 3.2 1B, without the llama3 RoPE scaling (ctx 8192, not 131072).
	"llama-1b": {Arch: "llama", Embd: 2048, Layers: 16, Heads: 32, HeadsKV: 8, FFN: 8192,
		Ctx: 8192, VocabSize: 128256, Tied: true, RopeBase: 500000},
	// SmolLM3-3B: rope skipped on every fourth layer, tied output.
	"smollm3-3b": {Arch: "smollm3", Embd: 2048, Layers: 36, Heads: 16, HeadsKV: 4, FFN: 11008,
		Ctx: 65536, VocabSize: 128256, Tied: true, RopeBase: 5000000},
	// Llama 3.1 8B's shape (untied output), without the llama3 RoPE scaling.
	"llama-8b": {Arch: "llama", Embd: 4096, Layers: 32, Heads: 32, HeadsKV: 8, FFN: 14336,
		Ctx: 8192, VocabSize: 128256, RopeBase: 500000},
	// all-MiniLM-L6-v2 (BERT, mean pooling).
	"all-minilm": {Arch: "bert", Embd: 384, Layers: 6, Heads: 12, HeadsKV: 12, FFN: 1536,
		Ctx: 512, VocabSize: 30522, Pooling: "mean"},
	// nomic-embed-text v1.5 (rope base 1000, SwiGLU, mean pooling).
	"nomic-embed-text": {Arch: "nomic-bert", Embd: 768, Layers: 12, Heads: 12, HeadsKV: 12, FFN: 3072,
		Ctx: 2048, VocabSize: 30522, RopeBase: 1000, Pooling: "mean"},
	"gemma2-2b": gemma2_2B,
	"gemma3-1b": gemma3_1B,
	"gemma3-4b": gemma3_4B,
	// Phi-4-mini (3.8B): partial rotary (96 of 128), longrope from 4k to 128k.
	"phi4-mini": {Arch: "phi3", Embd: 3072, Layers: 32, Heads: 24, HeadsKV: 8, FFN: 8192,
		Ctx: 131072, OrigCtx: 4096, RopeDims: 96, Window: 262144, VocabSize: 200064, Tied: true, RopeBase: 10000},
	// Granite 3.3 2B with its multipliers.
	"granite-3.3-2b": {Arch: "granite", Embd: 2048, Layers: 40, Heads: 32, HeadsKV: 8, FFN: 8192,
		Ctx: 131072, VocabSize: 49159, Tied: true, RopeBase: 10000000,
		EmbedScale: 12, AttnScale: 0.015625, ResidualScale: 0.22, LogitScale: 8},

	"embeddinggemma-300m": embeddingGemma300M,
	"qwen3moe-mini":       qwen3moeMini,
	"deepseek2-mini":      deepseek2Mini,
	"gpt-oss-20b":         gptoss20B,
	"gpt-oss-mini":        gptossMini,
}

// tinyFamilies change the tiny preset for the families whose layers need
// more than its shape to be exercised (a sliding window shorter than a
// test prompt, a global layer after the sliding ones; phi3's partial
// rotary and longrope; granite's multipliers).
var tinyFamilies = map[string]func(*Config){
	"gemma":           gemmaTiny,
	"gemma2":          gemma2Tiny,
	"gemma3":          gemma3Tiny,
	"gemma-embedding": gemmaEmbeddingTiny,
	// Four layers, so that the fourth attends without rope.
	"smollm3":      func(c *Config) { c.Layers = 4 },
	"phi3":         phi3Tiny,
	"granite":      graniteTiny,
	"qwen3moe":     qwen3moeTiny,
	"gpt-oss":      gptossTiny,
	"qwen2moe":     qwen2moeTiny,
	"qwen3vlmoe":   qwen3moeTiny,
	"olmoe":        olmoeTiny,
	"glm4moe":      glm4moeTiny,
	"ernie4_5-moe": ernieMoETiny,
	"hunyuan-moe":  hunyuanMoETiny,
	"deepseek2":    deepseek2Tiny,
	"mistral4":     deepseek2Tiny,
	"bailingmoe2":  bailingMoE2Tiny,
	"minimax-m2":   minimaxM2Tiny,
	"dots1":        dots1Tiny,
	"exaone-moe":   exaoneMoETiny,
	"afmoe":        afmoeTiny,
	"llama4":       llama4Tiny,
	"gemma4":       gemma4Tiny,
	"gemma3n":      gemma3nTiny,

	"granitemoe": granitemoeTiny,
	"starcoder2": starcoder2Tiny,
	"command-r":  commandRTiny,
	"cohere2":    cohere2Tiny,
	"phi2":       phi2Tiny,
	"stablelm":   stablelmTiny,
	"glm4":       glm4Tiny,
	// Hunyuan's NTK alpha raises the rope base (1000 in its releases).
	"hunyuan-dense": func(c *Config) { c.RopeAlpha = 1000 },
}

// PresetNames returns the preset names, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(presets))
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Preset returns the named preset's configuration.
func Preset(name string) (Config, error) {
	c, ok := presets[name]
	if !ok {
		return Config{}, fmt.Errorf("%w: unknown preset %q (known: %v)", ErrConfig, name, PresetNames())
	}
	return c, nil
}

// ArchPreset is the named preset as a model of arch (the preset's own
// architecture when arch is empty). The tiny preset takes the family's
// changes, if it has any.
func ArchPreset(arch, name string) (Config, error) {
	c, err := Preset(name)
	if err != nil || arch == "" {
		return c, err
	}
	c.Arch = arch
	if edit := tinyFamilies[arch]; name == "tiny" && edit != nil {
		edit(&c)
	}
	return c, nil
}

// Tiny is the tiny preset of arch with weights of typ drawn from seed,
// after edits (if any) change the configuration: the model the tests and
// `folio gpu selftest` load.
func Tiny(arch string, typ gguf.TensorType, seed uint64, edits ...func(*Config)) (*Model, error) {
	cfg, err := ArchPreset(arch, "tiny")
	if err != nil {
		return nil, err
	}
	cfg.Type, cfg.Seed = typ, seed
	for _, e := range edits {
		if e != nil {
			e(&cfg)
		}
	}
	return New(cfg)
}

// WriteTiny writes Tiny(arch, typ, seed, edits...) to path.
func WriteTiny(path, arch string, typ gguf.TensorType, seed uint64, edits ...func(*Config)) error {
	m, err := Tiny(arch, typ, seed, edits...)
	if err != nil {
		return err
	}
	return m.WriteFile(path)
}

// fileTypes maps a weight type to llama.cpp's general.file_type (enum
// llama_ftype) for a file whose 2-D weights all have that type.
var fileTypes = map[gguf.TensorType]uint32{
	gguf.TypeF32: 0, gguf.TypeF16: 1, gguf.TypeQ4_0: 2, gguf.TypeQ4_1: 3,
	gguf.TypeQ8_0: 7, gguf.TypeQ5_0: 8, gguf.TypeQ5_1: 9, gguf.TypeQ2_K: 10,
	gguf.TypeQ3_K: 11, // Q3_K_S
	gguf.TypeQ4_K: 14, // Q4_K_S
	gguf.TypeQ5_K: 16, // Q5_K_S
	gguf.TypeQ6_K: 18, gguf.TypeBF16: 32,
	gguf.TypeIQ4_NL: 25, gguf.TypeIQ4_XS: 30,
	gguf.TypeMXFP4: 38, // MXFP4_MOE: gpt-oss files have it
}

// Fallback records a 2-D weight written in another type than Config.Type
// because its row length is not a multiple of that type's block size.
type Fallback struct {
	Tensor string
	RowLen int
	Type   gguf.TensorType // the type used instead
}

// Model is a planned synthetic model: its metadata and the recipe of every
// tensor. Nothing is generated until WriteFile.
type Model struct {
	Config    Config // with defaults filled in
	Fallbacks []Fallback

	kv      []gguf.KV
	tensors []tensorSpec
}

// New checks cfg, fills in defaults and plans the model.
func New(cfg Config) (*Model, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	vocabKV, err := c.Vocab.padded(c.VocabSize)
	if err != nil {
		return nil, err
	}
	m := &Model{Config: c}
	m.planTensors()
	m.planMetadata(vocabKV)
	return m, nil
}

func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if !slices.Contains(Archs, c.Arch) {
		return bad("unknown architecture %q (known: %v)", c.Arch, Archs)
	}
	if c.Biases && c.Arch != "llama" && c.Arch != "exaone" && c.Arch != "internlm2" && c.Arch != "ernie4_5" && c.Arch != "ernie4_5-moe" ||
		c.Biases && c.hasMoE() && c.Arch != "ernie4_5-moe" {
		return bad("biases on every projection (--biases) are dense llama's, exaone's, internlm2's and ernie4_5's (and on ernie4_5-moe's attention), not %s's", c.Arch)
	}
	if c.AttnTemp < 0 || c.AttnTemp != 0 && c.Arch != "mistral3" && !c.latent() {
		return bad("an attention temperature of %v on %s: it is mistral3's and deepseek2's, and not negative", c.AttnTemp, c.Arch)
	}
	if c.AttnTempLen < 0 || c.AttnTempLen != 0 && (!c.latent() || c.AttnTemp == 0) {
		return bad("an attention temperature length of %d: deepseek2's, with a temperature, not negative", c.AttnTempLen)
	}
	if c.Embd <= 0 || c.Layers <= 0 || c.Heads <= 0 || c.HeadsKV <= 0 || c.FFN <= 0 || c.Ctx <= 0 {
		return bad("embd %d, layers %d, heads %d, kv heads %d, ffn %d and ctx %d must all be positive",
			c.Embd, c.Layers, c.Heads, c.HeadsKV, c.FFN, c.Ctx)
	}
	if c.HeadDim == 0 {
		if c.Embd%c.Heads != 0 {
			return bad("embd %d is not a multiple of heads %d; set the head size (--head-dim)", c.Embd, c.Heads)
		}
		c.HeadDim = c.Embd / c.Heads
	}
	if c.HeadDim <= 0 || c.HeadDim%2 != 0 {
		return bad("head size %d must be positive and even (RoPE rotates pairs)", c.HeadDim)
	}
	if c.Heads%c.HeadsKV != 0 {
		return bad("heads %d is not a multiple of kv heads %d", c.Heads, c.HeadsKV)
	}
	if err := c.checkFamily(); err != nil {
		return Config{}, err
	}
	if err := c.checkMoE(); err != nil {
		return Config{}, err
	}
	if err := c.gemma4Check(); err != nil {
		return bad("%v", err)
	}
	if c.RopeBase == 0 {
		c.RopeBase = 10000
	}
	if c.RopeScale != 0 && !(c.RopeScale >= 1e-3 && c.RopeScale <= 1e6) {
		return bad("rope scaling factor %v must be 0 (none) or from 0.001 to 1000000", c.RopeScale)
	}
	if isGemma(c.Arch) {
		if err := c.gemmaDefaults(); err != nil {
			return bad("%v", err)
		}
	}
	if c.Arch == "gemma" && !c.Tied {
		return bad("gemma ties its output to the token embeddings (llama.cpp loads no output.weight); drop --no-tie-embeddings")
	}
	if c.RopeDims == 0 {
		c.RopeDims = c.HeadDim
	}
	if c.RopeDims < 0 || c.RopeDims > c.HeadDim || c.RopeDims%2 != 0 {
		return bad("rope dims %d must be even and at most the head size %d", c.RopeDims, c.HeadDim)
	}
	if err := c.checkMLA(); err != nil {
		return Config{}, err
	}
	if c.OrigCtx < 0 || c.OrigCtx > c.Ctx || (c.OrigCtx > 0 && c.Arch != "phi3") {
		return bad("original context %d: longrope is phi3's, from a context of 1 to ctx %d", c.OrigCtx, c.Ctx)
	}
	if c.Window < 0 || (c.Window > 0 && !isGemma(c.Arch) && c.Arch != "phi3" && c.Arch != "olmo2" && c.Arch != "gpt-oss" && c.Arch != "cohere2" && c.Arch != "exaone-moe" && c.Arch != "afmoe" && c.Arch != "gemma4") {
		return bad("sliding window %d: only gemma, olmo2, phi3, gpt-oss, cohere2, exaone-moe and afmoe files carry one, never negative", c.Window)
	}
	if c.Arch == "gpt-oss" && c.Window <= 0 {
		return bad("gpt-oss needs a sliding window (--window; gpt-oss uses 128)")
	}
	if c.NormEps == 0 {
		c.NormEps = 1e-5
		if c.Arch != "llama" && c.Arch != "mistral3" && c.Arch != "starcoder2" && c.Arch != "command-r" && c.Arch != "cohere2" && c.Arch != "phi2" && c.Arch != "stablelm" { // their LayerNorms: 1e-5
			c.NormEps = 1e-6
		}
		if c.Arch == "bert" || c.Arch == "nomic-bert" {
			c.NormEps = 1e-12 // LayerNorm's, as BERT's config.json has it
		}
	}
	if c.Dense != 0 && (c.Arch != "gemma-embedding" || c.Dense < 0) {
		return bad("dense projections of %d: only gemma-embedding has them, and their width must be positive", c.Dense)
	}
	if embeds(c.Arch) {
		if c.Pooling == "" {
			c.Pooling = "mean"
		}
		if _, ok := poolings[c.Pooling]; !ok {
			return bad("pooling %q: use mean, cls, last or none", c.Pooling)
		}
	} else if c.Pooling != "" {
		return bad("pooling %q is for embedding models; %s generates text", c.Pooling, c.Arch)
	}
	if _, ok := fileTypes[c.Type]; !ok || !gguf.CanQuantize(c.Type) {
		return bad("cannot write weights as %v; choose one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs, mxfp4", c.Type)
	}
	if c.Vocab == nil {
		c.Vocab = ByteVocab()
		if c.Arch == "bert" || c.Arch == "nomic-bert" {
			c.Vocab = WordPieceVocab()
		}
	}
	if c.VocabSize == 0 {
		c.VocabSize = c.Vocab.Len()
	}
	if c.VocabSize < c.Vocab.Len() {
		return bad("vocab size %d is smaller than the vocabulary's %d tokens", c.VocabSize, c.Vocab.Len())
	}
	if c.Name == "" {
		// Not "phi3": llama.cpp gives the tokens of a model so named the
		// attributes of Phi-3's, and fails unless "<|endoftext|>" is one.
		c.Name = fmt.Sprintf("synth-%s-%dx%d-%s", strings.Replace(c.Arch, "phi3", "phi", 1), c.Layers, c.Embd, c.Type)
	}
	return c, nil
}

// planMetadata lays out the keys in the order llama.cpp's converter writes
// them: general, architecture hyperparameters, tokenizer.
func (m *Model) planMetadata(vocabKV []gguf.KV) {
	c := m.Config
	a := c.Arch + "."
	set := func(k string, v any) { m.kv = append(m.kv, gguf.KV{Key: k, Value: v}) }
	set("general.architecture", c.Arch)
	set("general.name", c.Name)
	set("general.file_type", fileTypes[c.Type])
	set("general.quantization_version", uint32(2))
	set(a+"vocab_size", uint32(c.VocabSize))
	set(a+"context_length", uint32(c.Ctx))
	set(a+"embedding_length", uint32(c.Embd))
	set(a+"block_count", uint32(c.Layers+c.NextN))
	if c.DoubleWide || c.Arch == "gemma3n" { // gemma3n's converter writes its list of widths
		set(a+"feed_forward_length", gemma4FFNs(c))
	} else {
		set(a+"feed_forward_length", uint32(c.FFN))
	}
	set(a+"attention.head_count", uint32(c.Heads))
	if c.Arch == "gemma4" {
		set(a+"attention.head_count_kv", gemma4KVHeads(c))
	} else {
		set(a+"attention.head_count_kv", uint32(c.HeadsKV))
	}
	if c.latent() {
		deepseek2Metadata(c, set)
	} else if c.HeadDim*c.Heads != c.Embd || isGemma(c.Arch) {
		set(a+"attention.key_length", uint32(c.HeadDim))
		set(a+"attention.value_length", uint32(c.HeadDim))
	}
	if enc, ok := encoders[c.Arch]; ok {
		enc.metadata(c, set)
	} else {
		set(a+"rope.dimension_count", uint32(c.RopeDims))
		set(a+"rope.freq_base", c.RopeBase)
		if c.RopeScale != 0 {
			set(a+"rope.scaling.type", "linear")
			set(a+"rope.scaling.factor", c.RopeScale)
		}
		if c.Arch == "starcoder2" || c.Arch == "command-r" || c.Arch == "cohere2" || c.Arch == "phi2" || c.Arch == "stablelm" {
			set(a+"attention.layer_norm_epsilon", c.NormEps)
		} else {
			set(a+"attention.layer_norm_rms_epsilon", c.NormEps)
		}
		c.Rope.metadata(a, set)
		switch c.Arch {
		case "olmo2":
			c.olmo2Metadata(a, set)
		case "phi3":
			phi3Metadata(c, set)
		case "granite", "granitemoe":
			graniteMetadata(c, set)
		case "gpt-oss":
			set(a+"attention.sliding_window", uint32(c.Window))
		case "glm4moe":
			glm4moeMetadata(c, set)
		case "bailingmoe2":
			bailingMoE2Metadata(c, set)
		case "minimax-m2":
			minimaxM2Metadata(c, set)
		case "dots1":
			dots1Metadata(c, set)
		case "exaone-moe":
			exaoneMoEMetadata(c, set)
		case "afmoe":
			afmoeMetadata(c, set)
		case "llama4":
			llama4Metadata(c, set)
		case "gemma4":
			gemma4Metadata(c, set)
		case "gemma3n":
			gemma3nMetadata(c, set)
		case "ernie4_5-moe":
			set(a+"interleave_moe_layer_step", uint32(1))
			set(a+"leading_dense_block_count", uint32(c.DenseLead))
		case "hunyuan-dense":
			if c.RopeAlpha != 0 {
				set(a+"rope.scaling.alpha", c.RopeAlpha)
			}
		case "qwen2vl", "qwen3vl", "qwen3vlmoe":
			set(a+"rope.dimension_sections", mropeSections(c.RopeDims))
		case "command-r", "cohere2":
			if c.LogitScale != 0 {
				set(a+"logit_scale", c.LogitScale) // a multiplier, unlike granite's
			}
			if c.Window > 0 {
				set(a+"attention.sliding_window", uint32(c.Window))
			}
		case "mistral3":
			if c.AttnTemp != 0 {
				set(a+"attention.temperature_scale", c.AttnTemp)
			}
		}
		if c.hasMoE() {
			moeMetadata(c, set)
		}
	}
	if isGemma(c.Arch) {
		m.gemmaMetadata(set)
	}
	if c.Arch == "gemma-embedding" {
		gemmaEmbeddingMetadata(c, set)
	}
	m.kv = append(m.kv, vocabKV...)
}

// Params returns the number of weights of the model.
func (m *Model) Params() int64 {
	var n int64
	for _, t := range m.tensors {
		n += t.elements()
	}
	return n
}

// Writer returns a gguf.Writer that generates the model's tensors while it
// writes them.
func (m *Model) Writer() *gguf.Writer {
	w := gguf.NewWriter()
	for _, kv := range m.kv {
		w.Set(kv.Key, kv.Value)
	}
	for i := range m.tensors {
		t := &m.tensors[i]
		w.AddTensorFunc(t.name, t.typ, t.shape, t.write)
	}
	return w
}

// WriteFile writes the model to path atomically.
func (m *Model) WriteFile(path string) error {
	return m.Writer().WriteFile(path)
}
