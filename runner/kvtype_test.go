package runner

import (
	"math"
	"strings"
	"testing"

	"folio/models/gguf"
)

// A Q8_0 cache holds 64/34 times the tokens of an F16 one in the same
// memory, and its answers stay close to the F16 cache's: the top
// log-probabilities of the first tokens of a 300-token prompt's answer.
func TestKVCacheQ8(t *testing.T) {
	const mem = 1 << 20
	f16 := tinyModel(t, LoadOptions{NumCtx: 512, KVMemory: mem})
	q8 := tinyModel(t, LoadOptions{NumCtx: 512, KVMemory: mem, KVType: "Q8_0"})
	if got := q8.KV.Spec().Type; got != gguf.TypeQ8_0 {
		t.Fatalf("K/V type %v, want Q8_0", got)
	}
	fb, qb := f16.KV.Spec().Blocks, q8.KV.Spec().Blocks
	if want := fb * 64 / 34; qb != want {
		t.Errorf("%d blocks in %d bytes, want %d (%d for F16)", qb, mem, want, fb)
	}
	if q8.Bytes.KV > mem || f16.Bytes.KV > mem {
		t.Errorf("K/V caches of %d (q8_0) and %d (f16) bytes, more than the %d asked for", q8.Bytes.KV, f16.Bytes.KV, mem)
	}
	top := func(m *Model) [][]TopLogprob {
		var out [][]TopLogprob
		for _, lp := range tokenLogprobs(t, m, Request{Prompt: promptOf(300, 11), Sample: SampleOptions{RepeatPenalty: 1},
			NumPredict: 4, TopLogprobs: 5}) {
			out = append(out, lp.Top)
		}
		return out
	}
	want, got := top(f16), top(q8)
	if len(got) != 4 || len(want) != 4 {
		t.Fatalf("%d and %d tokens, want 4", len(got), len(want))
	}
	worst := 0.0
	for i := range want {
		lp := map[int32]float64{}
		for _, x := range got[i] {
			lp[x.Token] = float64(x.Logprob)
		}
		for _, x := range want[i][:3] {
			g, ok := lp[x.Token]
			if !ok {
				t.Fatalf("token %d: F16's top token %d (%.3f) is not in Q8_0's top 5 %+v", i, x.Token, x.Logprob, got[i])
			}
			worst = max(worst, math.Abs(g-float64(x.Logprob)))
		}
		if want[i][0].Token != got[i][0].Token {
			break // the answers part; later tokens have other contexts
		}
	}
	t.Logf("largest log-probability difference from F16: %.4f", worst)
	if worst > 0.15 { // measured 0.043; a decoding error moves them by whole units
		t.Errorf("log-probabilities differ from F16's by up to %.4f", worst)
	}
}

func TestKVTypeErrors(t *testing.T) {
	m := tinyModel(t, LoadOptions{NumCtx: 64})
	if _, err := load(m.File, LoadOptions{KVMemory: -1}); err == nil || !strings.Contains(err.Error(), "positive") {
		t.Errorf("KVMemory -1: %v, want an error asking for a positive size", err)
	}
	// a cache too small for num_ctx names the knobs, q8_0 among them while
	// the cache is not already q8_0
	for kv, q8 := range map[string]bool{"f16": true, "q8_0": false} {
		_, err := load(m.File, LoadOptions{NumCtx: 64, KVMemory: 1 << 10, KVType: kv})
		if err == nil || !strings.Contains(err.Error(), "raise FOLIO_KV_MEMORY (--kv-memory)") ||
			strings.Contains(err.Error(), "use a q8_0 K/V cache") != q8 {
			t.Errorf("%s cache of 1 KiB: %v, want the knobs named (q8_0: %v)", kv, err, q8)
		}
	}
	for _, name := range []string{"q4_0", "bf16", "int8", ""} {
		_, err := ParseKVType(name)
		if err == nil || !strings.Contains(err.Error(), "use f16, q8_0") {
			t.Errorf("ParseKVType(%q): %v, want an error listing the types", name, err)
		}
	}
}
