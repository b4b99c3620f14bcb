package arch_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// tinyConfig reads the configuration of the tiny synthetic model of
// archName after edit changes its synth.Config and the writer (keys,
// extra tensors).
func tinyConfig(t *testing.T, archName string, edit func(*synth.Config), write func(*gguf.Writer)) (*arch.Config, *synth.Model, error) {
	t.Helper()
	sm, err := synth.Tiny(archName, gguf.TypeF32, 1, edit)
	if err != nil {
		t.Fatal(err)
	}
	w := sm.Writer()
	if write != nil {
		write(w)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(archName+".gguf", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := arch.ReadConfig(f)
	return cfg, sm, err
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// TestPhi3Config: partial rotary over split halves, longrope's short
// factors up to the original context and its long ones beyond (as
// llama.cpp picks them by its context size), and the attention factor on
// cos and sin.
func TestPhi3Config(t *testing.T) {
	cfg, sm, err := tinyConfig(t, "phi3", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	short, _ := sm.Row("rope_factors_short.weight", 0)
	long, _ := sm.Row("rope_factors_long.weight", 0)
	wantMScale := float32(math.Sqrt(1 + math.Log(8)/math.Log(512)))
	if cfg.HeadDim != 64 || cfg.Rope.Dims != 32 || !cfg.Rope.Neox || cfg.OrigContext != 512 || cfg.Rope.MScale != wantMScale {
		t.Errorf("head %d, rope dims %d, neox %v, original context %d, mscale %v; want 64, 32, true, 512, %v",
			cfg.HeadDim, cfg.Rope.Dims, cfg.Rope.Neox, cfg.OrigContext, cfg.Rope.MScale, wantMScale)
	}
	for _, tc := range []struct {
		ctx  int
		want []float32
	}{{256, short}, {512, short}, {513, long}, {4096, long}} {
		r := cfg.RopeAt(tc.ctx)
		if !slices.Equal(r.Factors, tc.want) || r.MScale != wantMScale {
			t.Errorf("context %d: factors %v (mscale %v), want %v", tc.ctx, r.Factors, r.MScale, tc.want)
		}
	}

	// Phi-3-mini-4k: no factors, no attention factor.
	cfg, _, err = tinyConfig(t, "phi3", func(c *synth.Config) { c.OrigCtx = 0 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := cfg.RopeAt(1 << 20); r.Factors != nil || cfg.Rope.MScale != 1 {
		t.Errorf("without longrope: factors %v, mscale %v; want none and 1", r.Factors, cfg.Rope.MScale)
	}

	for _, tc := range []struct {
		name  string
		write func(*gguf.Writer)
		want  string
	}{
		{"a zero factor", func(w *gguf.Writer) {
			w.AddTensor("rope_factors_long.weight", gguf.TypeF32, []uint64{16}, f32Bytes(make([]float32, 16)))
		}, "rope_factors_long.weight[0] = 0"},
		{"short only", func(w *gguf.Writer) {
			w.AddTensor("rope_factors_short.weight", gguf.TypeF32, []uint64{16}, f32Bytes(slices.Repeat([]float32{1}, 16)))
		}, "only one of rope_factors_long and rope_factors_short"},
		{"factors of the whole head", func(w *gguf.Writer) {
			w.AddTensor("rope_factors_short.weight", gguf.TypeF32, []uint64{32}, f32Bytes(slices.Repeat([]float32{1}, 32)))
		}, "want F32 with 16 elements"},
		{"attention factor 0", func(w *gguf.Writer) { w.Set("phi3.rope.scaling.attn_factor", float32(0)) },
			"phi3.rope.scaling.attn_factor = 0; it must be a positive number (1 leaves rope unscaled)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tinyConfig(t, "phi3", func(c *synth.Config) { c.OrigCtx = 0 }, tc.write)
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want arch.ErrModel containing %q", err, tc.want)
			}
		})
	}
}

// TestGraniteConfig: the four multipliers, logit_scale required as
// llama.cpp requires it, and granite without rope refused.
func TestGraniteConfig(t *testing.T) {
	cfg, _, err := tinyConfig(t, "granite", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.EmbedScale != 12 || cfg.QueryScale != 0.03125 || cfg.ResidualScale != 0.22 || cfg.LogitScale != 2 || cfg.Rope.Neox {
		t.Errorf("multipliers %v %v %v %v, neox %v; want 12 0.03125 0.22 2, false",
			cfg.EmbedScale, cfg.QueryScale, cfg.ResidualScale, cfg.LogitScale, cfg.Rope.Neox)
	}
	for _, tc := range []struct {
		name  string
		write func(*gguf.Writer)
		want  string
	}{
		{"no logit scale", func(w *gguf.Writer) { w.Delete("granite.logit_scale") }, "no granite.logit_scale"},
		{"negative residual scale", func(w *gguf.Writer) { w.Set("granite.residual_scale", float32(-1)) },
			"granite.residual_scale = -1; it must be a positive number"},
		{"no rope", func(w *gguf.Writer) { w.Set("granite.rope.scaling.finetuned", false) }, "granite without rope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tinyConfig(t, "granite", nil, tc.write)
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v; want arch.ErrModel containing %q", err, tc.want)
			}
		})
	}
}
