package cpu

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// TestSharedKV: a pool whose V is its K (deepseek2's latent) takes half
// the bytes, and attention over it equals attention over a pool with V
// written equal to K, bit for bit, before and after the block is copied,
// read out and written back, and the pool grown.
func TestSharedKV(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
		b := New(2)
		spec := gpu.KVSpec{Layers: 2, Blocks: 6, BlockSize: 4, KVHeads: 1, HeadDim: 96, Type: typ}
		shared := spec
		shared.SharedKV = true
		if shared.Bytes()*2 != spec.Bytes() || shared.BlockBytes()*2 != spec.BlockBytes() {
			t.Fatalf("%v: shared pool %d bytes (block %d), separate %d (%d)", typ, shared.Bytes(), shared.BlockBytes(), spec.Bytes(), spec.BlockBytes())
		}
		cs, err := b.NewKVCache(shared)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := b.NewKVCache(spec)
		if err != nil {
			t.Fatal(err)
		}
		if kb, vb := cs.(*KVCache).layerBytes(1); &kb[0] != &vb[0] || len(kb) != len(vb) {
			t.Fatalf("%v: a shared pool's layer keeps V apart from K", typ)
		}
		r := rand.New(rand.NewPCG(3, 4))
		const n, heads = 6, 4
		k, _ := b.NewTensor(n, spec.HeadDim)
		kd := make([]float32, n*spec.HeadDim)
		for i := range kd {
			kd[i] = float32(r.NormFloat64())
		}
		b.Upload(k, kd)
		slots := []int32{8, 9, 10, 11, 20, 21} // blocks 2 and 5
		for l := range spec.Layers {
			b.WriteKV(cs, l, k, k, slots)
			b.WriteKV(cp, l, k, k, slots)
		}
		q, _ := b.NewTensor(n, heads*spec.HeadDim)
		qd := make([]float32, n*heads*spec.HeadDim)
		for i := range qd {
			qd[i] = float32(r.NormFloat64())
		}
		b.Upload(q, qd)
		attend := func(c gpu.KVCache, blocks []int32) []float32 {
			out, _ := b.NewTensor(n, heads*spec.HeadDim)
			batch := gpu.Batch{BlockSize: spec.BlockSize, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: 0, Blocks: blocks}}}
			b.Attention(out, q, c, 1, &batch, gpu.AttnOpts{Scale: 0.1})
			got := make([]float32, n*heads*spec.HeadDim)
			b.Download(got, out)
			return got
		}
		same := func(what string, a, c []float32) {
			t.Helper()
			for i := range a {
				if a[i] != c[i] {
					t.Fatalf("%v, %s: element %d is %v shared, %v separate", typ, what, i, a[i], c[i])
				}
			}
		}
		want := attend(cp, []int32{2, 5})
		same("written", attend(cs, []int32{2, 5}), want)
		b.CopyBlocks(cs, []gpu.BlockCopy{{Src: 2, Dst: 0}})
		buf := make([]byte, shared.BlockBytes())
		b.ReadBlock(cs, 5, buf)
		b.WriteBlock(cs, 3, buf)
		same("copied and restored", attend(cs, []int32{0, 3}), want)
		again := make([]byte, len(buf))
		b.ReadBlock(cs, 3, again)
		if !bytes.Equal(buf, again) {
			t.Fatalf("%v: block 3 reads back other bytes than were written", typ)
		}
		if err := b.GrowKVCache(cs, 9); err != nil {
			t.Fatal(err)
		}
		if got := cs.Spec(); !got.SharedKV || got.Blocks != 9 {
			t.Fatalf("%v: grown to %+v", typ, got)
		}
		same("grown", attend(cs, []int32{0, 3}), want)
		if kb, vb := cs.(*KVCache).layerBytes(0); &kb[0] != &vb[0] {
			t.Fatalf("%v: the grown pool keeps V apart from K", typ)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%v: WriteKV of a v other than k into a shared pool did not panic", typ)
				}
			}()
			v, _ := b.NewTensor(n, spec.HeadDim)
			b.WriteKV(cs, 0, k, v, slots)
		}()
		b.Close()
	}
}
