package kvsim

import (
	"bytes"
	"strings"
	"testing"
)

// TestSlidingGemma3: at 32k tokens the paged-swa policy holds at most a
// quarter of a full-attention cache's K/V for both Gemma 3 shapes, at
// the end and at its peak (exact counts for gemma3-1b: 4 full layers ×
// 2048 blocks + 22 sliding layers × 32 blocks at the end; at the peak,
// a 512-token chunk on top of the window), and the next turn resumes the
// whole context from the cache.
func TestSlidingGemma3(t *testing.T) {
	rows, err := RunSlidingAll(32768)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	g1 := rows[0]
	if g1.FullOnly != 26*2048 || g1.End != 4*2048+22*32 {
		t.Errorf("gemma3-1b: full-attention %d, end %d layer-blocks; want %d and %d", g1.FullOnly, g1.End, 26*2048, 4*2048+22*32)
	}
	for _, r := range rows {
		if r.EndPct > 25 || r.PeakPct > 25 {
			t.Errorf("%s: %.1f%% at the end, %.1f%% at the peak of a full-attention cache, want at most 25%%", r.Model, r.EndPct, r.PeakPct)
		}
		if r.Resumed != r.Context {
			t.Errorf("%s: the next turn resumed %d tokens, want %d", r.Model, r.Resumed, r.Context)
		}
	}
	var out bytes.Buffer
	if err := WriteSlidingTable(&out, rows); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "gemma3-4b") {
		t.Errorf("table lacks gemma3-4b:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}
