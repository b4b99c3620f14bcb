package runner

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"folio/gpu/cpu"
	"folio/internal/fixtures"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// tinyModel loads a small synthetic llama (256 wide, 2 layers, vocab 512)
// with opt.
func tinyModel(t testing.TB, opt LoadOptions) *Model {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 5); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newEngine(t testing.TB, m *Model, opt EngineOptions) *Engine {
	t.Helper()
	e, err := NewEngine(m, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// result is what a client of one request saw.
type result struct {
	texts   []string  // per sample: the concatenated text
	tokens  [][]int32 // per sample
	reasons []string
	stats   *Stats
	err     error
}

func collect(t testing.TB, st *Stream, n int) result {
	t.Helper()
	res := result{texts: make([]string, n), tokens: make([][]int32, n), reasons: make([]string, n)}
	for {
		ev, ok := st.Recv(context.Background())
		if !ok {
			return res
		}
		if ev.Token >= 0 {
			res.tokens[ev.Index] = append(res.tokens[ev.Index], ev.Token)
		}
		res.texts[ev.Index] += ev.Text
		if ev.Done {
			res.reasons[ev.Index] = ev.Reason
			if ev.Err != nil {
				res.err = ev.Err
			}
			if ev.Stats != nil {
				res.stats = ev.Stats
			}
		}
	}
}

func run(t testing.TB, e *Engine, req Request) result {
	t.Helper()
	st, err := e.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, st, max(req.N, 1))
}

func promptOf(n int, seed uint64) []int32 {
	r := rand.New(rand.NewPCG(seed, 7))
	p := []int32{1}
	for len(p) < n {
		p = append(p, int32(3+r.IntN(500)))
	}
	return p
}

// TestEngineSameResultsUnderLoad: 32 requests at once on a pool so small
// that sequences are preempted give each one what it gives alone.
// Over an F16 and a Q8_0 cache.
func TestEngineSameResultsUnderLoad(t *testing.T) {
	for _, kv := range []string{"f16", "q8_0"} {
		t.Run(kv, func(t *testing.T) { sameResultsUnderLoad(t, kv) })
	}
}

func sameResultsUnderLoad(t *testing.T, kv string) {
	// tiny's K/V: 2 layers × 2 heads × 64, K and V, 16 slots a block
	blockBytes := map[string]int64{"f16": 16 * 2 * 2 * 128 * 2, "q8_0": 16 * 2 * 2 * 128 / 32 * 34}[kv]
	m := tinyModel(t, LoadOptions{NumCtx: 256, KVMemory: 40 * blockBytes, KVType: kv})
	if got := m.KV.Spec().Blocks; got != 40 {
		t.Fatalf("pool of %d blocks, want 40", got)
	}
	reqs := make([]Request, 32)
	for i := range reqs {
		opt := DefaultSampleOptions()
		opt.Seed = int64(i)
		if i%2 == 0 {
			opt.Temperature = 0
		}
		reqs[i] = Request{Prompt: promptOf(10+i*3, uint64(i)), Sample: opt, NumPredict: 40}
	}
	alone := make([]result, len(reqs))
	solo := newEngine(t, m, EngineOptions{})
	for i, r := range reqs {
		alone[i] = run(t, solo, r)
		if alone[i].err != nil {
			t.Fatalf("request %d alone: %v", i, alone[i].err)
		}
	}
	solo.Close()

	// All 32 are submitted before any is read (Submit does not wait), so
	// that they compete for the pool whatever the goroutines' scheduling:
	// submitted from 32 goroutines, on a loaded machine the first ones
	// sometimes finished before the last arrived, and none was preempted.
	e := newEngine(t, m, EngineOptions{})
	streams := make([]*Stream, len(reqs))
	for i, r := range reqs {
		st, err := e.Submit(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st
	}
	var wg sync.WaitGroup
	together := make([]result, len(reqs))
	for i, st := range streams {
		wg.Go(func() { together[i] = collect(t, st, 1) })
	}
	wg.Wait()
	preempted := 0
	for i := range reqs {
		if together[i].err != nil {
			t.Fatalf("request %d among 32: %v", i, together[i].err)
		}
		preempted += together[i].stats.Preemptions
		if !slices.Equal(together[i].tokens[0], alone[i].tokens[0]) {
			t.Errorf("request %d: tokens among 32 differ from alone:\n%v\n%v", i, together[i].tokens[0], alone[i].tokens[0])
		}
	}
	if preempted == 0 {
		t.Errorf("no preemption happened: the test does not test what it says")
	}
	t.Logf("%d preemptions, peak %d of %d blocks", preempted, e.Stats().PeakBlocks, e.Stats().Blocks)
}

// TestEngineCancelReturnsBlocks: cancelling half of 32 running requests
// and finishing the rest gives the pool back its starting free count.
func TestEngineCancelReturnsBlocks(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 512})
	e := newEngine(t, m, EngineOptions{})
	start := e.FreeBlocks()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var streams []*Stream
	for i := range 32 {
		c := context.Background()
		if i%2 == 1 {
			c = ctx
		}
		st, err := e.Submit(c, Request{Prompt: promptOf(30+i, uint64(100+i)), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 200})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	// wait until every request produced a token, then cancel half
	for _, st := range streams {
		if ev, ok := st.Recv(context.Background()); !ok || ev.Done {
			t.Fatalf("request ended before its first token: %+v", ev)
		}
	}
	cancel()
	for i, st := range streams {
		res := collect(t, st, 1)
		if i%2 == 1 && !errors.Is(res.err, context.Canceled) {
			t.Errorf("request %d: cancelled, ended with %v", i, res.err)
		}
		if i%2 == 0 && (res.err != nil || res.reasons[0] != "length") {
			t.Errorf("request %d: %v, reason %q", i, res.err, res.reasons[0])
		}
	}
	e.DropPrefixCache()
	if got := e.FreeBlocks(); got != start {
		t.Errorf("free blocks %d after all requests, want the starting %d", got, start)
	}
}

// TestEngineDropReapsCancelled: a request cancelled between two steps
// (its client gone, no step since) holds no blocks once DropPrefixCache
// has run: an HTTP client that hung up does not wait for the engine's
// next step, and the soak's quiet point counted its blocks as leaked.
func TestEngineDropReapsCancelled(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 512})
	e := newEngine(t, m, EngineOptions{})
	start := e.FreeBlocks()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := e.Submit(ctx, Request{Prompt: promptOf(40, 7), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 400})
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := st.Recv(context.Background()); !ok || ev.Done {
		t.Fatalf("the request ended before its first token: %+v", ev)
	}
	var running, free int
	e.do(func() { // between steps: cancel, then drop at once
		running = len(e.running)
		cancel()
		e.dropPrefixCache()
		free = e.pm.FreeBlocks()
	})
	if running != 1 {
		t.Fatalf("%d sequences running when cancelled, want 1: the test does not test what it says", running)
	}
	if free != start {
		t.Errorf("free blocks %d right after the cancel and the drop, want the starting %d", free, start)
	}
	if res := collect(t, st, 1); !errors.Is(res.err, context.Canceled) {
		t.Errorf("the cancelled request ended with %v", res.err)
	}
}

