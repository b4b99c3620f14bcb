package arch

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"folio/gpu"
)

// TestChunkBatch: rows past the first chunk are split where a chunk
// starts, each part rebased to its chunk (positions and table); a batch
// inside the first chunk is passed through.
func TestChunkBatch(t *testing.T) {
	const chunk, bs = 64, 16
	table := make([]int32, 12)
	for i := range table {
		table[i] = int32(100 + i)
	}
	m := &Model{}
	inside := &gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Start: 0, Len: 10, Pos: 54, Blocks: table}}}
	if got := m.chunkBatch(inside, chunk); got != inside {
		t.Errorf("a batch within the first chunk became %v", got.Seqs)
	}
	b := &gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{
		{Start: 0, Len: 1, Pos: 150, Blocks: table},  // decode in the third chunk
		{Start: 1, Len: 90, Pos: 60, Blocks: table},  // 60 … 149: three chunks
		{Start: 91, Len: 4, Pos: 10, Blocks: table}}} // the first chunk only
	got := m.chunkBatch(b, chunk)
	var desc []string
	for _, s := range got.Seqs {
		desc = append(desc, fmt.Sprintf("%d+%d@%d[%d]", s.Start, s.Len, s.Pos, s.Blocks[0]))
	}
	want := []string{"0+1@22[108]", "1+4@60[100]", "5+64@0[104]", "69+22@0[108]", "91+4@10[100]"}
	if !slices.Equal(desc, want) {
		t.Errorf("chunked batch %v, want %v", desc, want)
	}
	// Every row keeps its slot: the rebased tables lead to the same cache rows.
	for _, s := range got.Seqs {
		for i := range s.Len {
			orig := b.Positions(nil)[s.Start+i]
			if slot := s.Blocks[(s.Pos+i)/bs]*bs + int32((s.Pos+i)%bs); slot != table[orig/bs]*bs+orig%bs {
				t.Fatalf("row %d: slot %d, want %d", s.Start+i, slot, table[orig/bs]*bs+orig%bs)
			}
		}
	}
}

// TestRouteLogitsSigmoid: llama4's gating chooses by the logits (two
// sigmoids that round to 1 do not tie) and weights by the sigmoids.
func TestRouteLogitsSigmoid(t *testing.T) {
	logits := []float32{40, 41, -1, 0}
	chosen, w := make([]int32, 2), make([]float32, 2)
	route(logits, routing{gating: GatingLogitsSigmoid}, chosen, w, make([]float32, 4), make([]float32, 4))
	if !slices.Equal(chosen, []int32{1, 0}) || w[0] != 1 || w[1] != 1 {
		t.Errorf("chose %v weighted %v, want [1 0] weighted [1 1]", chosen, w)
	}
	route([]float32{-3, 2, 0.5}, routing{gating: GatingLogitsSigmoid}, chosen[:1], w[:1], make([]float32, 3), make([]float32, 3))
	if want := float32(1 / (1 + math.Exp(-2))); chosen[0] != 1 || w[0] != want {
		t.Errorf("chose %d weighted %v, want 1 weighted %v", chosen[0], w[0], want)
	}
}

// TestAttnTempAt: Llama 4's temperature steps at position 8191 (its
// offset of 1), Ministral 3's at its floor.
func TestAttnTempAt(t *testing.T) {
	l4 := Config{AttnTemp: 0.1, AttnTempFloor: 8192, AttnTempOffset: 1}
	m3 := Config{AttnTemp: 0.1, AttnTempFloor: 8192}
	step := float32(math.Log(2)*float64(float32(0.1)) + 1)
	for _, c := range []struct {
		c    Config
		p    int32
		want float32
	}{{l4, 0, 1}, {l4, 8190, 1}, {l4, 8191, step}, {m3, 8191, 1}, {m3, 8192, step}} {
		if got := c.c.attnTempAt(c.p); got != c.want {
			t.Errorf("offset %v, position %d: %v, want %v", c.c.AttnTempOffset, c.p, got, c.want)
		}
	}
}
