package arch_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"folio/models/arch"
)

// An OLMo 3 file (olmo2 with attention.sliding_window) slides on the
// layers its pattern marks, and those layers rotate without the file's
// rope scaling, as llama.cpp's olmo2 graph does; a pattern that does not
// fit is refused naming the key. TestGoldenLogits/olmo3-* checks the
// logits against llama.cpp.
func TestOlmo3Windows(t *testing.T) {
	yarn := map[string]any{"rope.scaling.type": "yarn", "rope.scaling.factor": float32(4), "attention.sliding_window": uint32(16)}
	c, err := configOf(t, "olmo2", yarn, nil)
	if err != nil {
		t.Fatal(err)
	}
	// configOf's model has one layer: llama.cpp's default pattern of 4 makes it windowed.
	if !slices.Equal(c.Windows, []int{16}) {
		t.Errorf("windows %v, want [16]", c.Windows)
	}
	if c.Rope.Factors == nil || c.LocalRope.Factors != nil || c.LocalRope.Scale != 1 || c.LocalRope.Magnitude() != 1 ||
		c.LocalRope.Base != c.Rope.Base || c.LocalRope.Dims != c.Rope.Dims || !c.LocalRope.Neox {
		t.Errorf("windowed layers' rope %+v; want the global one (%+v) without its YaRN scaling", c.LocalRope, c.Rope)
	}
	c, err = configOf(t, "olmo2", map[string]any{}, nil)
	if err != nil || c.Windows != nil {
		t.Errorf("OLMo 2 without a window: windows %v, error %v; want none", c.Windows, err)
	}
	for _, bad := range []struct {
		name string
		set  map[string]any
		want string
	}{
		{"pattern length", map[string]any{"attention.sliding_window": uint32(16), "attention.sliding_window_pattern": []bool{true, false}},
			"olmo2.attention.sliding_window_pattern is an array of 2"},
		{"negative window", map[string]any{"attention.sliding_window": int32(-4)}, "olmo2.attention.sliding_window = -4 is out of range"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			_, err := configOf(t, "olmo2", bad.set, nil)
			if !errors.Is(err, arch.ErrModel) || !strings.Contains(err.Error(), bad.want) {
				t.Fatalf("error %v; want arch.ErrModel containing %q", err, bad.want)
			}
		})
	}
}