// TestEngineParallelSampling: n=4 computes a 1,000-token prompt once; the
// samples share its full blocks and each has its own last block; child i
// samples with seed+i.
func TestEngineParallelSampling(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 2048})
	e := newEngine(t, m, EngineOptions{NoPrefixCache: true})
	opt := DefaultSampleOptions()
	opt.Seed = 11
	p := promptOf(1000, 3)
	res := run(t, e, Request{Prompt: p, Sample: opt, NumPredict: 8, N: 4})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if res.stats.PromptTokens != 1000 {
		t.Errorf("prompt tokens computed %d, want 1000 (once)", res.stats.PromptTokens)
	}
	// 62 full prompt blocks shared; 8 prompt tokens + 8 generated fill each
	// sample's own 63rd block.
	if got, want := e.Stats().PeakBlocks, 1000/16+4; got != want {
		t.Errorf("peak blocks %d, want %d (62 shared + 4 own)", got, want)
	}
	for i := range 4 {
		o := opt
		o.Seed = 11 + int64(i)
		alone := run(t, e, Request{Prompt: p, Sample: o, NumPredict: 8})
		if !slices.Equal(alone.tokens[0], res.tokens[i]) {
			t.Errorf("sample %d: %v, alone with seed %d: %v", i, res.tokens[i], o.Seed, alone.tokens[0])
		}
	}
}

