package arch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// configOf writes a small llama-family model of arch with the metadata
// keys of set (under "{arch}.") replaced, plus a rope_freqs tensor when
// freqs is not nil, and reads its configuration.
func configOf(t *testing.T, archName string, set map[string]any, freqs []float32) (*arch.Config, error) {
	t.Helper()
	sm, err := synth.New(synth.Config{Arch: archName, Embd: 64, Layers: 1, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256})
	if err != nil {
		t.Fatal(err)
	}
	w := sm.Writer()
	for k, v := range set {
		w.Set(archName+"."+k, v)
	}
	if freqs != nil {
		data := make([]byte, 4*len(freqs))
		for i, v := range freqs {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		w.AddTensor("rope_freqs.weight", gguf.TypeF32, []uint64{uint64(len(freqs))}, data)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(archName+".gguf", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return arch.ReadConfig(f)
}

// Every float hyperparameter is checked when the model is read: NaN, ±Inf
// and out-of-range values are refused with the key, the value and what it
// must be, instead of loading and generating garbage (a freq_base of 0 made
// every logit NaN).
func TestBadHyperparameters(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	llama3 := func(kv map[string]any) map[string]any {
		kv["rope.scaling.type"] = "llama3"
		return kv
	}
	ones := func(n int) []float32 {
		f := make([]float32, n)
		for i := range f {
			f[i] = 1
		}
		return f
	}
	cases := []struct {
		name  string
		arch  string
		set   map[string]any
		freqs []float32
		want  string // "" when the model must load
	}{
		{"freq_base 0", "llama", map[string]any{"rope.freq_base": float32(0)}, nil, "llama.rope.freq_base = 0; it must be a number above 1"},
		{"freq_base negative", "qwen2", map[string]any{"rope.freq_base": float32(-10000)}, nil, "qwen2.rope.freq_base = -10000; it must be"},
		{"freq_base NaN", "qwen3", map[string]any{"rope.freq_base": nan}, nil, "qwen3.rope.freq_base = NaN"},
		{"freq_base Inf", "llama", map[string]any{"rope.freq_base": inf}, nil, "llama.rope.freq_base = +Inf"},
		{"freq_base beyond float32", "llama", map[string]any{"rope.freq_base": 1e300}, nil, "llama.rope.freq_base = 1e+300"},
		{"freq_base a string", "llama", map[string]any{"rope.freq_base": "10000"}, nil, "llama.rope.freq_base holds a string, not a number"},
		{"eps 0", "llama", map[string]any{"attention.layer_norm_rms_epsilon": float32(0)}, nil, "llama.attention.layer_norm_rms_epsilon = 0; it must be a number above 0 and below 1"},
		{"eps negative", "qwen3", map[string]any{"attention.layer_norm_rms_epsilon": float32(-1e-6)}, nil, "qwen3.attention.layer_norm_rms_epsilon = -1e-06"},
		{"eps NaN", "qwen2", map[string]any{"attention.layer_norm_rms_epsilon": nan}, nil, "layer_norm_rms_epsilon = NaN"},
		{"eps Inf", "llama", map[string]any{"attention.layer_norm_rms_epsilon": -inf}, nil, "layer_norm_rms_epsilon = -Inf"},
		{"eps 0 in float32", "llama", map[string]any{"attention.layer_norm_rms_epsilon": 1e-50}, nil, "layer_norm_rms_epsilon = 1e-50"},
		{"linear factor negative", "llama", map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": float32(-4)}, nil, "llama.rope.scaling.factor = -4; it must be 0 (no scaling) or a number from 0.001"},
		{"linear factor NaN", "llama", map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": nan}, nil, "rope.scaling.factor = NaN"},
		{"linear factor Inf", "qwen2", map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": inf}, nil, "rope.scaling.factor = +Inf"},
		{"linear factor 0 is none", "llama", map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": float32(0)}, nil, ""},
		{"linear factor 4", "llama", map[string]any{"rope.scaling.type": "linear", "rope.scaling.factor": float32(4)}, nil, ""},
		{"llama3 factor NaN", "llama", llama3(map[string]any{"rope.scaling.factor": nan}), nil, "rope.scaling.factor = NaN"},
		{"llama3 low 0", "llama", llama3(map[string]any{"rope.scaling.low_freq_factor": float32(0)}), nil, "llama.rope.scaling.low_freq_factor = 0; it must be a positive number"},
		{"llama3 high = low", "llama", llama3(map[string]any{"rope.scaling.low_freq_factor": float32(2), "rope.scaling.high_freq_factor": float32(2)}), nil,
			"llama.rope.scaling.high_freq_factor = 2; it must be a number above low_freq_factor 2"},
		{"llama3 high NaN", "llama", llama3(map[string]any{"rope.scaling.high_freq_factor": nan}), nil, "high_freq_factor = NaN"},
		{"llama3 original context 0", "llama", llama3(map[string]any{"rope.scaling.original_context_length": uint32(0)}), nil,
			"llama.rope.scaling.original_context_length = 0; it must be a positive number of tokens"},
		{"llama3 Meta's values", "llama", llama3(map[string]any{"rope.scaling.factor": float32(8), "rope.scaling.low_freq_factor": float32(1),
			"rope.scaling.high_freq_factor": float32(4), "rope.scaling.original_context_length": uint32(8192)}), nil, ""},
		{"rope_freqs NaN", "llama", nil, append(ones(15), nan), "rope_freqs.weight[15] = NaN; every factor must be a positive number"},
		{"rope_freqs 0", "llama", nil, append([]float32{0}, ones(15)...), "rope_freqs.weight[0] = 0"},
		{"rope_freqs Inf", "llama", nil, append(ones(3), append([]float32{inf}, ones(12)...)...), "rope_freqs.weight[3] = +Inf"},
		{"rope_freqs ones", "llama", nil, ones(16), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := configOf(t, c.arch, c.set, c.freqs)
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused a usable model: %v", err)
				}
				if s := cfg.Rope.Scale; !(s > 0) || math.IsInf(float64(s), 0) {
					t.Errorf("rope scale %v", s)
				}
				for i, f := range cfg.Rope.Factors {
					if !(f > 0) || math.IsInf(float64(f), 0) {
						t.Errorf("rope factor %d = %v", i, f)
					}
				}
				return
			}
			if err == nil {
				t.Fatalf("loaded (eps %v, rope %+v); want an error containing %q", cfg.Eps, cfg.Rope, c.want)
			}
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q (arch.ErrModel: %v); want one containing %q", err, errors.Is(err, arch.ErrModel), c.want)
			}
		})
	}
}
