package place

import (
	"slices"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
)

// TestSplitLayerGroups: a layer group's K/V pool (gpu.LayerKVCacher) sits
// with its layers: with layers 0 and 2 in one group, layer 1 in another
// and layer 0 on the device, the split computes what one CPU cache does,
// bit for bit, and crosses between the sides only where the layers do
// (into the host's layers and back, per pass). A pool that took its
// layers to be the model's first would put layer 1's K/V on the device.
func TestSplitLayerGroups(t *testing.T) {
	path := synthModel(t, "qwen2", gguf.TypeQ8_0, 3)
	groups := arch.LayerGroups([]int{1 << 20, 0, 1 << 20}, 3)
	if !slices.Equal(groups.LayersOf(0), []int{1}) || !slices.Equal(groups.LayersOf(1), []int{0, 2}) {
		t.Fatalf("groups %+v", groups)
	}
	load := func(be gpu.Backend) *arch.Model {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		m, err := arch.Load(f, be, arch.Options{MaxRows: 32, MaxOut: 1})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	ref := cpu.New(1)
	defer ref.Close()
	rm := load(ref)
	rkv, err := ref.NewKVCache(rm.KVSpec(8, 16, gguf.TypeF32))
	if err != nil {
		t.Fatal(err)
	}
	dev, host := &countingCPU{Backend: cpu.New(1)}, &countingCPU{Backend: cpu.New(1)}
	s := NewSplit(dev, host, 1)
	defer s.Close()
	sm := load(s)
	var kvs []gpu.KVCache
	for g, n := range groups.Layers {
		spec := sm.KVSpec(8, 16, gguf.TypeF32)
		spec.Layers = n
		kv, err := s.NewLayerKVCache(spec, groups.LayersOf(g))
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, kv)
	}
	table := []int32{3, 1, 4, 0, 5, 2, 7, 6}
	ids := []int32{1, 17, 99, 4, 250, 31, 8, 77, 120, 5}
	got, want := make([]float32, rm.Vocab), make([]float32, rm.Vocab)
	passes := 0
	for pos, n := 0, 6; pos < len(ids); pos, n = pos+n, 1 {
		b := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: pos, Blocks: table}}}
		out, err := rm.Forward(rkv, b, ids[pos:pos+n], []int32{int32(n - 1)})
		if err != nil {
			t.Fatal(err)
		}
		ref.Download(want, out)
		out, err = sm.ForwardGroups(groups, kvs, []*gpu.Batch{b, b}, ids[pos:pos+n], []int32{int32(n - 1)})
		if err != nil {
			t.Fatal(err)
		}
		s.Download(got, out)
		if !slices.Equal(got, want) {
			t.Fatalf("pass at %d: the split's logits differ from one CPU cache's", pos)
		}
		passes++
	}
	if up := dev.uploads + host.uploads; up != 2*passes {
		t.Errorf("%d copies between the sides in %d passes, want %d", up, passes, 2*passes)
	}
}
