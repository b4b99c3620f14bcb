package arch

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"folio/gpu"
	"folio/models/gguf"
)

// ErrModel is wrapped by every error about a model file that folio cannot
// run: a missing key or tensor, a shape that disagrees, an unknown
// architecture.
var ErrModel = errors.New("arch: model")

// Config is what a forward pass needs to know of a model, read from the
// {arch}.* keys of its GGUF file.
type Config struct {
	Arch    string  // general.architecture: one of Architectures()
	Layers  int     // block_count
	Dim     int     // embedding_length
	Heads   int     // attention.head_count
	KVHeads int     // attention.head_count_kv (GQA when < Heads)
	HeadDim int     // attention.key_length, else Dim/Heads
	FFN     int     // feed_forward_length
	Vocab   int     // rows of token_embd
	Context int     // context_length: the longest sequence it was trained for
	Eps     float32 // of the RMS norms, or of the LayerNorms (bert, nomic-bert: attention.layer_norm_epsilon)
	Rope    gpu.Rope
	// Windows is each layer's sliding window in tokens, 0 for a layer of
	// full attention; nil when every layer attends to the whole context.
	Windows []int
	// Encoder: the model makes embeddings, not logits; its rows attend
	// every position of their sequence, so a sequence's whole input goes
	// in one pass (bert, nomic-bert, gemma-embedding).
	Encoder bool
	Pooling Pooling // how an embedding is made of the hidden states (pooling_type)
	// DenseFeat > 0: the pooled embedding is projected through DenseFeat
	// features and back (dense_2's rows; dense.go); 0: no projections.
	DenseFeat int

	// SWAHeadDim > 0: the windowed layers' heads are SWAHeadDim wide and
	// they have SWAKVHeads K/V heads, where HeadDim and KVHeads are the
	// other layers' (gemma4: attention.key_length_swa and the
	// head_count_kv array); their K/V go in caches of that shape
	// (Groups.KVHeads, Groups.HeadDims).
	SWAHeadDim, SWAKVHeads int
	// FFNs is each layer's feed-forward width where they differ
	// (feed_forward_length an array: Gemma 4's double-wide layers), FFN
	// the widest; nil: every layer's is FFN.
	FFNs []int
	// KVFrom[l] >= 0: layer l writes no K/V and attends layer KVFrom[l]'s
	// (Gemma 4's shared_kv_layers); nil: every layer its own.
	KVFrom []int
	// PLEDim > 0: each layer adds a per-layer embedding of PLEDim
	// (Gemma 4 E2B's and E4B's, gemma4_ple.go).
	PLEDim int
	// AltUp > 0: the residual is AltUp streams, and each layer adds a
	// LAuReL branch of rank LaurelRank (Gemma 3n's, gemma3n.go).
	AltUp, LaurelRank int

	// Set by some families (gemma.go); the zero values change nothing.
	LocalRope   gpu.Rope // the windowed layers' rope, where a family gives them their own
	AttnGate    bool     // the attention output is gated by the sigmoid of attn_gate (afmoe)
	EmbedScale  float32  // token embeddings are multiplied by it; 0: 1
	QueryScale  float32  // attention scores are scaled by it (Gemma; granite's attention.scale); 0: 1/√HeadDim
	AttnSoftCap float32  // attention scores s become AttnSoftCap·tanh(s/AttnSoftCap); 0: none
	LogitCap    float32  // logits l become LogitCap·tanh(l/LogitCap); 0: none
	// Longrope (phi3): Rope.Factors are those of a context up to
	// OrigContext (rope_factors_short), LongFactors those of a longer one
	// (rope_factors_long); see RopeAt.
	OrigContext int
	LongFactors []float32
	// Llama 4's attention temperature (mistral3: Ministral 3): each query
	// is scaled by 1 + AttnTemp·ln(⌊pos / AttnTempFloor⌋ + 1) after its
	// rope; 0: none.
	// Llama 4's own adds AttnTempOffset to the position first (1).
	AttnTemp       float32
	AttnTempFloor  int
	AttnTempOffset float32
	// Llama 4's chunked attention: on the layers with a window (Windows,
	// AttnChunk there), a row at position p reads positions
	// ⌊p/AttnChunk⌋·AttnChunk … p only, all within the window's reach, so
	// that their K/V live in a sliding group whose blocks go back as they
	// leave it; 0: none. MoEEvery > 0: every MoEEvery-th layer's
	// feed-forward is experts, the others' dense (interleave_moe_layer_step).
	AttnChunk int
	MoEEvery  int
	// Granite's multipliers besides EmbedScale and QueryScale, 0 meaning
	// none: each block's attention and feed-forward outputs × ResidualScale
	// before their residual adds, logits ÷ LogitScale.
	ResidualScale, LogitScale float32
	// LogitMul multiplies the logits (command-r's logit_scale); 0: none.
	LogitMul float32

	// Mixture of experts (moe.go; 0 experts: a dense feed-forward):
	// Experts feed-forwards of ExpertFFN, ExpertsUsed of them run per
	// token, weighted as Gating says, the weights divided by their sum
	// when ExpertWeightsNorm; SharedFFN > 0 is the width of a shared
	// expert every token runs besides them (qwen2moe, granitemoe).
	// ExpertWeightsScale multiplies the weights (0 or 1: not at all).
	// The first DenseLead layers have a dense feed-forward (glm4moe).
	Experts, ExpertsUsed, ExpertFFN int
	Gating                          Gating
	ExpertWeightsNorm               bool
	ExpertWeightsScale              float32
	// ExpertWeightsIn: each chosen expert's weight multiplies its input,
	// not its output (llama4; llama.cpp's weight_before_ffn).
	ExpertWeightsIn bool
	SharedFFN       int
	DenseLead       int
	// ExpertGroups > 1 splits the experts into groups, of which each token
	// searches the GroupsUsed whose best two experts score highest
	// (DeepSeek-V3's group-limited routing); 0: no groups.
	ExpertGroups, GroupsUsed int

	// Multi-head latent attention (deepseek2.go): the cache holds a
	// latent of KVLora elements and Rope.Dims rotated ones (HeadDim, one
	// K/V head), the queries' heads are QKHeadDim wide before they are
	// taken into the latent's space, each head's values VHeadDim after.
	// QLora > 0: the queries come through a LoRA of that rank.
	QLora, KVLora, QKHeadDim, VHeadDim int
}

