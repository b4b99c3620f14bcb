package runner

import (
	"context"
	"slices"
	"testing"
)

// TestEngineWaitingKeepsItsPrefix: a request that waits for room does not
// evict the cached prefix it is waiting to attach (that would only make
// it compute the prefix again), and attaches it once admitted.
func TestEngineWaitingKeepsItsPrefix(t *testing.T) {
	const blockBytes = 16 * 2 * 2 * 128 * 2 // f16 K and V of 16 tokens, 2 layers of 128
	m := tinyModel(t, LoadOptions{NumCtx: 512, KVMemory: 40 * blockBytes, KVType: "f16"})
	e := newEngine(t, m, EngineOptions{})
	if n := e.pm.NumBlocks(); n != 40 {
		t.Fatalf("pool of %d blocks, want 40", n)
	}
	greedy := SampleOptions{RepeatPenalty: 1}
	doc := promptOf(100, 11)
	run(t, e, Request{Prompt: doc, Sample: greedy, NumPredict: 1}) // caches doc's 6 full blocks

	// A long request takes 26 of the 34 blocks left; once it samples its
	// first token, the waiting one below needs 19-6 = 13 blocks and the
	// watermark, and only doc's 6 could be evicted.
	long, err := e.Submit(context.Background(), Request{Prompt: promptOf(400, 12), Sample: greedy, NumPredict: 50})
	if err != nil {
		t.Fatal(err)
	}
	if ev, ok := long.Recv(context.Background()); !ok || ev.Err != nil {
		t.Fatalf("long request: %+v", ev)
	}
	waiting := append(slices.Clone(doc), promptOf(201, 13)[1:]...)
	res := run(t, e, Request{Prompt: waiting, Sample: greedy, NumPredict: 1})
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got := res.stats.CachedTokens; got != 96 {
		t.Errorf("the waiting request attached %d cached tokens, want doc's 96", got)
	}
	collect(t, long, 1)
}
