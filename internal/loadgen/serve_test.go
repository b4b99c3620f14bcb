package loadgen

import (
	"testing"
	"time"
)

// The steady window ends at the last submission, and only tokens that
// arrived in it count.
func TestSteadyTokens(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range v {
			ds = append(ds, time.Duration(x)*time.Millisecond)
		}
		return ds
	}
	// Two slots, three requests: the third is sent at 30 ms, when the
	// first ends.
	traces := []Trace{{Tokens: ms(10, 20, 30)}, {Tokens: ms(10, 20, 30, 40, 50)}, {Tokens: ms(10, 20)}}
	starts := ms(0, 0, 30)
	n, w := steadyTokens(traces, starts, 2)
	if w != 30*time.Millisecond || n != 6 {
		t.Fatalf("steadyTokens = %d tokens in %v, want 6 in 30ms", n, w)
	}
	if n, w := steadyTokens(traces[:2], starts[:2], 2); n != 0 || w != 0 {
		t.Fatalf("no more requests than slots: %d tokens in %v, want none", n, w)
	}
}