// Window is layer's sliding window, 0 for full attention.
func (c *Config) Window(layer int) int {
	if c.Windows == nil {
		return 0
	}
	return c.Windows[layer]
}

// Pooling is llama.cpp's enum llama_pooling_type: how a sequence's hidden
// states make its embedding.
type Pooling int

const (
	PoolNone Pooling = 0 // no pooling: the last token's state is the embedding
	PoolMean Pooling = 1 // the mean of every token's state
	PoolCLS  Pooling = 2 // the first token's ([CLS])
	PoolLast Pooling = 3 // the last token's
)

func (p Pooling) String() string {
	switch p {
	case PoolNone:
		return "none"
	case PoolMean:
		return "mean"
	case PoolCLS:
		return "cls"
	case PoolLast:
		return "last"
	}
	return fmt.Sprintf("pooling(%d)", int(p))
}

// RopeAt is the rope of a model run with sequences of up to ctx tokens:
// longrope's long factors when ctx is beyond the original context, as
// llama.cpp chooses them by its context size.
func (c *Config) RopeAt(ctx int) gpu.Rope {
	r := c.Rope
	if c.LongFactors != nil && ctx > c.OrigContext {
		r.Factors = c.LongFactors
	}
	return r
}

// SharedKV reports whether a layer's V is its K (gpu.KVSpec.SharedKV):
// latent attention's values are the latent part of its keys.
func (c *Config) SharedKV() bool { return c.KVLora > 0 }

// QDim is the width of the queries, KVDim that of the keys and values.
func (c *Config) QDim() int  { return c.Heads * c.HeadDim }
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// LayerFFN is layer's feed-forward width.
func (c *Config) LayerFFN(layer int) int {
	if c.FFNs == nil {
		return c.FFN
	}
	return c.FFNs[layer]
}

