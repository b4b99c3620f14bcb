package runner

import (
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// regroup lays m's K/V out in a cache per layer group of windows, as a
// model whose config gave them would load (the old cache stays allocated
// until the model closes).
func regroup(t testing.TB, m *Model, windows []int) {
	t.Helper()
	g := arch.LayerGroups(windows, m.Arch.Layers)
	base := m.KV.Spec()
	base.Layers = m.Arch.Layers
	specs := groupSpecs(g, base, m.Opt.MaxSeqs, m.Opt.NumBatch, m.Opt.NumCtx, 0)
	startSliding(g, specs, m.Opt) // the CPU grows its pools
	caches, err := newCaches(m.Arch.Backend(), g, specs)
	if err != nil {
		t.Fatal(err)
	}
	m.Groups, m.Caches, m.KV = g, caches, caches[0]
}

// TestEngineLayerGroups: with its layers' K/V in two caches, each with
// its own pool and block tables (a window longer than any context, so
// attention is unchanged), the engine gives what one cache gives, under
// concurrent requests with a shared prefix, and resumes a cached prefix.
func TestEngineLayerGroups(t *testing.T) {
	greedy := SampleOptions{RepeatPenalty: 1}
	doc := promptOf(700, 31)
	var reqs []Request
	for i := range 6 {
		reqs = append(reqs, Request{Prompt: append(slices.Clone(doc), promptOf(20+9*i, uint64(40+i))[1:]...), Sample: greedy, NumPredict: 12})
	}
	runAll := func(e *Engine) [][]int32 {
		out := make([][]int32, len(reqs))
		var wg sync.WaitGroup
		for i, r := range reqs {
			wg.Go(func() { out[i] = run(t, e, r).tokens[0] })
		}
		wg.Wait()
		return out
	}
	plain := tinyModel(t, LoadOptions{NumCtx: 2048})
	want := runAll(newEngine(t, plain, EngineOptions{NoPrefixCache: true}))

	m := tinyModel(t, LoadOptions{NumCtx: 2048})
	regroup(t, m, []int{0, 1 << 20})
	e := newEngine(t, m, EngineOptions{})
	got := runAll(e)
	for i := range reqs {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("request %d: two groups %v, one cache %v", i, got[i], want[i])
		}
	}
	again := run(t, e, reqs[0])
	if again.stats.CachedTokens < 700/16*16 {
		t.Errorf("the same prompt again: %d tokens cached, want at least %d", again.stats.CachedTokens, 700/16*16)
	}
	if !slices.Equal(again.tokens[0], want[0]) {
		t.Errorf("from the cache %v, want %v", again.tokens[0], want[0])
	}
	st := e.Stats()
	if len(st.Groups) != 2 || st.Groups[0].Layers != 1 || st.Groups[1].Layers != 1 || st.Groups[1].Window != 1<<20 || st.Groups[1].Peak == 0 {
		t.Errorf("group stats %+v", st.Groups)
	}
}

