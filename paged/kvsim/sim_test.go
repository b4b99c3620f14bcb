package kvsim

import (
	"strings"
	"testing"
)

// TestSeedClaims checks the guide's claims on the built-in traces: paged
// B=16 wastes under 4% on chat and fits at least twice the sequences of
// static allocation; n=4 sampling on extraction saves at least 55% of the
// blocks of four copies.
func TestSeedClaims(t *testing.T) {
	if invariantsTag {
		t.Skip("with -tags invariants the replay checks the pool every step; TestSmallTrace runs instead")
	}
	chat, extraction := Chat(1, 2000), Extraction(1, 200)
	run := func(tr Trace, p Policy, n int) Row {
		r, err := Run(tr, p, n, DefaultConfig)
		if err != nil {
			t.Fatal(err)
		}
		if r.Completed != len(tr.Requests) || r.Rejected != 0 {
			t.Fatalf("%s %s n=%d: %d completed, %d rejected", tr.Name, p.Name, n, r.Completed, r.Rejected)
		}
		return r
	}
	paged, static := run(chat, Policy{"paged", 16}, 1), run(chat, Policy{"static", 0}, 1)
	if paged.WastePct >= 4 {
		t.Errorf("chat: paged B=16 wastes %.2f%%", paged.WastePct)
	}
	if paged.MaxConcurrent < 2*static.MaxConcurrent {
		t.Errorf("chat: paged B=16 holds %d sequences, static %d", paged.MaxConcurrent, static.MaxConcurrent)
	}
	if static.MaxConcurrent != 96 { // 24 GiB / 128 KiB = 196,608 tokens = 96 contexts of 2,048
		t.Errorf("chat: static holds %d sequences, want 96", static.MaxConcurrent)
	}
	if r := run(extraction, Policy{"paged", 16}, 4); r.SavedPct() < 55 {
		t.Errorf("extraction: n=4 saves %.1f%% (%d of %d blocks)", r.SavedPct(), r.BlocksUsed, r.BlocksUnshared)
	}
	if r := run(chat, Policy{"doubling", 0}, 1); r.WastePct < 20 || r.WastePct > 45 {
		t.Errorf("chat: doubling wastes %.2f%%, outside 20-45%%", r.WastePct)
	}
}

// TestSmallTrace replays a few requests through every policy and width:
// every request completes, sharing never costs more than copies, and
// static allocation never shares.
func TestSmallTrace(t *testing.T) {
	tr := Trace{Name: "small", MaxLen: 1024, Requests: []Request{
		{0, 100, 20}, {0, 30, 10}, {0.01, 200, 50}, {0.02, 64, 5}, {0.5, 1000, 24}, {0.5, 17, 300},
	}}
	cfg := Config{Budget: 16 * 1024 * Llama8B, BytesPerToken: Llama8B, Step: 0.02} // 16 contexts
	rows, err := RunAll([]Trace{tr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Completed != len(tr.Requests) || r.BlocksUsed > r.BlocksUnshared || r.WastePct < 0 || r.WastePct >= 100 {
			t.Errorf("%+v", r)
		}
		if r.Policy != "paged" && r.BlocksUsed != r.BlocksUnshared {
			t.Errorf("%s shares blocks: %+v", r.Policy, r)
		}
	}
}

func TestChatTraceParameters(t *testing.T) {
	tr := Chat(7, 20000)
	var p, o float64
	for _, r := range tr.Requests {
		p += float64(r.Prompt)
		o += float64(r.Output)
		if r.Prompt < 4 || r.Output < 1 || r.Prompt+r.Output > tr.MaxLen {
			t.Fatalf("request %+v outside the 2,048-token context", r)
		}
	}
	p, o = p/float64(len(tr.Requests)), o/float64(len(tr.Requests))
	if p < 135 || p > 160 || o < 300 || o > 345 { // 148 and 337 before clipping
		t.Errorf("mean prompt %.0f, mean answer %.0f tokens", p, o)
	}
}

func TestReadTrace(t *testing.T) {
	tr, err := ReadTrace(strings.NewReader("# comment\narrival prompt output\n1.5 10 5\n\n0,700,200\n0.5\t3\t1\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{{0, 700, 200}, {0.5, 3, 1}, {1.5, 10, 5}}
	if len(tr.Requests) != 3 || tr.Requests[0] != want[0] || tr.Requests[1] != want[1] || tr.Requests[2] != want[2] || tr.MaxLen != 1024 {
		t.Errorf("read %+v, max len %d", tr.Requests, tr.MaxLen)
	}
	for _, bad := range []string{"", "1 2\n", "0 10 5\nx y z\n", "0 0 5\n", "-1 3 3\n"} {
		if _, err := ReadTrace(strings.NewReader(bad), "bad"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
