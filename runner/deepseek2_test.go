package runner

import (
	"path/filepath"
	"slices"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestDeepseek2Engine: DeepSeek's latent attention through the engine: its
// pool keeps one array a layer for K and V (half a separate pool's
// bytes), and turn 2 of a conversation on a new engine restores turn 1's
// blocks from the store and gives what a cold run gives.
func TestDeepseek2Engine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deepseek2.gguf")
	if err := synth.WriteTiny(path, "deepseek2", gguf.TypeQ8_0, 5); err != nil {
		t.Fatal(err)
	}
	load := func() *Model { return loadClosed(t, path, LoadOptions{NumCtx: 1024}) }
	m1 := load()
	spec := m1.KV.Spec()
	if !spec.SharedKV || spec.KVHeads != 1 || spec.HeadDim != 160 || spec.BytesPerToken() != int64(spec.Layers)*160*2 {
		t.Fatalf("pool %+v, %d bytes a token; want one shared F16 head of 160 a layer", spec, spec.BytesPerToken())
	}
	st := newMemStore()
	greedy := SampleOptions{RepeatPenalty: 1}
	turn1 := promptOf(300, 31)
	e1 := newEngine(t, m1, EngineOptions{Store: st})
	r1 := run(t, e1, Request{Prompt: turn1, Sample: greedy, NumPredict: 8})
	e1.Close()
	turn2 := append(append(slices.Clone(turn1), r1.tokens[0]...), promptOf(40, 32)[1:]...)
	m2 := load()
	warm := run(t, newEngine(t, m2, EngineOptions{Store: st}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	full := (300 + 7) / 16 * 16
	if warm.stats.RestoredTokens != full {
		t.Errorf("turn 2 restored %d tokens, want %d", warm.stats.RestoredTokens, full)
	}
	cold := run(t, newEngine(t, m2, EngineOptions{NoPrefixCache: true}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if !slices.Equal(warm.tokens[0], cold.tokens[0]) {
		t.Errorf("restored %v, cold %v", warm.tokens[0], cold.tokens[0])
	}
}