// TestEnginePrefixReuse: a second request sharing a 1,000-token prefix
// computes only what follows the cached full blocks.
func TestEnginePrefixReuse(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 2048})
	e := newEngine(t, m, EngineOptions{})
	doc := promptOf(1000, 4)
	greedy := SampleOptions{RepeatPenalty: 1}
	first := run(t, e, Request{Prompt: append(slices.Clone(doc), 5, 6, 7), Sample: greedy, NumPredict: 4})
	if first.stats.CachedTokens != 0 || first.stats.PromptTokens != 1003 {
		t.Errorf("first: cached %d, computed %d; want 0 and 1003", first.stats.CachedTokens, first.stats.PromptTokens)
	}
	second := append(slices.Clone(doc), promptOf(50, 5)[1:]...)
	res := run(t, e, Request{Prompt: second, Sample: greedy, NumPredict: 4})
	if res.stats.CachedTokens != 992 || res.stats.PromptTokens != len(second)-992 {
		t.Errorf("second: cached %d, computed %d; want 992 and %d", res.stats.CachedTokens, res.stats.PromptTokens, len(second)-992)
	}
	cold := newEngine(t, m, EngineOptions{NoPrefixCache: true})
	if want := run(t, cold, Request{Prompt: second, Sample: greedy, NumPredict: 4}); !slices.Equal(res.tokens[0], want.tokens[0]) {
		t.Errorf("with the cached prefix %v, without %v", res.tokens[0], want.tokens[0])
	}
}

