package runner

import (
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
)

// memStore is a PrefixStore in memory that checks tokens like the real
// one, and can be told to corrupt what it returns.
type memStore struct {
	mu      sync.Mutex
	blocks  map[string]memBlock
	corrupt bool // flip a byte of every block loaded
	loads   int
}

type memBlock struct {
	tokens []int32
	data   []byte
}

func newMemStore() *memStore { return &memStore{blocks: map[string]memBlock{}} }

func key(fp string, h [32]byte) string { return fp + string(h[:]) }

func (m *memStore) HasBlocks(fp string, hashes [][32]byte) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, h := range hashes {
		if _, ok := m.blocks[key(fp, h)]; !ok {
			return i
		}
	}
	return len(hashes)
}

var errMismatch = errors.New("memstore: mismatch")

func (m *memStore) LoadBlock(fp string, h [32]byte, tokens []int32, dst []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blocks[key(fp, h)]
	if !ok || !slices.Equal(b.tokens, tokens) || len(b.data) != len(dst) {
		return errMismatch
	}
	if m.corrupt { // the real store's checksum catches this; so must the caller's fallback
		delete(m.blocks, key(fp, h))
		return errMismatch
	}
	copy(dst, b.data)
	m.loads++
	return nil
}

func (m *memStore) SaveBlock(fp string, h, parent [32]byte, tokens []int32, data []byte, dtype string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.blocks[key(fp, h)] = memBlock{tokens: tokens, data: data}
}

// TestPersistAcrossRestart: turn 2 of a 3,000-token conversation, on a new
// engine over the same store, computes only its new tokens and gives what
// a cold run gives; over an F16 and a Q8_0 cache.
func TestPersistAcrossRestart(t *testing.T) {
	for _, kv := range []string{"f16", "q8_0"} {
		t.Run(kv, func(t *testing.T) { persistAcrossRestart(t, kv) })
	}
}

func persistAcrossRestart(t *testing.T, kv string) {
	st := newMemStore()
	greedy := SampleOptions{RepeatPenalty: 1}
	turn1 := promptOf(3000, 21)
	m1 := tinyModel(t, LoadOptions{NumCtx: 4096, KVType: kv})
	e1 := newEngine(t, m1, EngineOptions{Store: st})
	r1 := run(t, e1, Request{Prompt: turn1, Sample: greedy, NumPredict: 8, TopLogprobs: 1})
	e1.Close()
	if len(st.blocks) != (3000+8-1)/16 {
		t.Errorf("%d blocks persisted, want %d", len(st.blocks), (3000+8-1)/16)
	}
	turn2 := append(append(slices.Clone(turn1), r1.tokens[0]...), promptOf(40, 22)[1:]...)

	m2 := tinyModel(t, LoadOptions{NumCtx: 4096, KVType: kv})
	e2 := newEngine(t, m2, EngineOptions{Store: st})
	warm := run(t, e2, Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	// turn 1 computed its prompt and 7 of its 8 tokens: the full blocks of
	// those are on disk; the unfinished last block is computed again
	full := (3000 + 7) / 16 * 16
	if warm.stats.CachedTokens != full || warm.stats.RestoredTokens != full || warm.stats.PromptTokens != len(turn2)-full {
		t.Errorf("turn 2: cached %d (restored %d), computed %d; want %d, %d, %d", warm.stats.CachedTokens,
			warm.stats.RestoredTokens, warm.stats.PromptTokens, full, full, len(turn2)-full)
	}
	cold := newEngine(t, m2, EngineOptions{NoPrefixCache: true})
	want := run(t, cold, Request{Prompt: turn2, Sample: greedy, NumPredict: 8})
	if !slices.Equal(warm.tokens[0], want.tokens[0]) {
		t.Errorf("restored %v, cold %v", warm.tokens[0], want.tokens[0])
	}
	// the logits too: compare the first token's log-probability
	lw, lc := firstLogprob(t, e2, turn2), firstLogprob(t, cold, turn2)
	if math.Abs(float64(lw-lc)) > 1e-2*math.Max(1, math.Abs(float64(lc))) {
		t.Errorf("first logprob restored %v, cold %v", lw, lc)
	}
}

func firstLogprob(t *testing.T, e *Engine, p []int32) float32 {
	t.Helper()
	st, err := e.Submit(t.Context(), Request{Prompt: p, Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 1, Logprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	for {
		ev, ok := st.Recv(t.Context())
		if !ok {
			t.Fatal("no token")
		}
		if ev.Logprob != nil {
			return ev.Logprob.Logprob
		}
	}
}

// TestPersistCorruptBlocksRecompute: blocks that fail to load are
// computed instead, with the same result.
func TestPersistCorruptBlocksRecompute(t *testing.T) {
	st := newMemStore()
	greedy := SampleOptions{RepeatPenalty: 1}
	p := promptOf(500, 23)
	m := tinyModel(t, LoadOptions{NumCtx: 1024})
	e1 := newEngine(t, m, EngineOptions{Store: st, NoPrefixCache: true})
	want := run(t, e1, Request{Prompt: p, Sample: greedy, NumPredict: 6})
	st.corrupt = true
	got := run(t, e1, Request{Prompt: p, Sample: greedy, NumPredict: 6})
	if got.stats.RestoredTokens != 0 || got.stats.PromptTokens != 500 || !slices.Equal(got.tokens[0], want.tokens[0]) {
		t.Errorf("corrupt store: restored %d, computed %d, tokens %v (want %v)", got.stats.RestoredTokens, got.stats.PromptTokens, got.tokens[0], want.tokens[0])
	}
	// another fingerprint never sees these blocks
	st.corrupt = false
	e2 := newEngine(t, m, EngineOptions{Store: st, NoPrefixCache: true, Fingerprint: "other model"})
	if res := run(t, e2, Request{Prompt: p, Sample: greedy, NumPredict: 1}); res.stats.RestoredTokens != 0 {
		t.Errorf("another fingerprint restored %d tokens", res.stats.RestoredTokens)
	}
}
