package arch_test

import (
	"slices"
	"testing"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
)

func TestLayerGroups(t *testing.T) {
	cases := []struct {
		name              string
		windows           []int
		layers            int
		wWindows, wLayers []int
		wOf, wIndex       []int
	}{
		{"none", nil, 3, []int{0}, []int{3}, []int{0, 0, 0}, []int{0, 1, 2}},
		{"gemma3", []int{512, 512, 0, 512, 512, 0}, 6, []int{0, 512}, []int{2, 4}, []int{1, 1, 0, 1, 1, 0}, []int{0, 1, 0, 2, 3, 1}},
		{"all sliding", []int{64, 64}, 2, []int{64}, []int{2}, []int{0, 0}, []int{0, 1}},
		{"two windows", []int{8, 0, 16, 8}, 4, []int{0, 8, 16}, []int{1, 2, 1}, []int{1, 0, 2, 1}, []int{0, 0, 0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := arch.LayerGroups(c.windows, c.layers)
			if !slices.Equal(g.Windows, c.wWindows) || !slices.Equal(g.Layers, c.wLayers) ||
				!slices.Equal(g.Of, c.wOf) || !slices.Equal(g.Index, c.wIndex) {
				t.Errorf("got %+v, want windows %v layers %v of %v index %v", *g, c.wWindows, c.wLayers, c.wOf, c.wIndex)
			}
		})
	}
}

// TestForwardGroups: the layers' K/V split over a cache per layer group,
// each with its own scrambled block tables, give the logits of one cache
// holding every layer, through a prefill and decode steps. (The windows
// here are longer than the context, so attention is the same.)
func TestForwardGroups(t *testing.T) {
	r := openRig(t, synthModel(t, "llama", gguf.TypeF32), 16, gguf.TypeF32)
	be := r.m.Backend()
	g := arch.LayerGroups([]int{0, 1 << 20}, r.m.Layers)
	var kvs []gpu.KVCache
	for _, layers := range g.Layers {
		spec := r.m.KVSpec(64, 16, gguf.TypeF32)
		spec.Layers = layers
		kv, err := be.NewKVCache(spec)
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, kv)
	}
	tables := [][]int32{make([]int32, 8), make([]int32, 8)}
	for i := range 8 {
		tables[0][i], tables[1][i] = int32(60-7*i), int32(3+5*i)
	}
	ids := randomIDs(70, 3, r.m.Vocab)
	want := r.prompt(t, ids[:64])
	batch := func(g, pos, n int, table []int32) *gpu.Batch {
		return &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: pos, Blocks: table}}}
	}
	got := make([]float32, r.m.Vocab)
	out, err := r.m.ForwardGroups(g, kvs, []*gpu.Batch{batch(0, 0, 64, tables[0]), batch(1, 0, 64, tables[1])}, ids[:64], []int32{63})
	if err != nil {
		t.Fatal(err)
	}
	be.Download(got, out)
	assertSame(t, "prefill", got, want)
	one := r.table(0)
	for p := 64; p < 70; p++ {
		want = r.run(t, []seqRun{{ids: ids[p : p+1], pos: p, table: one}})[0]
		out, err = r.m.ForwardGroups(g, kvs, []*gpu.Batch{batch(0, p, 1, tables[0]), batch(1, p, 1, tables[1])}, ids[p:p+1], []int32{0})
		if err != nil {
			t.Fatal(err)
		}
		be.Download(got, out)
		assertSame(t, "decode", got, want)
	}
	// a cache of the wrong size for its group is refused
	if _, err := r.m.ForwardGroups(g, []gpu.KVCache{kvs[0], r.kv}, []*gpu.Batch{batch(0, 70, 1, tables[0]), batch(1, 70, 1, tables[1])}, ids[:1], nil); err == nil {
		t.Error("a cache of every layer for a group of one: no error")
	}
}
