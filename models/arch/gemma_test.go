package arch_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// gemmaConfig writes a small Gemma model of arch with layers layers (head
// size 32, so that 1/√HeadDim and 1/√(Dim/Heads) differ), the keys of set
// (under "{arch}.") replaced or, where the value is nil, left out, and
// reads its configuration.
func gemmaConfig(t *testing.T, archName string, layers int, set map[string]any) (*arch.Config, error) {
	t.Helper()
	sm, err := synth.New(synth.Config{Arch: archName, Embd: 64, Layers: layers, Heads: 4, HeadsKV: 1, HeadDim: 32,
		FFN: 128, Ctx: 256, Tied: true, RopeBase: 1e6, RopeScale: 8})
	if err != nil {
		t.Fatal(err)
	}
	w := sm.Writer()
	for k, v := range set {
		if v == nil {
			w.Delete(archName + "." + k)
		} else {
			w.Set(archName+"."+k, v)
		}
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

// TestGemmaConfig: which layers are windowed, their rope, the soft-caps
// and the scales, as llama.cpp reads them (src/models/gemma2.cpp,
// gemma3.cpp, llama-hparams.cpp's set_swa_pattern).
func TestGemmaConfig(t *testing.T) {
	w := func(ws ...int) []int { return ws }
	for _, tc := range []struct {
		name      string
		arch      string
		layers    int
		set       map[string]any
		windows   []int
		localBase float32
		attnCap   float32
		logitCap  float32
		perHead   int // the query scale is 1/√perHead
	}{
		{"gemma3: five windowed, one global", "gemma3", 8, map[string]any{"attention.sliding_window": uint32(16)},
			w(16, 16, 16, 16, 16, 0, 16, 16), 10000, 0, 0, 32},
		{"gemma3 without a window", "gemma3", 8, nil, nil, 10000, 0, 0, 32},
		{"gemma3 with a window of 0", "gemma3", 3, map[string]any{"attention.sliding_window": uint32(0)}, nil, 10000, 0, 0, 32},
		{"gemma3 local base and logit cap", "gemma3", 2, map[string]any{"attention.sliding_window": uint32(8),
			"rope.freq_base_swa": float32(5000), "final_logit_softcapping": float32(7)}, w(8, 8), 5000, 0, 7, 32},
		{"gemma3 27B scales by Dim/Heads", "gemma3", 62, nil, nil, 10000, 0, 0, 16},
		{"gemma2 defaults: window 4096 on even layers, caps 50 and 30", "gemma2", 4, map[string]any{
			"attention.sliding_window": nil, "attn_logit_softcapping": nil, "final_logit_softcapping": nil},
			w(4096, 0, 4096, 0), 1e6, 50, 30, 32},
		{"gemma2 27B scales by Dim/Heads", "gemma2", 46, nil, nil, 1e6, 50, 30, 16},
		{"a period of 3", "gemma3", 6, map[string]any{"attention.sliding_window": uint32(4),
			"attention.sliding_window_pattern": uint32(3)}, w(4, 4, 0, 4, 4, 0), 10000, 0, 0, 32},
		{"one bool per layer", "gemma2", 3, map[string]any{"attention.sliding_window": uint32(4),
			"attention.sliding_window_pattern": []bool{false, true, true}}, w(0, 4, 4), 1e6, 50, 30, 32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := gemmaConfig(t, tc.arch, tc.layers, tc.set)
			if err != nil {
				t.Fatal(err)
			}
			if tc.windows == nil && tc.layers == 46 {
				tc.windows = make([]int, 46)
				for i := 0; i < 46; i += 2 {
					tc.windows[i] = 4096
				}
			}
			if !slices.Equal(c.Windows, tc.windows) {
				t.Errorf("windows %v, want %v", c.Windows, tc.windows)
			}
			for i := range tc.layers {
				if got, want := c.Window(i), 0; tc.windows != nil {
					if want = tc.windows[i]; got != want {
						t.Errorf("Window(%d) = %d, want %d", i, got, want)
					}
				} else if got != want {
					t.Errorf("Window(%d) = %d, want 0", i, got)
				}
			}
			if c.Rope.Base != 1e6 || c.Rope.Scale != 0.125 || !c.Rope.Neox {
				t.Errorf("global rope %+v, want base 1e6, scale 1/8, neox", c.Rope)
			}
			localScale := float32(1) // gemma3's local layers do not scale; gemma2's share the global scale
			if tc.arch == "gemma2" {
				localScale = 0.125
			}
			if c.LocalRope.Base != tc.localBase || c.LocalRope.Scale != localScale || !c.LocalRope.Neox {
				t.Errorf("local rope %+v, want base %v, scale %v", c.LocalRope, tc.localBase, localScale)
			}
			if c.AttnSoftCap != tc.attnCap || c.LogitCap != tc.logitCap {
				t.Errorf("soft-caps %v and %v, want %v and %v", c.AttnSoftCap, c.LogitCap, tc.attnCap, tc.logitCap)
			}
			if want := float32(1 / math.Sqrt(float64(tc.perHead))); c.QueryScale != want {
				t.Errorf("query scale %v, want 1/√%d", c.QueryScale, tc.perHead)
			}
			if c.EmbedScale != 8 {
				t.Errorf("embedding scale %v, want √64", c.EmbedScale)
			}
		})
	}
}

// A Gemma key folio cannot use is refused with the key and what it must be.
func TestGemmaConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		arch string
		set  map[string]any
		want string
	}{
		{"negative window", "gemma3", map[string]any{"attention.sliding_window": int32(-2)}, "attention.sliding_window = -2"},
		{"pattern of the wrong length", "gemma2", map[string]any{"attention.sliding_window_pattern": []bool{true}}, "one bool per layer (3)"},
		{"pattern of numbers", "gemma2", map[string]any{"attention.sliding_window_pattern": []int32{1, 0, 1}}, "one bool per layer"},
		{"negative period", "gemma3", map[string]any{"attention.sliding_window": uint32(4), "attention.sliding_window_pattern": int32(-1)}, "want a period"},
		{"attention cap 0", "gemma2", map[string]any{"attn_logit_softcapping": float32(0)}, "attn_logit_softcapping = 0"},
		{"NaN logit cap", "gemma2", map[string]any{"final_logit_softcapping": float32(math.NaN())}, "final_logit_softcapping = NaN"},
		{"local base 0", "gemma3", map[string]any{"rope.freq_base_swa": float32(0)}, "rope.freq_base_swa = 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gemmaConfig(t, tc.arch, 3, tc.set)
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrModel naming %q", err, tc.want)
			}
		})
	}
}
