package runner

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
	"folio/models/synth"
)

// tinyBlockBytes is one block of tiny's F16 K/V: 2 layers × 2 heads × 64,
// K and V, 16 slots.
const tinyBlockBytes = 16 * 2 * 2 * 128 * 2

// TestEngineGrowsPoolForNumCtx: a request whose num_ctx is larger than the
// K/V pool grows the pool between two steps of a request in flight, which
// goes on to give what it gives alone; the prefix cached before the
// growth is reused by the request that grew it; both get what they get on
// a pool that was large enough from the start. Over F16 and Q8_0 caches.
func TestEngineGrowsPoolForNumCtx(t *testing.T) {
	for _, kv := range []string{"f16", "q8_0"} {
		t.Run(kv, func(t *testing.T) { growsPoolForNumCtx(t, kv) })
	}
}

func growsPoolForNumCtx(t *testing.T, kv string) {
	greedy := SampleOptions{RepeatPenalty: 1}
	doc := promptOf(100, 11)
	reqC := Request{Prompt: doc, Sample: greedy, NumPredict: 4}
	reqA := Request{Prompt: promptOf(20, 12), Sample: greedy, NumPredict: 100}
	reqB := Request{Prompt: append(slices.Clone(doc), promptOf(30, 13)[1:]...), Sample: greedy, NumPredict: 8, NumCtx: 1024}

	big := newEngine(t, tinyModel(t, LoadOptions{NumCtx: 1024, KVType: kv}), EngineOptions{NoPrefixCache: true})
	wantA, wantB := run(t, big, reqA), run(t, big, reqB)
	if wantA.err != nil || wantB.err != nil {
		t.Fatalf("alone on a large pool: %v, %v", wantA.err, wantB.err)
	}

	m := tinyModel(t, LoadOptions{NumCtx: 128, KVType: kv}) // 4 × 128 tokens: 32 blocks
	e := newEngine(t, m, EngineOptions{})
	if got := e.Stats().Blocks; got != 32 {
		t.Fatalf("a pool of %d blocks, want 32", got)
	}
	// Once A has sampled its first token, its next step waits for the
	// next call to the loop (B's growth) and records what ran then.
	var gate atomic.Bool
	parked := make(chan struct{})
	running, generated := -1, -1
	e.stepFault = func() {
		if !gate.Load() || len(e.running) == 0 || e.running[0].gen == 0 || e.pm.NumBlocks() != 32 {
			return
		}
		parked <- struct{}{}
		select {
		case grow := <-e.calls:
			running, generated = len(e.running), e.running[0].gen
			grow()
		case <-e.quit: // B was refused without a call
		}
	}

	if res := run(t, e, reqC); res.err != nil { // caches doc's 6 full blocks
		t.Fatal(res.err)
	}
	gate.Store(true)
	stA, err := e.Submit(context.Background(), reqA)
	if err != nil {
		t.Fatal(err)
	}
	<-parked
	stB, err := e.Submit(context.Background(), reqB)
	if err != nil {
		t.Fatalf("num_ctx 1024 on a pool of 512 tokens: %v", err)
	}
	if running != 1 || generated != 1 {
		t.Errorf("at the growth %d sequences ran, the first had generated %d tokens; want A alone, after 1", running, generated)
	}
	gotA, gotB := collect(t, stA, 1), collect(t, stB, 1)
	if gotA.err != nil || !slices.Equal(gotA.tokens[0], wantA.tokens[0]) {
		t.Errorf("A, in flight during the growth: %v %v; alone %v", gotA.err, gotA.tokens[0], wantA.tokens[0])
	}
	if gotB.err != nil || !slices.Equal(gotB.tokens[0], wantB.tokens[0]) {
		t.Errorf("B after the growth: %v %v; alone %v", gotB.err, gotB.tokens[0], wantB.tokens[0])
	}
	if gotB.stats == nil || gotB.stats.CachedTokens != 96 {
		t.Errorf("B's stats %+v: want 96 tokens from the prefix cached before the growth", gotB.stats)
	}
	if st := e.Stats(); st.Blocks != 64 || st.Growths != 1 || m.KV.Spec().Blocks != 64 {
		t.Errorf("after the growth: %+v, the backend's pool %d blocks; want 64 blocks, grown once", st, m.KV.Spec().Blocks)
	}
	if res := run(t, e, reqB); res.err != nil || e.Stats().Growths != 1 { // fits now
		t.Errorf("B again: %v, %d growths; want no more", res.err, e.Stats().Growths)
	}
}