// TestEngineStopStrings: the streamed text ends before the first stop
// string and never carries any of it, even split over tokens; the last
// event names the stop string.
func TestEngineStopStrings(t *testing.T) {
	m, err := Load(fixtures.Model(t, "stories260K.gguf"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	e := newEngine(t, m, EngineOptions{})
	greedy := SampleOptions{RepeatPenalty: 1}
	full := run(t, e, Request{Sample: greedy, NumPredict: 120}).texts[0]
	for _, stop := range []string{"Lily", "park. One", "red ball", "\n", "a big"} {
		i := strings.Index(full, stop)
		if i < 0 {
			t.Fatalf("%q is not in the greedy text %q", stop, full)
		}
		st, err := e.Submit(context.Background(), Request{Sample: greedy, NumPredict: 120, Stop: []string{"never there", stop}})
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for {
			ev, ok := st.Recv(context.Background())
			if !ok {
				break
			}
			got.WriteString(ev.Text)
			if strings.Contains(got.String(), stop) {
				t.Fatalf("stop %q: streamed %q", stop, got.String())
			}
			if ev.Done && (ev.Reason != "stop" || ev.Stopped != stop) {
				t.Errorf("stop %q: done with %q, stopped by %q", stop, ev.Reason, ev.Stopped)
			}
		}
		if got.String() != full[:i] {
			t.Errorf("stop %q: streamed %q, want %q", stop, got.String(), full[:i])
		}
	}
}

func TestEngineRequestErrors(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 256, KVMemory: 1 << 20}) // 1,024 tokens, never grown
	e := newEngine(t, m, EngineOptions{})
	for _, c := range []struct {
		req  Request
		want string
	}{
		{Request{Prompt: promptOf(300, 1), Sample: DefaultSampleOptions()}, "raise num_ctx, or allow truncation"},
		{Request{Prompt: promptOf(10, 1), Sample: DefaultSampleOptions(), NumCtx: 1 << 20}, "raise FOLIO_KV_MEMORY"},
		{Request{Prompt: []int32{1, 99999}, Sample: DefaultSampleOptions()}, "outside the vocabulary"},
		{Request{Prompt: promptOf(10, 1), Sample: DefaultSampleOptions(), Stop: []string{""}}, "empty stop string"},
		{Request{Prompt: promptOf(10, 1), Sample: DefaultSampleOptions(), TopLogprobs: 21}, "top_logprobs 21"},
	} {
		_, err := e.Submit(context.Background(), c.req)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
	// truncation keeps the first Keep tokens and the end
	p := promptOf(300, 2)
	res := run(t, e, Request{Prompt: p, Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 2, Truncate: true, Keep: 5})
	if res.err != nil || res.stats.PromptTokens != 192 {
		t.Errorf("truncated: %v, %d prompt tokens; want 192", res.err, res.stats.PromptTokens)
	}
}

func TestEngineLogprobs(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 256})
	e := newEngine(t, m, EngineOptions{})
	st, err := e.Submit(context.Background(), Request{Prompt: promptOf(20, 9), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 5, TopLogprobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		ev, ok := st.Recv(context.Background())
		if !ok {
			break
		}
		if ev.Token < 0 {
			continue
		}
		n++
		lp := ev.Logprob
		if lp == nil || len(lp.Top) != 3 || lp.Top[0].Token != ev.Token || lp.Top[0].Logprob != lp.Logprob ||
			lp.Logprob > 0 || lp.Top[1].Logprob > lp.Top[0].Logprob {
			t.Fatalf("greedy token %d: logprobs %+v", ev.Token, lp)
		}
	}
	if n != 5 {
		t.Errorf("%d tokens, want 5", n)
	}
}

// TestEngineConcurrentSharedPrefix: four requests on one document, sent at
// once, compute the document about once: the later ones pick up the
// blocks the first caches as it goes.
func TestEngineConcurrentSharedPrefix(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 2048, NumBatch: 128})
	e := newEngine(t, m, EngineOptions{})
	doc := promptOf(1000, 31)
	var wg sync.WaitGroup
	res := make([]result, 4)
	for i := range res {
		p := append(slices.Clone(doc), promptOf(12, uint64(40+i))[1:]...)
		wg.Go(func() { res[i] = run(t, e, Request{Prompt: p, Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 2}) })
	}
	wg.Wait()
	computed := 0
	for _, r := range res {
		if r.err != nil {
			t.Fatal(r.err)
		}
		computed += r.stats.PromptTokens
	}
	if computed > 1000+4*(16+11)+128 {
		t.Errorf("4 requests on a 1,000-token document computed %d prompt tokens in all", computed)
	}
	t.Logf("computed %d prompt tokens for 4 × 1,011", computed)
}

// A backend fault in a step (a CUDA error panics) ends every request with
// ErrFailed, keeps the process up, and refuses later requests.
func TestBackendFault(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 256})
	e := newEngine(t, m, EngineOptions{})
	steps := 0
	e.stepFault = func() {
		if steps++; steps == 3 {
			panic("cuda: cuLaunchKernel: CUDA_ERROR_ILLEGAL_ADDRESS")
		}
	}
	ctx := context.Background()
	var streams []*Stream
	for i := range 4 {
		st, err := e.Submit(ctx, Request{Prompt: []int32{1, int32(10 + i), 20}, Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 50})
		if err != nil {
			t.Fatal(err)
		}
		streams = append(streams, st)
	}
	for i, st := range streams {
		var last Event
		for {
			ev, ok := st.Recv(ctx)
			if !ok {
				break
			}
			last = ev
		}
		if !last.Done || !errors.Is(last.Err, ErrFailed) || !strings.Contains(last.Err.Error(), "ILLEGAL_ADDRESS") {
			t.Errorf("request %d ended with %+v, want ErrFailed naming the fault", i, last)
		}
	}
	if _, err := e.Submit(ctx, Request{Prompt: []int32{1, 2}, Sample: SampleOptions{RepeatPenalty: 1}}); !errors.Is(err, ErrFailed) {
		t.Errorf("a request after the fault: %v, want ErrFailed", err)
	}
	if !errors.Is(e.Err(), ErrFailed) {
		t.Errorf("Err() = %v", e.Err())
	}
}

