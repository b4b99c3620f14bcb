package cmd

import (
	"path/filepath"
	"testing"

	"folio/models/gguf"
)

// TestSynthPresetArch: a preset is written in its own architecture unless
// --arch names another, and the tiny preset of an architecture has its
// family's features.
func TestSynthPresetArch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		arch string
		key  string // a key of the family's
		want int64
	}{
		{[]string{"--preset", "tiny"}, "llama", "llama.rope.dimension_count", 64},
		{[]string{"--arch", "phi3", "--preset", "tiny"}, "phi3", "phi3.rope.dimension_count", 32},
		{[]string{"--arch", "phi3", "--preset", "tiny", "--rope-dims", "64"}, "phi3", "phi3.rope.dimension_count", 64},
		{[]string{"--arch", "gemma3n", "--preset", "tiny"}, "gemma3n", "gemma3n.attention.shared_kv_layers", 5},
		{[]string{"--arch", "gemma3n", "--preset", "tiny", "--n-layer", "30"}, "gemma3n", "gemma3n.attention.shared_kv_layers", 10},
		{[]string{"--preset", "granite-3.3-2b", "--n-layer", "1", "--n-embd", "256", "--n-head", "4", "--n-head-kv", "2",
			"--n-ff", "256", "--vocab-size", "512"}, "granite", "granite.block_count", 1},
	} {
		out := filepath.Join(t.TempDir(), "m.gguf")
		if _, err := execute(t, append([]string{"dev", "synth", "-o", out, "--type", "q8_0"}, tc.args...)...); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := f.Int(tc.key)
		if a := f.String("general.architecture"); a != tc.arch || got != tc.want {
			t.Errorf("%v: architecture %q, %s = %d; want %q and %d", tc.args, a, tc.key, got, tc.arch, tc.want)
		}
		if _, ok := f.Get("granite.logit_scale"); ok != (tc.arch == "granite") {
			t.Errorf("%v: granite.logit_scale present: %v", tc.args, ok)
		}
		f.Close()
	}
}
