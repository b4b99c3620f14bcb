package runner

import (
	"path/filepath"
	"slices"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestLongropeByNumCtx: a longrope model (phi3) rotates with its short
// factors when num_ctx is within its original context and with its long
// ones beyond, as llama.cpp picks them by its context size; the K/V
// fingerprint differs between the two, so prefixes persisted under one
// are never restored under the other.
func TestLongropeByNumCtx(t *testing.T) {
	path := filepath.Join(t.TempDir(), "phi3.gguf")
	sm, err := synth.Tiny("phi3", gguf.TypeQ8_0, 5) // original context 512
	if err != nil {
		t.Fatal(err)
	}
	if err := sm.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	short, _ := sm.Row("rope_factors_short.weight", 0)
	long, _ := sm.Row("rope_factors_long.weight", 0)
	fps := map[int]string{}
	for _, tc := range []struct {
		numCtx int
		want   []float32
	}{{256, short}, {512, short}, {1024, long}} {
		m, err := Load(path, LoadOptions{NumCtx: tc.numCtx, KVType: "f32"})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Arch.Rope.Factors; !slices.Equal(got, tc.want) {
			t.Errorf("num_ctx %d: rope factors %v, want %v", tc.numCtx, got, tc.want)
		}
		fps[tc.numCtx] = Fingerprint("sha256:x", m)
		m.Close()
	}
	if fps[256] != fps[512] || fps[512] == fps[1024] {
		t.Errorf("fingerprints at num_ctx 256, 512, 1024: %.8s %.8s %.8s; want the first two equal, the third different",
			fps[256], fps[512], fps[1024])
	}
}
