package cpu

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// TestBlockIORoundTrip: a block read out and written into another block
// gives the same attention inputs there: every slot's K and V equal.
func TestBlockIORoundTrip(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
		b := New(2)
		defer b.Close()
		spec := gpu.KVSpec{Layers: 3, Blocks: 6, BlockSize: 4, KVHeads: 2, HeadDim: 8, Type: typ}
		if typ == gguf.TypeQ8_0 {
			spec.HeadDim = 32
		}
		c, err := b.NewKVCache(spec)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		w := spec.KVHeads * spec.HeadDim
		k, _ := b.NewTensor(spec.BlockSize, w)
		v, _ := b.NewTensor(spec.BlockSize, w)
		slots := []int32{8, 9, 10, 11} // block 2
		for l := range spec.Layers {
			kd, vd := make([]float32, spec.BlockSize*w), make([]float32, spec.BlockSize*w)
			for i := range kd {
				kd[i], vd[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			b.Upload(k, kd)
			b.Upload(v, vd)
			b.WriteKV(c, l, k, v, slots)
		}
		buf := make([]byte, spec.BlockBytes())
		b.ReadBlock(c, 2, buf)
		b.WriteBlock(c, 5, buf)
		again := make([]byte, len(buf))
		b.ReadBlock(c, 5, again)
		if !bytes.Equal(buf, again) {
			t.Fatalf("%v: block 5 differs from block 2 after WriteBlock", typ)
		}
		// and the copy equals what CopyBlocks makes
		b.CopyBlocks(c, []gpu.BlockCopy{{Src: 2, Dst: 4}})
		b.ReadBlock(c, 4, again)
		if !bytes.Equal(buf, again) {
			t.Fatalf("%v: ReadBlock of a CopyBlocks copy differs", typ)
		}
		zero := make([]byte, len(buf))
		b.ReadBlock(c, 0, again)
		if !bytes.Equal(zero, again) {
			t.Fatalf("%v: an untouched block is not zero", typ)
		}
	}
}
