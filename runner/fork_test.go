package runner

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestEngineForksFitMaxSeqs: on a model that returns 8 logit rows a pass,
// three greedy requests of n=6 and a sampled one of n=16 at once all
// complete, and the model refuses no pass. Admission counts a request's samples before it forks (never
// more than 8 sequences of several requests run), a pass never asks for
// more than 8 rows (the n=16 request runs alone, its samples taking
// turns), and every sample is what it gives alone.
func TestEngineForksFitMaxSeqs(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 256, MaxSeqs: 8})
	e := newEngine(t, m, EngineOptions{})
	maxOut := m.Opt.MaxSeqs // Load sizes the model's logit rows so
	var mostRows, crowded int
	e.stepFault = func() { // on the loop goroutine: e.outRows is the last pass's
		mostRows = max(mostRows, len(e.outRows))
		reqs := map[*request]bool{}
		for _, s := range e.running {
			reqs[s.req] = true
		}
		if len(e.running) > maxOut && len(reqs) > 1 {
			crowded = max(crowded, len(e.running))
		}
	}
	greedy := SampleOptions{RepeatPenalty: 1}
	sampled := DefaultSampleOptions()
	sampled.Seed = 21
	reqs := []Request{
		{Prompt: promptOf(30, 1), Sample: greedy, NumPredict: 24, N: 6},
		{Prompt: promptOf(45, 2), Sample: greedy, NumPredict: 24, N: 6},
		{Prompt: promptOf(20, 3), Sample: sampled, NumPredict: 24, N: 16},
		{Prompt: promptOf(60, 4), Sample: greedy, NumPredict: 24, N: 6},
	}
	got := make([]result, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { got[i] = run(t, e, r) })
	}
	wg.Wait()
	var refused int
	if err := e.do(func() { mostRows, refused, e.stepFault = max(mostRows, len(e.outRows)), e.refused, nil }); err != nil {
		t.Fatal(err)
	}
	if refused > 0 {
		t.Errorf("the model refused %d passes", refused)
	}
	for i, r := range reqs {
		if got[i].err != nil {
			t.Fatalf("request %d (n=%d): %v", i, r.N, got[i].err)
		}
		for k := range r.N {
			solo := r
			solo.N = 1
			if r.Sample.Seed != -1 {
				solo.Sample.Seed += int64(k)
			}
			want := run(t, e, solo)
			if !slices.Equal(got[i].tokens[k], want.tokens[0]) {
				t.Errorf("request %d sample %d: %v, alone: %v", i, k, got[i].tokens[k], want.tokens[0])
			}
		}
	}
	if mostRows > maxOut {
		t.Errorf("a pass asked for %d logit rows; the model gives %d", mostRows, maxOut)
	}
	if crowded > 0 {
		t.Errorf("%d sequences of several requests ran at once; MaxSeqs is %d", crowded, maxOut)
	}
	t.Logf("at most %d logit rows a pass", mostRows)
}

// TestEngineForwardFailureEndsOneSequence: a pass the model refuses
// because of one sequence (here a token outside the vocabulary, planted
// after its third token) ends that sequence alone; the others in the
// batch complete with what they give alone, and the engine serves on.
func TestEngineForwardFailureEndsOneSequence(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 256})
	e := newEngine(t, m, EngineOptions{})
	greedy := SampleOptions{RepeatPenalty: 1}
	reqs := make([]Request, 5)
	for i := range reqs {
		reqs[i] = Request{Prompt: promptOf(12+5*i, uint64(60+i)), Sample: greedy, NumPredict: 16}
	}
	reqs[2].CacheKey = "poison"
	alone := make([]result, len(reqs))
	for i, r := range reqs {
		alone[i] = run(t, e, r)
	}

	poisoned := 0 // sequences decoding in the pass that was refused
	gathered := false
	e.stepFault = func() {
		// The first step waits for all five requests (on the loop goroutine,
		// taking them as the loop would), so that they run side by side
		// however the goroutines that submit them are scheduled.
		for !gathered && len(e.running)+len(e.waiting) < len(reqs) {
			e.enqueue(<-e.in)
		}
		gathered = true
		if poisoned > 0 {
			return
		}
		decoding := 0
		for _, s := range e.running {
			if s.pending() == 1 {
				decoding++
			}
		}
		for _, s := range e.running {
			if s.req.CacheKey == "poison" && s.gen >= 3 && s.pending() == 1 && decoding > 1 {
				s.tokens[len(s.tokens)-1] = int32(m.Arch.Vocab)
				poisoned = decoding
			}
		}
	}
	got := make([]result, len(reqs))
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Go(func() { got[i] = run(t, e, r) })
	}
	wg.Wait()
	if poisoned == 0 {
		t.Fatal("the poisoned sequence never decoded beside another: the test does not test what it says")
	}
	for i := range reqs {
		if i == 2 {
			if got[i].err == nil || !strings.Contains(got[i].err.Error(), "outside the vocabulary") {
				t.Errorf("poisoned request ended with %v, want the model's refusal", got[i].err)
			}
			continue
		}
		if got[i].err != nil {
			t.Errorf("request %d, batched with the poisoned one: %v", i, got[i].err)
		} else if !slices.Equal(got[i].tokens[0], alone[i].tokens[0]) {
			t.Errorf("request %d: %v, alone: %v", i, got[i].tokens[0], alone[i].tokens[0])
		}
	}
	if err := e.Err(); err != nil {
		t.Fatalf("engine failed: %v", err)
	}
	if after := run(t, e, reqs[0]); after.err != nil || !slices.Equal(after.tokens[0], alone[0].tokens[0]) {
		t.Errorf("a request after the failure: %v %v", after.err, after.tokens[0])
	}
	t.Logf("the refused pass decoded %d sequences", poisoned)
}