// TestPersistLayerGroups: persisted blocks carry every layer group's
// K/V, and a restart restores them into each group's pool.
func TestPersistLayerGroups(t *testing.T) {
	st := newMemStore()
	greedy := SampleOptions{RepeatPenalty: 1}
	turn1 := promptOf(600, 51)
	m1 := tinyModel(t, LoadOptions{NumCtx: 2048})
	regroup(t, m1, []int{0, 1 << 20})
	r1 := run(t, newEngine(t, m1, EngineOptions{Store: st}), Request{Prompt: turn1, Sample: greedy, NumPredict: 8})
	turn2 := append(append(slices.Clone(turn1), r1.tokens[0]...), promptOf(30, 52)[1:]...)

	m2 := tinyModel(t, LoadOptions{NumCtx: 2048})
	regroup(t, m2, []int{0, 1 << 20})
	warm := run(t, newEngine(t, m2, EngineOptions{Store: st}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if full := (600 + 7) / 16 * 16; warm.stats.RestoredTokens != full {
		t.Errorf("restored %d tokens, want %d", warm.stats.RestoredTokens, full)
	}
	plain := tinyModel(t, LoadOptions{NumCtx: 2048})
	want := run(t, newEngine(t, plain, EngineOptions{NoPrefixCache: true}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if !slices.Equal(warm.tokens[0], want.tokens[0]) {
		t.Errorf("restored %v, one cache %v", warm.tokens[0], want.tokens[0])
	}
}

// windowed loads the tiny model with layer 1 attending a sliding window of
// w tokens (layer 0 full), its K/V in one cache that keeps every block
// (grouped false: the reference) or in a cache per layer group whose
// sliding pool lets blocks go (grouped true).
func windowed(t testing.TB, w int, grouped bool, opt LoadOptions) *Model {
	t.Helper()
	m := tinyModel(t, opt)
	m.Arch.Windows = []int{0, w}
	if grouped {
		regroup(t, m, m.Arch.Windows)
	}
	return m
}

// TestEngineSlidingWindow: a model whose second layer slides over 64
// tokens gives, with that layer's blocks released as they leave the
// window, the tokens and log-probabilities it gives with every block
// kept: one long request, then six at once sharing a prefix and a
// sampled one forked, then a continuation resumed from the cache. The
// sliding pool holds a few windows, not contexts.
func TestEngineSlidingWindow(t *testing.T) {
	const w = 64
	greedy := SampleOptions{RepeatPenalty: 1}
	doc := promptOf(900, 61)
	reqs := []Request{{Prompt: promptOf(1500, 62), Sample: greedy, NumPredict: 40, TopLogprobs: 1}}
	for i := range 6 {
		reqs = append(reqs, Request{Prompt: append(slices.Clone(doc), promptOf(10+13*i, uint64(70+i))[1:]...), Sample: greedy, NumPredict: 20})
	}
	reqs = append(reqs, Request{Prompt: doc, Sample: SampleOptions{Temperature: 0.8, Seed: 3, RepeatPenalty: 1}, NumPredict: 20, N: 3})
	// request 0 alone, then its next turn (resumed from the cache on e),
	// then the rest at once
	next := func(first result) Request {
		return Request{Prompt: append(append(slices.Clone(reqs[0].Prompt), first.tokens[0]...), promptOf(20, 63)[1:]...), Sample: greedy, NumPredict: 10}
	}
	turns := map[*Engine]result{}
	runAll := func(e *Engine) []result {
		out := []result{run(t, e, reqs[0])}
		turns[e] = run(t, e, next(out[0]))
		rest := make([]result, len(reqs)-1)
		var wg sync.WaitGroup
		for i, r := range reqs[1:] {
			wg.Go(func() { rest[i] = run(t, e, r) })
		}
		wg.Wait()
		return append(out, rest...)
	}
	opt := LoadOptions{NumCtx: 2048, NumBatch: 128, MaxSeqs: 8}
	ref := newEngine(t, windowed(t, w, false, opt), EngineOptions{NoPrefixCache: true})
	want := runAll(ref)
	m := windowed(t, w, true, opt)
	e := newEngine(t, m, EngineOptions{})
	got := runAll(e)
	for i := range reqs {
		for k := range got[i].tokens {
			if !slices.Equal(got[i].tokens[k], want[i].tokens[k]) {
				t.Errorf("request %d sample %d: released %v, all kept %v", i, k, got[i].tokens[k], want[i].tokens[k])
			}
		}
	}

	// the next turn of request 0 resumed at its end from the cache
	warm, cold := turns[e], turns[ref]
	if min := (1500 + 39) / 16 * 16; warm.stats.CachedTokens < min {
		t.Errorf("next turn: %d tokens from the cache, want at least %d", warm.stats.CachedTokens, min)
	}
	if !slices.Equal(warm.tokens[0], cold.tokens[0]) {
		t.Errorf("next turn resumed %v, all kept %v", warm.tokens[0], cold.tokens[0])
	}

	st := e.Stats()
	swa := st.Groups[1]

	// a sequence holds its window and one pass: ⌈(64+128)/16⌉+1 blocks
	if perSeq := (w+128)/16 + 1; swa.Blocks > 8*(w/16+2)+128/16+1 || swa.Peak > swa.Blocks {
		t.Errorf("sliding pool %d blocks, peak %d (a sequence needs at most %d)", swa.Blocks, swa.Peak, perSeq)
	}
	if swa.Window != w || st.Groups[0].Window != 0 {
		t.Errorf("group windows %d and %d", st.Groups[0].Window, swa.Window)
	}
}

// TestEngineSlidingMemory: from the engine's own block counts, a context
// of 64 windows (4096 tokens, window 64, prefill in passes of 64: 32k,
// 512 and 512 scaled by 1/8) holds, with Gemma 3 1B's layers (4 full, 22
// sliding), at most a quarter of the K/V of a full-attention cache, at
// the end and at the peak, and the sliding group's blocks stay within a
// window and a pass.
func TestEngineSlidingMemory(t *testing.T) {
	const w, ctx, pass = 64, 4096, 64
	opt := LoadOptions{NumCtx: ctx, NumBatch: pass, MaxSeqs: 1}
	m := windowed(t, w, true, opt)
	e := newEngine(t, m, EngineOptions{NoPrefixCache: true})
	st, err := e.Submit(t.Context(), Request{Prompt: promptOf(ctx-32, 81), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 32})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, st, 1)
	s := e.Stats()
	full, swa := s.Groups[0].Peak, s.Groups[1].Peak
	if full != ctx/16 {
		t.Errorf("full group peak %d blocks, want %d", full, ctx/16)
	}
	if want := (w+pass)/16 + 1; swa > want {
		t.Errorf("sliding group peak %d blocks, want at most %d (a window and a pass)", swa, want)
	}
	ratio := float64(4*full+22*swa) / float64(26*full)
	if ratio > 0.25 {
		t.Errorf("with Gemma 3 1B's layers the peak is %.3f of a full-attention cache, want at most 0.25", ratio)
	}
	t.Logf("full %d blocks, sliding %d at the peak: %.1f%% of a full-attention cache", full, swa, 100*ratio)
}

// TestEngineGemmaSlidingWindow: Gemma 2 and 3 (the tiny synthetic ones:
// gemma2 slides 16 tokens on every other layer, gemma3 on five of six)
// load with a sliding layer group whose blocks go back as they leave the
// window, and give the tokens and log-probabilities of the same model
// with one cache that keeps every block: concurrent requests sharing a
// prefix, then the next turn of one resumed from the cache.
func TestEngineGemmaSlidingWindow(t *testing.T) {
	for _, a := range []string{"gemma2", "gemma3"} {
		t.Run(a, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), a+".gguf")
			if err := synth.WriteTiny(path, a, gguf.TypeQ8_0, 7); err != nil {
				t.Fatal(err)
			}
			load := func() *Model { return loadClosed(t, path, LoadOptions{NumCtx: 1024, NumBatch: 64, MaxSeqs: 4}) }
			m := load()
			if len(m.Caches) != 2 || m.Groups.Windows[1] != 16 {
				t.Fatalf("layer groups %+v", m.Groups)
			}
			ref := load()
			regroup(t, ref, nil) // one cache of every layer, every block kept
			re, e := newEngine(t, ref, EngineOptions{NoPrefixCache: true}), newEngine(t, m, EngineOptions{})

			releasedMatchesKept(t, e, re, 91)
			if st := e.Stats().Groups[1]; st.Peak > st.Blocks || st.Blocks > slidingBlocks(16, 16, 4, 64) {
				t.Errorf("sliding group: pool %d, peak %d", st.Blocks, st.Peak)
			}
		})
	}
}

