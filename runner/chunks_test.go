package runner

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestEngineLlama4Chunks: Llama 4's chunked layers (three of four) load
// in a sliding layer group of the chunk's reach, 8,192 positions, whose
// blocks go back as they leave it, and a prompt past the first chunk
// gives the tokens and log-probability of the same model with one cache
// that keeps every block; the sliding group's pool peaks at a reach and
// a pass while the full group holds the whole context.
func TestEngineLlama4Chunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama4.gguf")
	if err := synth.WriteTiny(path, "llama4", gguf.TypeQ8_0, 7); err != nil {
		t.Fatal(err)
	}
	const ctx, pass = 8704, 256
	load := func() *Model { return loadClosed(t, path, LoadOptions{NumCtx: ctx, NumBatch: pass, MaxSeqs: 1}) }
	m := load()
	if len(m.Caches) != 2 || m.Groups.Windows[1] != 8192 || m.Groups.Layers[1] != 3 {
		t.Fatalf("layer groups %+v, want the three chunked layers in a group of 8192", m.Groups)
	}
	ref := load()
	regroup(t, ref, nil) // one cache of every layer, every block kept
	re, e := newEngine(t, ref, EngineOptions{NoPrefixCache: true}), newEngine(t, m, EngineOptions{NoPrefixCache: true})
	req := Request{Prompt: promptOf(8400, 61), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 16}
	got, want := run(t, e, req), run(t, re, req)
	if !slices.Equal(got.tokens[0], want.tokens[0]) {
		t.Errorf("released %v, all kept %v", got.tokens[0], want.tokens[0])
	}
	if lg, lw := firstLogprob(t, e, req.Prompt), firstLogprob(t, re, req.Prompt); math.Abs(float64(lg-lw)) > 1e-4*math.Max(1, math.Abs(float64(lw))) {
		t.Errorf("first logprob released %v, all kept %v", lg, lw)
	}
	s := e.Stats()
	if full, chunked := s.Groups[0].Peak, s.Groups[1].Peak; full < 8400/16 || chunked > (8192+pass)/16+1 {
		t.Errorf("peaks: full group %d blocks (want the context's, %d), chunked %d (want at most a reach and a pass, %d)",
			full, 8400/16, chunked, (8192+pass)/16+1)
	}
}

// TestLlama4ShortContext: a context shorter than Llama 4's chunks' reach
// (the default num_ctx) loads, serves and is timed: the chunked group's
// pool is the context's, and RingTables lays a sequence that fits it out
// in order where it would refuse a ring smaller than a reach and a pass.
func TestLlama4ShortContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama4.gguf")
	if err := synth.WriteTiny(path, "llama4", gguf.TypeQ8_0, 7); err != nil {
		t.Fatal(err)
	}
	m := loadClosed(t, path, LoadOptions{NumCtx: 1024, NumBatch: 256, MaxSeqs: 2})
	blocks := m.Caches[1].Spec().Blocks
	tables, err := m.RingTables(blocks, 256)
	if err != nil || !slices.Equal(tables[1][:3], []int32{0, 1, 2}) {
		t.Fatalf("tables of %d blocks: %v, err %v", blocks, tables, err)
	}
	if _, err := m.RingTables(blocks+1, 256); err == nil {
		t.Errorf("a sequence past the chunked group's pool of %d blocks was laid out", blocks)
	}
	r := run(t, newEngine(t, m, EngineOptions{}), Request{Prompt: promptOf(600, 5), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 8})
	if len(r.tokens[0]) != 8 {
		t.Errorf("generated %v", r.tokens[0])
	}
}
