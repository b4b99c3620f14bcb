package main

import (
	"strings"
	"testing"
	"time"
)

// TestSoakShort is the soak in a CI-sized form: 16 clients for 20 s with
// three quiet points. Every check of the full run applies.
func TestSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 25 s")
	}
	var progress strings.Builder
	rep, err := Run(Config{Duration: 20 * time.Second, Clients: 16, Epochs: 3, Seed: 7, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Log("\n" + progress.String() + out.String())
	for _, f := range rep.Failures() {
		t.Error(f)
	}
}

// TestFailuresSeeLeaks: the checks report what they are there to catch.
func TestFailuresSeeLeaks(t *testing.T) {
	cases := []struct {
		name string
		mod  func(r *Report)
		want string
	}{
		{"leaked block", func(r *Report) { r.Quiets[1].Free-- }, "1 of 64 blocks are not free"},
		{"queued", func(r *Report) { r.Quiets[1].Queued = 2 }, "2 requests still queued"},
		{"goroutine", func(r *Report) { r.Quiets[1].Goroutines++ }, "goroutines, 5 at the baseline"},
		{"heap", func(r *Report) { r.Quiets[1].Heap = 200 << 20 }, "over the bound"},
		{"still loaded", func(r *Report) { r.Quiets[1].Unloaded = false }, "still loaded"},
		{"mismatch", func(r *Report) { r.fail(&r.Mismatches, "prompt 3: differs") }, "differ from their solo run"},
		{"error", func(r *Report) { r.fail(&r.Errors, "oversized: status 500") }, "oversized: status 500"},
		{"shutdown", func(r *Report) { r.Goroutines.End = 3 }, "after shutdown"},
		{"no cancels", func(r *Report) { r.Cancels.Store(0) }, "never happened"},
		{"no n>1", func(r *Report) { r.Parallel.Store(0) }, "never happened"},
		{"no truncation", func(r *Report) { r.Truncated.Store(0) }, "truncated 0"},
		{"warning", func(r *Report) { r.Warnings = []string{"model failed"} }, "server warning"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := passing()
			if f := r.Failures(); len(f) != 0 {
				t.Fatalf("a passing report fails: %q", f)
			}
			c.mod(r)
			f := strings.Join(r.Failures(), "\n")
			if !strings.Contains(f, c.want) {
				t.Errorf("failures %q do not say %q", f, c.want)
			}
		})
	}
}

// passing is a report every check accepts.
func passing() *Report {
	r := &Report{HeapBase: 10 << 20}
	for _, c := range []interface{ Store(int64) }{&r.Served, &r.Parallel, &r.Cancels, &r.Disconnects, &r.Oversized, &r.Truncated, &r.BadInputs, &r.UnloadRequests} {
		c.Store(1)
	}
	r.Goroutines.Start, r.Goroutines.Loaded, r.Goroutines.End = 2, 5, 2
	for n := range 2 {
		r.Quiets = append(r.Quiets, Quiet{N: n, Blocks: 64, Free: 64, Goroutines: 5, Heap: 10 << 20, Unloaded: true})
	}
	return r
}

// TestDrainWaitsForHandlers: a quiet point waits for the server's handlers,
// which can outlive their clients (a client that hung up is done before
// its handler notices), and says so when one never ends.
func TestDrainWaitsForHandlers(t *testing.T) {
	var r rig
	r.handlers.Add(1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		r.handlers.Add(-1)
	}()
	if err := r.drain(5 * time.Second); err != nil || r.handlers.Load() != 0 {
		t.Errorf("drain returned %v with %d handlers running", err, r.handlers.Load())
	}
	r.handlers.Add(1)
	if err := r.drain(50 * time.Millisecond); err == nil || !strings.Contains(err.Error(), "1 requests still being handled") {
		t.Errorf("drain with a handler that never ends: %v", err)
	}
}