// runConcurrent runs reqs on e at once and returns their results in order.
func runConcurrent(t *testing.T, e *Engine, reqs []Request) []result {
	out := make([]result, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { out[i] = run(t, e, r) })
	}
	wg.Wait()
	return out
}

// releasedMatchesKept runs four concurrent requests sharing a prefix
// (prompts of seed) on e, a model releasing its windows' blocks, and on
// re, the same model keeping every block, and then the next turn of one
// of them, resumed from e's cache: the tokens and the first
// log-probability must be those of re.
func releasedMatchesKept(t *testing.T, e, re *Engine, seed uint64) {
	t.Helper()
	greedy := SampleOptions{RepeatPenalty: 1}
	doc := promptOf(200, seed)
	var reqs []Request
	for i := range 4 {
		reqs = append(reqs, Request{Prompt: append(slices.Clone(doc), promptOf(5+11*i, seed+1+uint64(i))[1:]...),
			Sample: greedy, NumPredict: 24, TopLogprobs: 1})
	}
	runAll := func(e *Engine) []result { return runConcurrent(t, e, reqs) }
	want, got := runAll(re), runAll(e)
	for i := range reqs {
		if !slices.Equal(got[i].tokens[0], want[i].tokens[0]) {
			t.Errorf("request %d: released %v, all kept %v", i, got[i].tokens[0], want[i].tokens[0])
		}
	}
	turn2 := Request{Prompt: append(append(slices.Clone(reqs[0].Prompt), got[0].tokens[0]...), promptOf(9, seed+8)[1:]...), Sample: greedy, NumPredict: 8}
	warm, cold := run(t, e, turn2), run(t, re, turn2)
	if warm.stats.CachedTokens == 0 || !slices.Equal(warm.tokens[0], cold.tokens[0]) {
		t.Errorf("next turn: %d tokens from the cache, tokens %v; all kept %v", warm.stats.CachedTokens, warm.tokens[0], cold.tokens[0])
	}
	if lw, lc := firstLogprob(t, e, turn2.Prompt), firstLogprob(t, re, turn2.Prompt); math.Abs(float64(lw-lc)) > 1e-4*math.Max(1, math.Abs(float64(lc))) {
		t.Errorf("first logprob released %v, all kept %v", lw, lc)
	}
}

