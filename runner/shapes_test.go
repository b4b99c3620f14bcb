package runner

import (
	"path/filepath"
	"slices"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// loadClosed loads the model at path, closed when the test ends.
func loadClosed(t testing.TB, path string, opt LoadOptions) *Model {
	t.Helper()
	m, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestEngineGemma4Shapes: Gemma 4's windowed and global layers keep K/V of
// two shapes (heads of 64 over two K/V heads, of 128 over one) in their
// groups' caches, and in E2B's and E4B's layout (8 layers, the last 4
// sharing) only the layers that write K/V have rows there; with the
// windowed blocks released as they leave the window and a cached prefix
// resumed, the engine gives the tokens and log-probability of the same
// model whose windowed group keeps every block (a group window past any
// context; attention still windowed).
func TestEngineGemma4Shapes(t *testing.T) {
	for name, edits := range gemma4Layouts {
		t.Run(name, func(t *testing.T) { testGemma4Shapes(t, edits) })
	}
}

// gemma4Layouts are the tiny gemma4's edits to 31B's layout (none) and to
// E4B's: 8 layers, the last 4 sharing K/V (of the 6 windowed, 3 write
// it), per-layer embeddings and double-wide feed-forwards.
var gemma4Layouts = map[string][]func(*synth.Config){
	"31B": nil,
	"E4B": {func(c *synth.Config) { c.Layers, c.SharedKV, c.PLEDim, c.DoubleWide = 8, 4, 64, true }},
}

func testGemma4Shapes(t *testing.T, edits []func(*synth.Config)) {
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	if err := synth.WriteTiny(path, "gemma4", gguf.TypeQ8_0, 7, edits...); err != nil {
		t.Fatal(err)
	}
	load := func() *Model { return loadClosed(t, path, LoadOptions{NumCtx: 1024, NumBatch: 64, MaxSeqs: 4}) }
	m := load()
	if s0, s1 := m.Caches[0].Spec(), m.Caches[1].Spec(); len(m.Caches) != 2 || m.Groups.Windows[1] != 16 ||
		s0.KVHeads != 1 || s0.HeadDim != 128 || s1.KVHeads != 2 || s1.HeadDim != 64 || s1.Layers != 3 {
		t.Fatalf("layer groups %+v, caches %+v and %+v", m.Groups, s0, s1)
	}
	ref := load()
	g := ref.Arch.LayerGroups()
	g.Windows[1] = 1 << 20 // every block kept
	specs := groupSpecs(g, ref.KV.Spec(), ref.Opt.MaxSeqs, ref.Opt.NumBatch, ref.Opt.NumCtx, 0)
	caches, err := newCaches(ref.Arch.Backend(), g, specs)
	if err != nil {
		t.Fatal(err)
	}
	ref.Groups, ref.Caches, ref.KV = g, caches, caches[0]
	re, e := newEngine(t, ref, EngineOptions{NoPrefixCache: true}), newEngine(t, m, EngineOptions{})

	releasedMatchesKept(t, e, re, 71)
}

// TestPersistGemma4Shapes: the blocks of both of Gemma 4's K/V shapes go
// to the prefix store and come back into a model loaded again, which then
// continues as a model that computed the whole prompt.
func TestPersistGemma4Shapes(t *testing.T) {
	for name, edits := range gemma4Layouts {
		t.Run(name, func(t *testing.T) { testPersistGemma4(t, edits) })
	}
}

func testPersistGemma4(t *testing.T, edits []func(*synth.Config)) {
	path := filepath.Join(t.TempDir(), "gemma4.gguf")
	if err := synth.WriteTiny(path, "gemma4", gguf.TypeQ8_0, 7, edits...); err != nil {
		t.Fatal(err)
	}
	load := func() *Model { return loadClosed(t, path, LoadOptions{NumCtx: 1024, NumBatch: 64, MaxSeqs: 2}) }
	st, greedy := newMemStore(), SampleOptions{RepeatPenalty: 1}
	turn1 := promptOf(300, 81)
	r1 := run(t, newEngine(t, load(), EngineOptions{Store: st}), Request{Prompt: turn1, Sample: greedy, NumPredict: 8})
	turn2 := append(append(slices.Clone(turn1), r1.tokens[0]...), promptOf(20, 82)[1:]...)
	warm := run(t, newEngine(t, load(), EngineOptions{Store: st}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	cold := run(t, newEngine(t, load(), EngineOptions{NoPrefixCache: true}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if warm.stats.RestoredTokens == 0 || !slices.Equal(warm.tokens[0], cold.tokens[0]) {
		t.Errorf("restored %d tokens, then %v; computed %v", warm.stats.RestoredTokens, warm.tokens[0], cold.tokens[0])
	}
}