// TestEngineKVMemoryIsAHardLimit: with FOLIO_KV_MEMORY (LoadOptions.KVMemory)
// set, a num_ctx larger than the pool is refused (400) naming it, and the
// pool stays as it was.
func TestEngineKVMemoryIsAHardLimit(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 128, KVMemory: 32 * tinyBlockBytes})
	e := newEngine(t, m, EngineOptions{})
	_, err := e.Submit(context.Background(), Request{Prompt: promptOf(10, 1), Sample: DefaultSampleOptions(), NumCtx: 1024})
	if !errors.Is(err, ErrRequest) || !strings.Contains(err.Error(), "FOLIO_KV_MEMORY") || !strings.Contains(err.Error(), "num_ctx 1024") {
		t.Errorf("num_ctx 1024 on a pool of 512 tokens fixed by KVMemory: %v; want a request error naming num_ctx and FOLIO_KV_MEMORY", err)
	}
	if st := e.Stats(); st.Blocks != 32 || st.Growths != 0 || m.KVBudget != 32*tinyBlockBytes {
		t.Errorf("after the refusal: %+v, budget %d; want the 32 blocks of KVMemory", st, m.KVBudget)
	}
}

// TestEngineGrowthNeedsMemory: past the model's K/V budget a larger
// num_ctx is a request error (400), and within it, memory not free now is
// ErrNoMemory (507); both name FOLIO_KV_MEMORY and leave the pool, which
// still serves, as it was. Where memory is free the pool grows up to what
// is asked, not past half of it.
func TestEngineGrowthNeedsMemory(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 128}) // 32 blocks
	if m.KVBudget < 32*tinyBlockBytes {
		t.Fatalf("budget %d, less than the pool it loaded with", m.KVBudget)
	}
	m.KVBudget = 100 * tinyBlockBytes
	e := newEngine(t, m, EngineOptions{})
	free := int64(1 << 40)
	e.poolMemory = func() (int64, int64, bool) { return free, 2 * free, true }
	submit := func(numCtx int) error {
		st, err := e.Submit(context.Background(), Request{Prompt: promptOf(10, 1), Sample: DefaultSampleOptions(), NumCtx: numCtx, NumPredict: 2})
		if err == nil {
			err = collect(t, st, 1).err
		}
		return err
	}
	if err := submit(101 * 16); !errors.Is(err, ErrRequest) || !strings.Contains(err.Error(), "budget") || !strings.Contains(err.Error(), "FOLIO_KV_MEMORY") {
		t.Errorf("num_ctx past the budget: %v; want a request error naming the budget and FOLIO_KV_MEMORY", err)
	}
	free = 100 * tinyBlockBytes // half of it: 50 blocks
	if err := submit(51 * 16); !errors.Is(err, ErrNoMemory) || !strings.Contains(err.Error(), "FOLIO_KV_MEMORY") {
		t.Errorf("num_ctx past the free memory: %v; want ErrNoMemory naming FOLIO_KV_MEMORY", err)
	}
	if st := e.Stats(); st.Blocks != 32 || st.Growths != 0 {
		t.Errorf("after the refusals: %+v; want the 32 blocks it loaded with", st)
	}
	if err := submit(40 * 16); err != nil { // doubling would take 64 blocks: 50 fit
		t.Fatal(err)
	}
	if st := e.Stats(); st.Blocks != 50 || st.Growths != 1 {
		t.Errorf("after growing within free memory: %+v; want 50 blocks", st)
	}
}

// TestDefaultKVBudget: half the memory free at load after the rest of the
// model, never below the pool the model loads with.
func TestDefaultKVBudget(t *testing.T) {
	const gib = int64(1) << 30
	for _, c := range []struct {
		name                      string
		avail, model, floor, want int64
	}{
		{"plenty", 16 * gib, 4 * gib, gib / 4, 6 * gib},
		{"the model takes most", 5 * gib, 4 * gib, gib / 4, gib / 2},
		{"less than the pool", 5 * gib, 4 * gib, 2 * gib, 2 * gib},
		{"the model does not fit", 2 * gib, 4 * gib, gib / 4, gib / 4},
	} {
		if got := DefaultKVBudget(c.avail, c.model, c.floor); got != c.want {
			t.Errorf("%s: DefaultKVBudget(%d, %d, %d) = %d, want %d", c.name, c.avail, c.model, c.floor, got, c.want)
		}
	}
	// Load: the budget of the memory it found, or the pool's own size
	m := tinyModel(t, LoadOptions{NumCtx: 128})
	spec := m.KV.Spec()
	if avail, _, ok := gpu.HostMemory(); ok && m.KVBudget <= spec.Bytes() && avail > 4*spec.Bytes()+m.Bytes.Total() {
		t.Errorf("budget %d with %d bytes available: no more than the pool of %d", m.KVBudget, avail, spec.Bytes())
	}
}