// TestEngineSlidingPoolGrows: a sliding group's pool starts with room for
// four sequences' windows and grows when sixteen decode at once with no
// cached prefix to evict; the tokens are those of every block kept. Each
// request decodes 300 tokens, so that all sixteen run at once whatever the
// order they arrive in (with 30, the first ones were done before the last
// came, on a quick enough machine, and the pool never had to grow).
func TestEngineSlidingPoolGrows(t *testing.T) {
	const w = 64
	opt := LoadOptions{NumCtx: 1024, NumBatch: 128, MaxSeqs: 16}
	greedy := SampleOptions{RepeatPenalty: 1}
	var reqs []Request
	for i := range 16 {
		reqs = append(reqs, Request{Prompt: promptOf(150+20*i, uint64(200+i)), Sample: greedy, NumPredict: 300})
	}
	runAll := func(e *Engine) []result { return runConcurrent(t, e, reqs) }
	want := runAll(newEngine(t, windowed(t, w, false, opt), EngineOptions{NoPrefixCache: true}))
	m := windowed(t, w, true, opt)
	start := m.Caches[1].Spec().Blocks
	if want := slidingBlocks(w, 16, 4, 128); start != want {
		t.Fatalf("sliding pool starts with %d blocks, want %d", start, want)
	}
	e := newEngine(t, m, EngineOptions{NoPrefixCache: true})
	got := runAll(e)
	preempted := 0
	for i := range reqs {
		preempted += got[i].stats.Preemptions
		if !slices.Equal(got[i].tokens[0], want[i].tokens[0]) {
			t.Errorf("request %d: %v, all kept %v", i, got[i].tokens[0], want[i].tokens[0])
		}
	}
	st := e.Stats().Groups[1]
	if st.Blocks <= start || st.Blocks > slidingBlocks(w, 16, 16, 128) {
		t.Errorf("sliding pool of %d blocks after 16 at once: want it grown from %d, to at most %d", st.Blocks, start, slidingBlocks(w, 16, 16, 128))
	}
	t.Logf("sliding pool %d → %d blocks, peak %d, %d preemptions", start, st.Blocks, st.Peak, preempted)
}