// narrowerFFNs lists, once each, the layers' feed-forward widths below
// FFN: the widths whose activations need scratch of their own.
func (c *Config) narrowerFFNs() []int {
	var ws []int
	for _, w := range c.FFNs {
		if w < c.FFN && !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return ws
}

// readLayerFFN reads feed_forward_length when it is an array (one width a
// layer): FFNs, FFN the widest.
func readLayerFFN(f *gguf.File, p string, c *Config) error {
	raw, _ := f.Get(p + "feed_forward_length")
	a, ok := raw.(gguf.Array)
	if !ok {
		return nil
	}
	ws, ok := intValues(a)
	if !ok || len(ws) == 0 {
		return fmt.Errorf("%sfeed_forward_length is %d %v; want integers", p, a.Len(), a.Elem)
	}
	for _, w := range ws {
		if w <= 0 || w > 1<<24 {
			return fmt.Errorf("%sfeed_forward_length has %d: out of range", p, w)
		}
		c.FFNs = append(c.FFNs, int(w))
		c.FFN = max(c.FFN, int(w))
	}
	return nil
}

// LayerKV is layer's K/V heads and head size: the windowed layers' own
// where the model gives them another shape (SWAHeadDim).
func (c *Config) LayerKV(layer int) (kvHeads, headDim int) {
	if c.SWAHeadDim > 0 && c.Window(layer) > 0 {
		return c.SWAKVHeads, c.SWAHeadDim
	}
	return c.KVHeads, c.HeadDim
}

// architecture is what folio knows of one value of general.architecture:
// its rope pairing, the keys it adds to llama's and how to build its
// transformer blocks.
type architecture struct {
	neox     bool                                          // rope pairs j with j+Dims/2 (GPT-NeoX), not 2j with 2j+1
	config   func(f *gguf.File, p string, c *Config) error // reads the family's own {arch}.* keys and tensors (p is "{arch}."); nil: none
	newBlock func(*loader, *Config, int) block             // block i's weights, read by the loader
	newStem  func(*loader, *Config) stem                   // the input embeddings; nil: token_embd's rows
	// layerNorm: the norms are LayerNorms, whose epsilon is
	// attention.layer_norm_epsilon (not layer_norm_rms_epsilon)
	layerNorm bool
	// outputBias: the output matrix has a bias (output.bias, required as
	// llama.cpp requires it)
	outputBias bool
}

// architectures are the values of general.architecture folio runs. A new
// family is one entry here and one file with its block.
var architectures = map[string]architecture{
	"llama": {neox: false, config: readLlama, newBlock: newLlamaOrMoEBlock},
	"qwen2": {neox: true, newBlock: newQwen2Block},
	"qwen3": {neox: true, newBlock: newQwen3Block},
	// The text models of Qwen2-VL and Qwen2.5-VL, Qwen3-VL and Qwen3-VL's
	// MoE: M-RoPE turns a text position's pairs as neox rope does (each
	// section reads the same position) and deepstack adds nothing to a
	// token's embedding, so text runs through qwen2's, qwen3's and
	// qwen3moe's layers; images are refused where requests arrive.
	"qwen2vl":       {neox: true, config: readMRope, newBlock: newQwen2Block},
	"qwen3vl":       {neox: true, config: readMRope, newBlock: newQwen3Block},
	"qwen3vlmoe":    {neox: true, config: readMRopeMoE, newBlock: newQwen3moeBlock},
	"gemma":         {neox: true, config: readGemma1, newBlock: newGemmaBlock},
	"gemma2":        {neox: true, config: readGemma, newBlock: newGemmaBlock},
	"gemma3":        {neox: true, config: readGemma, newBlock: newGemmaBlock},
	"smollm3":       {neox: false, newBlock: newSmollm3Block},
	"olmo2":         {neox: true, config: readOlmo2, newBlock: newOlmo2Block},
	"mistral3":      {neox: false, config: readMistral3, newBlock: newMistral3Block},
	"starcoder2":    {neox: true, newBlock: newStarcoder2Block, layerNorm: true},
	"exaone":        {neox: true, newBlock: newLlamaBiased},  // EXAONE 3.0 and 3.5: llama's layer, rope over split halves
	"internlm2":     {neox: false, newBlock: newLlamaBiased}, // InternLM 2 and 2.5 as llama.cpp's converter writes them: llama's layer
	"exaone4":       {neox: true, config: readExaone4, newBlock: newExaone4Block},
	"glm4":          {neox: false, config: readGlm4, newBlock: newGlm4Block},
	"seed_oss":      {neox: true, newBlock: newSeedOSSBlock},
	"ernie4_5":      {neox: false, newBlock: newErnieBlock},
	"hunyuan-dense": {neox: true, config: readHunyuan, newBlock: newHunyuanBlock},
	"hunyuan-moe":   {neox: true, config: readHunyuanMoE, newBlock: newHunyuanBlock},
	"command-r":     {neox: false, config: readCommandR, newBlock: newCommandRBlock, layerNorm: true},
	"cohere2":       {neox: false, config: readCohere2, newBlock: newCommandRBlock, layerNorm: true},
	"phi2":          {neox: true, newBlock: newPhi2Block, layerNorm: true, outputBias: true},
	"stablelm":      {neox: true, newBlock: newStablelmBlock, layerNorm: true},
	"phi3":          {neox: true, config: readPhi3, newBlock: newPhi3Block},
	"granite":       {neox: false, config: readGraniteMoE, newBlock: newLlamaOrMoEBlock},
	"qwen3moe":      {neox: true, config: readMoE, newBlock: newQwen3moeBlock},
	"gpt-oss":       {neox: true, config: readGptoss, newBlock: newGptossBlock},
	"qwen2moe":      {neox: true, config: readQwen2moe, newBlock: newMoELlamaBlock},
	"olmoe":         {neox: true, config: readOlmoe, newBlock: newOlmoeBlock},
	"glm4moe":       {neox: true, config: readGlm4moe, newBlock: newGlm4moeBlock},
	"ernie4_5-moe":  {neox: false, config: readErnieMoE, newBlock: newErnieMoEBlock},
	"deepseek2":     {neox: false, config: readDeepseek2, newBlock: newDeepseek2Block},
	"mistral4":      {neox: false, config: readDeepseek2, newBlock: newDeepseek2Block},
	"bailingmoe2":   {neox: true, config: readBailingMoE2, newBlock: newBailingMoE2Block},
	"minimax-m2":    {neox: true, config: readMinimaxM2, newBlock: newMinimaxM2Block},
	"dots1":         {neox: true, config: readDots1, newBlock: newDots1Block},
	"exaone-moe":    {neox: true, config: readExaoneMoE, newBlock: newExaoneMoEBlock},
	"afmoe":         {neox: true, config: readAfmoe, newBlock: newAfmoeBlock},
	"llama4":        {neox: false, config: readLlama4, newBlock: newLlama4Block},
	"gemma4":        {neox: true, config: readGemma4, newBlock: newGemma4Block},
	"gemma3n":       {neox: true, config: readGemma3n, newBlock: newGemma3nBlock},

	"granitemoe": {neox: false, config: readGraniteMoE, newBlock: newLlamaOrMoEBlock},

	"gemma-embedding": {neox: true, config: readGemma, newBlock: newGemmaBlock},

	"bert":       {neox: true, newBlock: newBertBlock, newStem: newBertStem, layerNorm: true},
	"nomic-bert": {neox: true, newBlock: newBertBlock, newStem: newBertStem, layerNorm: true},
}

// encoders are the architectures that make embeddings (Config.Encoder).
var encoders = map[string]bool{"bert": true, "nomic-bert": true, "gemma-embedding": true}

// Architectures lists the supported values of general.architecture.
func Architectures() []string {
	names := make([]string, 0, len(architectures))
	for n := range architectures {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// IsEncoder reports whether the architecture name (general.architecture)
// is an embedding model folio runs: bert, nomic-bert, gemma-embedding.
func IsEncoder(name string) bool { return encoders[name] }

// ReadConfig reads the hyperparameters of f.
func ReadConfig(f *gguf.File) (*Config, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrModel, f.Path, fmt.Sprintf(format, args...))
	}
	c := &Config{Arch: f.String("general.architecture")}
	a, ok := architectures[c.Arch]
	if !ok {
		return nil, fail("architecture %q is not supported (folio runs %v)", c.Arch, Architectures())
	}
	p := c.Arch + "."
	ints := []struct {
		key      string
		dst      *int
		required bool
	}{
		{"block_count", &c.Layers, true},
		{"embedding_length", &c.Dim, true},
		{"attention.head_count", &c.Heads, true},
		{"attention.head_count_kv", &c.KVHeads, false},
		{"attention.key_length", &c.HeadDim, false},
		{"feed_forward_length", &c.FFN, true},
		{"context_length", &c.Context, false},
		{"rope.dimension_count", &c.Rope.Dims, false},
	}
	if err := readLayerFFN(f, p, c); err != nil {
		return nil, fail("%v", err)
	}
	for _, k := range ints {
		if k.dst == &c.FFN && c.FFNs != nil {
			continue // an array, read by readLayerFFN
		}
		v, ok := f.Int(p + k.key)
		switch {
		case !ok && k.required:
			return nil, fail("no %s%s key", p, k.key)
		case !ok:
			continue
		case v <= 0 || v > 1<<24:
			return nil, fail("%s%s = %d is out of range", p, k.key, v)
		}
		*k.dst = int(v)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.HeadDim == 0 {
		c.HeadDim = c.Dim / c.Heads
	}
	if c.Rope.Dims == 0 {
		c.Rope.Dims = c.HeadDim
	}
	// deepseek2's values are the latent, the keys' first KVLora elements
	// (readDeepseek2 checks them).
	if v, ok := f.Int(p + "attention.value_length"); ok && int(v) != c.HeadDim && !latentArchs[c.Arch] {
		return nil, fail("value length %d differs from key length %d", v, c.HeadDim)
	}
	switch {
	case c.Heads%c.KVHeads != 0:
		return nil, fail("%d attention heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	case c.Rope.Dims > c.HeadDim || c.Rope.Dims%2 != 0:
		return nil, fail("rope dimension count %d does not fit head size %d", c.Rope.Dims, c.HeadDim)
	}
	epsKey := "attention.layer_norm_rms_epsilon"
	if a.layerNorm {
		epsKey = "attention.layer_norm_epsilon"
	}
	eps, err := hyper(f, p+epsKey, 1e-5,
		"a number above 0 and below 1 (models use 1e-6 or 1e-5)", func(v float64) bool { return float32(v) > 0 && v < 1 })
	if err != nil {
		return nil, fail("%v", err)
	}
	base, err := hyper(f, p+"rope.freq_base", 10000,
		"a number above 1 (models use 10000 to 1000000)", func(v float64) bool { return v > 1 })
	if err != nil {
		return nil, fail("%v", err)
	}
	c.Eps = float32(eps)
	c.Rope.HeadDim, c.Rope.Neox, c.Rope.Base, c.Rope.Scale = c.HeadDim, a.neox, float32(base), 1
	if err := readRopeScaling(f, p, c); err != nil {
		return nil, fail("%v", err)
	}
	c.Encoder = encoders[c.Arch]
	if c.Pooling, err = readPooling(f, p, c.Encoder); err != nil {
		return nil, fail("%v", err)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Shape) != 2 {
		return nil, fail("no 2-D token_embd.weight tensor")
	}
	c.Vocab = int(emb.Shape[1])
	if d2, ok := f.Tensor("dense_2.weight"); ok && len(d2.Shape) == 2 {
		c.DenseFeat = int(d2.Shape[1])
	}
	if c.FFNs != nil && len(c.FFNs) != c.Layers {
		return nil, fail("%sfeed_forward_length has %d widths for %d layers", p, len(c.FFNs), c.Layers)
	}
	if a.config != nil {
		if err := a.config(f, p, c); err != nil {
			return nil, fail("%v", err)
		}
	}
	return c, nil
}

// readPooling reads pooling_type. Without one, an encoder does not pool
// (llama.cpp's default) and a generative model averages (what folio's
// embeddings of such models have always been).
func readPooling(f *gguf.File, p string, encoder bool) (Pooling, error) {
	v, ok := f.Int(p + "pooling_type")
	switch {
	case !ok && encoder:
		return PoolNone, nil
	case !ok:
		return PoolMean, nil
	case v == 4:
		return 0, fmt.Errorf("%spooling_type 4 (rank) is for rerankers, which folio does not run", p)
	case v < 0 || v > int64(PoolLast):
		return 0, fmt.Errorf("%spooling_type %d; it must be 0 (none), 1 (mean), 2 (cls) or 3 (last)", p, v)
	}
	return Pooling(v), nil
}

// hyper reads the float hyperparameter key, def when the file has none. It
// refuses a value that is not a number, that float32 cannot hold (NaN, ±Inf,
// beyond ±3.4e38) or that valid rejects; must says what the value must be.
func hyper(f *gguf.File, key string, def float64, must string, valid func(float64) bool) (float64, error) {
	raw, present := f.Get(key)
	if !present {
		return def, nil
	}
	v, ok := gguf.AsFloat64(raw)
	if !ok {
		return 0, fmt.Errorf("%s holds a %T, not a number; it must be %s", key, raw, must)
	}
	if math.IsNaN(v) || math.IsInf(float64(float32(v)), 0) || !valid(v) {
		return 0, fmt.Errorf("%s = %v; it must be %s", key, raw, must)
	}
	return v, nil
}

// readRopeScaling sets the rope frequency scale, per-pair factors and
// magnitude. A rope_freqs tensor (Llama 3.1 and later) gives the factors
// directly; otherwise rope.scaling.type says: none, linear, llama3
// (computed from its parameters as Meta's reference code does) or yarn,
// which also blends with rope_freqs where both are present.
// rope.scaling.attn_factor scales every rotation, as llama.cpp does.
func readRopeScaling(f *gguf.File, p string, c *Config) error {
	attn, err := ropeAttnFactor(f, p)
	if err != nil {
		return err
	}
	c.Rope.MScale = attn
	freqs, err := ropeFactors(f, "rope_freqs.weight", c.Rope.Dims/2)
	if err != nil {
		return err
	}
	typ := f.String(p + "rope.scaling.type")
	if freqs != nil && typ != "yarn" {
		c.Rope.Factors = freqs
		return nil
	}
	switch typ {
	case "", "none":
		return nil
	case "linear", "llama3", "yarn":
	default:
		return fmt.Errorf("rope scaling %q is not supported yet (folio knows linear, llama3 and yarn)", typ)
	}
	// 0 means no scaling, as llama.cpp reads it.
	factor, err := hyper(f, p+"rope.scaling.factor", 1, "0 (no scaling) or a number from 0.001 to 1000000",
		func(v float64) bool { return v == 0 || v >= 1e-3 && v <= 1e6 })
	if err != nil {
		return err
	}
	if factor == 0 {
		factor = 1
	}
	switch typ {
	case "linear":
		c.Rope.Scale = float32(1 / factor)
		return nil
	case "yarn":
		return yarnRope(f, c, factor, attn, freqs)
	}
	c.Rope.Factors, err = llama3Factors(f, p, c.Rope, factor)
	return err
}

// llama3Factors: wavelengths longer than the original context / low_freq
// are slowed by factor, shorter than it / high_freq are kept, and those in
// between are blended.
func llama3Factors(f *gguf.File, p string, r gpu.Rope, factor float64) ([]float32, error) {
	positive := func(v float64) bool { return v > 0 }
	low, err := hyper(f, p+"rope.scaling.low_freq_factor", 1, "a positive number (Llama 3.1 uses 1)", positive)
	if err != nil {
		return nil, err
	}
	high, err := hyper(f, p+"rope.scaling.high_freq_factor", 4,
		fmt.Sprintf("a number above low_freq_factor %v (Llama 3.1 uses 4)", low), func(v float64) bool { return v > low })
	if err != nil {
		return nil, err
	}
	orig, err := hyper(f, p+"rope.scaling.original_context_length", 8192, "a positive number of tokens (Llama 3.1 uses 8192)", positive)
	if err != nil {
		return nil, err
	}
	lowWave, highWave := orig/low, orig/high
	out := make([]float32, r.Dims/2)
	for i := range out {
		freq := math.Pow(float64(r.Base), -2*float64(i)/float64(r.Dims))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = float32(factor)
		default:
			smooth := (orig/wave - low) / (high - low)
			out[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return out, nil
}
