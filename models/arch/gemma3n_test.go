package arch_test

import (
	"fmt"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestGemma3nKeys: the tiny gemma3n's layout as folio reads it, with the
// sizes llama.cpp fixes, and the files it refuses saying what is wrong.
func TestGemma3nKeys(t *testing.T) {
	cfg, err := synth.ArchPreset("gemma3n", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(*gguf.Writer) {})
	windows := fmt.Sprint(m.Windows)
	if windows != "[16 16 16 16 0 16 16 16 16 0 16 16 16 16 0 16 16 16 16 0 16 16 16 16 0]" ||
		m.AltUp != 4 || m.LaurelRank != 64 || m.PLEDim != 256 || m.QueryScale != 1 || m.LogitCap != 30 || m.EmbedScale != 16 ||
		m.Rope.Base != 1e6 || m.LocalRope.Base != 10000 || !m.Rope.Neox {
		t.Errorf("windows %v, streams %d, LAuReL %d, per-layer %d, scale %v, cap %v, embedding %v, rope %v and %v",
			windows, m.AltUp, m.LaurelRank, m.PLEDim, m.QueryScale, m.LogitCap, m.EmbedScale, m.Rope, m.LocalRope)
	}
	// layers 20-23 (windowed) read layer 18's K/V, 24 (global) 19's
	want := "[-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 18 18 18 18 19]"
	if fmt.Sprint(m.KVFrom) != want {
		t.Errorf("K/V from %v, want %v", m.KVFrom, want)
	}
	if g := m.LayerGroups(); fmt.Sprint(g.Layers) != "[4 16]" {
		t.Errorf("groups of %v layers, want the 4 global and 16 windowed ones with K/V of their own", g.Layers)
	}
	// Ollama's converter names the windowed layers' base rope.freq_base_local
	m = loadEdited(t, cfg, func(w *gguf.Writer) {
		w.Delete("gemma3n.rope.freq_base_swa")
		w.Set("gemma3n.rope.freq_base_local", float32(20000))
	})
	if m.LocalRope.Base != 20000 {
		t.Errorf("rope.freq_base_local 20000: the windowed layers' base is %v", m.LocalRope.Base)
	}
	// as in llama.cpp, a model of 20 layers or fewer has K/V on every layer
	few := cfg
	few.Layers = 6
	if m := loadEdited(t, few, func(*gguf.Writer) {}); m.KVFrom != nil {
		t.Errorf("6 layers: K/V from %v, want every layer its own", m.KVFrom)
	}
	// every third layer global: 18 and 19 are both windowed
	refused(t, cfg, func(w *gguf.Writer) { w.Set("gemma3n.attention.sliding_window_pattern", uint32(3)) }, "a windowed one then a global one")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("gemma3n.attention.sliding_window", uint32(0)) }, "gives its window")
}