// TestSlidingPoolSizes: Gemma 3 1B's layer groups at num_ctx 32768 (the
// defaults otherwise: num_batch 512, 64 sequences, blocks of 16) load with
// 17.1% of a full-attention cache's K/V where the pool grows (room for 4
// sequences' windows), and 38.2% where it cannot (room for 64).
func TestSlidingPoolSizes(t *testing.T) {
	windows := make([]int, 26)
	for l := range windows {
		if (l+1)%6 != 0 {
			windows[l] = 512
		}
	}
	g := arch.LayerGroups(windows, 26)
	opt := LoadOptions{NumBatch: 512, MaxSeqs: 64}
	base := gpu.KVSpec{Layers: 26, Blocks: 4 * 32768 / 16, BlockSize: 16, KVHeads: 1, HeadDim: 256, Type: gguf.TypeF16}
	specs := groupSpecs(g, base, opt.MaxSeqs, opt.NumBatch, 32768, 0)
	share := func() float64 {
		var b int64
		for _, sp := range specs {
			b += sp.Bytes()
		}
		return float64(b) / float64(base.Bytes())
	}
	if got := share(); math.Abs(got-0.382) > 0.001 || specs[1].Blocks != 64*34+33 {
		t.Errorf("without growth: %d sliding blocks, %.3f of a full-attention cache; want %d and 0.382", specs[1].Blocks, got, 64*34+33)
	}
	startSliding(g, specs, opt)
	if got := share(); math.Abs(got-0.171) > 0.001 || specs[1].Blocks != 4*34+33 {
		t.Errorf("growing: %d sliding blocks, %.3f of a full-attention cache; want %d and 0.171", specs[1].Blocks, got, 4*34+33)
	}
}

// TestSlidingFixedBudget: a FOLIO_KV_MEMORY that holds num_ctx for every
// layer of Gemma 3 1B (a full-attention cache's bytes) loads with windows
// too: the sliding groups hold fewer sequences' windows, so that the
// full-attention group keeps num_ctx (before, the 64 sequences' windows
// took the whole budget: 0 tokens, and the load refused it).
func TestSlidingFixedBudget(t *testing.T) {
	windows := make([]int, 26)
	for l := range windows {
		if (l+1)%6 != 0 {
			windows[l] = 512
		}
	}
	g := arch.LayerGroups(windows, 26)
	const numCtx = 4096
	base := gpu.KVSpec{Layers: 26, Blocks: 4 * numCtx / 16, BlockSize: 16, KVHeads: 1, HeadDim: 256, Type: gguf.TypeF16}
	full := base
	full.Blocks = numCtx / 16
	specs := groupSpecs(g, base, 64, 512, numCtx, full.Bytes())
	var total int64
	for _, sp := range specs {
		total += sp.Bytes()
	}
	if specs[0].Tokens() < numCtx || total > full.Bytes() || specs[1].Blocks < slidingBlocks(512, 16, 1, 512) {
		t.Errorf("full-attention group holds %d tokens (want ≥ %d), sliding group %d blocks (want ≥ one window's %d), %d bytes in all (budget %d)",
			specs[0].Tokens(), numCtx, specs[1].Blocks, slidingBlocks(512, 16, 1, 512), total, full.Bytes())
	}
}

// TestPersistSlidingWindow: a model sliding 64 tokens on one layer
// persists every block whole (its sliding part saved before it leaves
// the window), and after a restart restores them, letting the sliding
// part go again as the restore moves past it: the next turn gives the
// tokens of a cache that keeps every block.
func TestPersistSlidingWindow(t *testing.T) {
	st := newMemStore()
	greedy := SampleOptions{RepeatPenalty: 1}
	opt := LoadOptions{NumCtx: 2048, NumBatch: 128, MaxSeqs: 4}
	turn1 := promptOf(700, 301)
	r1 := run(t, newEngine(t, windowed(t, 64, true, opt), EngineOptions{Store: st}), Request{Prompt: turn1, Sample: greedy, NumPredict: 8})
	if want := (700 + 8 - 1) / 16; len(st.blocks) != want {
		t.Errorf("%d blocks persisted, want %d", len(st.blocks), want)
	}
	turn2 := append(append(slices.Clone(turn1), r1.tokens[0]...), promptOf(30, 302)[1:]...)
	m2 := windowed(t, 64, true, opt)
	e2 := newEngine(t, m2, EngineOptions{Store: st})
	warm := run(t, e2, Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if full := (700 + 7) / 16 * 16; warm.stats.RestoredTokens != full {
		t.Errorf("restored %d tokens, want %d", warm.stats.RestoredTokens, full)
	}
	want := run(t, newEngine(t, windowed(t, 64, false, opt), EngineOptions{NoPrefixCache: true}), Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if !slices.Equal(warm.tokens[0], want.tokens[0]) {
		t.Errorf("restored %v, all kept %v", warm.tokens[0], want.tokens[0])
	}
}