// TestPoolFitsMemory: a model loads with room for 4 × num_ctx tokens where
// half the memory free after its weights and scratch holds them, else with
// as many as that half holds but never fewer than num_ctx; past what even
// num_ctx needs the load is refused, naming num_ctx. Each model serves a
// request of num_ctx, or of twice that where its budget lets it grow.
func TestPoolFitsMemory(t *testing.T) {
	const numCtx = 128 // 8 blocks of tinyBlockBytes
	was := hostMemory
	t.Cleanup(func() { hostMemory = was })
	ref := tinyModel(t, LoadOptions{NumCtx: numCtx})
	model := ref.Bytes.Weights + ref.Bytes.Scratch
	block := int64(tinyBlockBytes)
	for _, c := range []struct {
		name   string
		avail  int64 // bytes available
		blocks int   // the pool it loads with
	}{
		{"plenty", model + 2*40*block, 32},
		{"half holds 20 blocks", model + 2*20*block, 20},
		{"half holds fewer than num_ctx's", model + 12*block + max(0, ref.Bytes.Repacked-ref.Bytes.RepackedFrom), 8},
	} {
		hostMemory = func() (int64, int64, bool) { return c.avail, 1 << 40, true }
		m := tinyModel(t, LoadOptions{NumCtx: numCtx})
		if got := m.KV.Spec().Blocks; got != c.blocks {
			t.Errorf("%s: loaded with %d blocks, want %d", c.name, got, c.blocks)
		}
		hostMemory = was
		ctx := 2 * numCtx // a budget of 16 blocks or more grows to it
		if c.blocks == 8 {
			ctx = numCtx
		}
		r := run(t, newEngine(t, m, EngineOptions{}), Request{Prompt: promptOf(ctx-8, 3), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 4, NumCtx: ctx})
		if len(r.tokens[0]) != 4 || m.KV.Spec().Tokens() < ctx {
			t.Errorf("%s: %d tokens, a pool of %d tokens after a request of num_ctx %d", c.name, len(r.tokens[0]), m.KV.Spec().Tokens(), ctx)
		}
	}
	hostMemory = func() (int64, int64, bool) { return 4*block + ref.Bytes.Scratch + ref.Bytes.Repacked, 1 << 40, true }
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, LoadOptions{NumCtx: numCtx}); !errors.Is(err, ErrNoMemory) || !strings.Contains(err.Error(), "num_ctx 128") {
		t.Errorf("less memory than num_ctx's K/V: %v; want ErrNoMemory naming num_ctx", err)
	}
}

// TestPoolGrowsUnderLoad: a pool that loaded with room for one num_ctx
// (memory was short) grows as sequences that do not fit arrive, back up to
// room for 4 × num_ctx and no further, and every request gets the tokens
// it gets alone.
func TestPoolGrowsUnderLoad(t *testing.T) {
	const numCtx = 128
	was := hostMemory
	t.Cleanup(func() { hostMemory = was })
	ref := tinyModel(t, LoadOptions{NumCtx: numCtx})
	hostMemory = func() (int64, int64, bool) {
		return ref.Bytes.Weights + ref.Bytes.Scratch + 12*tinyBlockBytes + max(0, ref.Bytes.Repacked-ref.Bytes.RepackedFrom), 1 << 40, true
	}
	m := tinyModel(t, LoadOptions{NumCtx: numCtx})
	hostMemory = was
	if got := m.KV.Spec().Blocks; got != numCtx/16 {
		t.Fatalf("loaded with %d blocks, want %d", got, numCtx/16)
	}
	m.KVBudget = 1000 * tinyBlockBytes
	reqs := make([]Request, 8)
	alone := make([]result, len(reqs))
	solo := newEngine(t, m, EngineOptions{})
	for i := range reqs {
		reqs[i] = Request{Prompt: promptOf(90+i, uint64(i)), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 12}
		alone[i] = run(t, solo, reqs[i])
	}
	solo.Close()
	e := newEngine(t, m, EngineOptions{})
	e.poolMemory = func() (int64, int64, bool) { return 1 << 40, 1 << 41, true }
	var streams []*Stream
	for _, r := range reqs {
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	for i, st := range streams {
		if got := collect(t, st, 1); got.err != nil || !slices.Equal(got.tokens[0], alone[i].tokens[0]) {
			t.Errorf("request %d: %v, %v; alone %v", i, got.tokens, got.err, alone[i].tokens)
		}
	}
	if st := e.Stats(); st.Blocks != 4*numCtx/16 || st.Growths == 0 {
		t.Errorf("after 8 requests of ~7 blocks each at once: %+v; want the pool grown to %d blocks", st, 4*numCtx/16)
	}
}
