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
	Arch    string // general.architecture: llama, qwen2, qwen3
	Layers  int    // block_count
	Dim     int    // embedding_length
	Heads   int    // attention.head_count
	KVHeads int    // attention.head_count_kv (GQA when < Heads)
	HeadDim int    // attention.key_length, else Dim/Heads
	FFN     int    // feed_forward_length
	Vocab   int    // rows of token_embd
	Context int    // context_length: the longest sequence it was trained for
	Eps     float32
	Rope    gpu.Rope
}

// QDim is the width of the queries, KVDim that of the keys and values.
func (c *Config) QDim() int  { return c.Heads * c.HeadDim }
func (c *Config) KVDim() int { return c.KVHeads * c.HeadDim }

// architectures are the values of general.architecture folio runs, with
// their rope pairing.
var architectures = map[string]struct{ neox bool }{
	"llama": {false},
	"qwen2": {true},
	"qwen3": {true},
}

// Architectures lists the supported values of general.architecture.
func Architectures() []string {
	names := make([]string, 0, len(architectures))
	for n := range architectures {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

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
	for _, k := range ints {
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
	if v, ok := f.Int(p + "attention.value_length"); ok && int(v) != c.HeadDim {
		return nil, fail("value length %d differs from key length %d", v, c.HeadDim)
	}
	switch {
	case c.Heads%c.KVHeads != 0:
		return nil, fail("%d attention heads are not a multiple of %d KV heads", c.Heads, c.KVHeads)
	case c.Rope.Dims > c.HeadDim || c.Rope.Dims%2 != 0:
		return nil, fail("rope dimension count %d does not fit head size %d", c.Rope.Dims, c.HeadDim)
	}
	c.Eps = 1e-5
	if v, ok := f.Float(p + "attention.layer_norm_rms_epsilon"); ok {
		c.Eps = float32(v)
	}
	c.Rope.HeadDim, c.Rope.Neox, c.Rope.Base, c.Rope.Scale = c.HeadDim, a.neox, 10000, 1
	if v, ok := f.Float(p + "rope.freq_base"); ok {
		c.Rope.Base = float32(v)
	}
	if err := readRopeScaling(f, p, c); err != nil {
		return nil, fail("%v", err)
	}
	emb, ok := f.Tensor("token_embd.weight")
	if !ok || len(emb.Shape) != 2 {
		return nil, fail("no 2-D token_embd.weight tensor")
	}
	c.Vocab = int(emb.Shape[1])
	return c, nil
}

// readRopeScaling sets the rope frequency scale and per-pair factors. A
// rope_freqs tensor (Llama 3.1 and later) gives the factors directly;
// otherwise rope.scaling.type says: none, linear, or llama3 (computed from
// its parameters as Meta's reference code does).
func readRopeScaling(f *gguf.File, p string, c *Config) error {
	if t, ok := f.Tensor("rope_freqs.weight"); ok {
		if t.Type != gguf.TypeF32 || t.Elements() != int64(c.Rope.Dims/2) {
			return fmt.Errorf("rope_freqs.weight is %v with %d elements; want F32 with %d", t.Type, t.Elements(), c.Rope.Dims/2)
		}
		c.Rope.Factors = make([]float32, c.Rope.Dims/2)
		if err := gguf.Dequantize(gguf.TypeF32, f.TensorData(t), c.Rope.Factors); err != nil {
			return err
		}
		return nil
	}
	factor := 1.0
	if v, ok := f.Float(p + "rope.scaling.factor"); ok && v > 0 {
		factor = v
	}
	switch typ := f.String(p + "rope.scaling.type"); typ {
	case "", "none":
	case "linear":
		c.Rope.Scale = float32(1 / factor)
	case "llama3":
		c.Rope.Factors = llama3Factors(f, p, c.Rope, factor)
	default:
		return fmt.Errorf("rope scaling %q is not supported yet (folio knows linear and llama3)", typ)
	}
	return nil
}

// llama3Factors: wavelengths longer than the original context / low_freq
// are slowed by factor, shorter than it / high_freq are kept, and those in
// between are blended.
func llama3Factors(f *gguf.File, p string, r gpu.Rope, factor float64) []float32 {
	get := func(key string, def float64) float64 {
		if v, ok := f.Float(p + key); ok && v > 0 {
			return v
		}
		return def
	}
	low, high := get("rope.scaling.low_freq_factor", 1), get("rope.scaling.high_freq_factor", 4)
	orig := get("rope.scaling.original_context_length", 8192)
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
	return out
}