// The memory a loaded model reports counts the CPU kernels' repacked copy
// of its weights in place of the file's bytes of them.
func TestMemoryNeedCountsRepack(t *testing.T) {
	m := tinyModel(t, LoadOptions{})
	if !arch.LookupOnly(m.File, "token_embd.weight") {
		t.Fatal("the tiny model's token embeddings are its output matrix too; this test wants them untied")
	}
	var repacked, from int64
	for _, ti := range m.File.Tensors {
		if len(ti.Shape) == 2 && ti.Name != "token_embd.weight" { // looked up only: no copy
			if n := cpu.RepackedBytes(ti.Type, int(ti.Shape[1]), int(ti.Shape[0])); n > 0 {
				repacked += n
				from += ti.Bytes
			}
		}
	}
	b := m.Bytes
	if b.Repacked != repacked || b.RepackedFrom != from {
		t.Fatalf("Repacked %d of %d file bytes, want %d of %d", b.Repacked, b.RepackedFrom, repacked, from)
	}
	if cpu.SIMDLevel() == "avx512" && repacked == 0 {
		t.Fatal("a Q8_0 model has no repacked weights at AVX-512")
	}
}

// TestEngineGreedyArgMax: greedy requests that need no logits take their
// tokens from the backend's ArgMax (no logits copied out); the tokens are
// those of the same requests asking for logprobs, which copy them out
// and sample on the host, alone and in a batch with a sampled request.
func TestEngineGreedyArgMax(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 512})
	e := newEngine(t, m, EngineOptions{})
	greedy := SampleOptions{RepeatPenalty: 1}
	steps := func() (n int) {
		if err := e.do(func() { n = e.argmaxSteps }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const reqs = 6
	var fast [reqs]*Stream
	for i := range fast {
		st, err := e.Submit(context.Background(), Request{Prompt: promptOf(20+7*i, uint64(40+i)), Sample: greedy, NumPredict: 24})
		if err != nil {
			t.Fatal(err)
		}
		fast[i] = st
	}
	got := make([]result, reqs)
	for i, st := range fast {
		got[i] = collect(t, st, 1)
	}
	if steps() == 0 {
		t.Fatal("no step sampled through the backend's ArgMax")
	}
	sampled := DefaultSampleOptions()
	sampled.Seed = 3
	other, err := e.Submit(context.Background(), Request{Prompt: promptOf(30, 9), Sample: sampled, NumPredict: 24})
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		want := run(t, e, Request{Prompt: promptOf(20+7*i, uint64(40+i)), Sample: greedy, NumPredict: 24, Logprobs: true})
		if !slices.Equal(got[i].tokens[0], want.tokens[0]) {
			t.Errorf("request %d: through ArgMax %v, through the logits %v", i, got[i].tokens[0], want.tokens[0])
		}
	}
	collect(t, other, 1)
}

// tokenLogprobs runs req on a new engine over m and returns each generated
// token's log-probabilities (req asks for them).
func tokenLogprobs(t *testing.T, m *Model, req Request) []*TokenLogprob {
	t.Helper()
	st, err := newEngine(t, m, EngineOptions{}).Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []*TokenLogprob
	for {
		ev, ok := st.Recv(context.Background())
		if !ok {
			return out
		}
		if ev.Err != nil {
			t.Fatal(ev.Err)
		}
		if ev.Logprob != nil {
			out = append(out, ev.Logprob)
		}
	}
}
