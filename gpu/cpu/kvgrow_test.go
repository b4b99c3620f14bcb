package cpu

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// TestGrowKVCache: a grown pool keeps every block's bytes under its ID
// (layers of more than a huge page are copied in pieces), its new blocks
// are zero and writable, Spec says the new size, and it never shrinks.
func TestGrowKVCache(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
		b := New(2)
		defer b.Close()
		// F32: 4 KiB a block and layer, 2.3 MiB a layer before, 6 after
		spec := gpu.KVSpec{Layers: 2, Blocks: 600, BlockSize: 16, KVHeads: 2, HeadDim: 32, Type: typ}
		c, err := b.NewKVCache(spec)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(3, 4))
		blocks := make([][]byte, spec.Blocks)
		for i := range blocks {
			blocks[i] = make([]byte, spec.BlockBytes())
			for j := range blocks[i] {
				blocks[i][j] = byte(r.Uint32())
			}
			b.WriteBlock(c, int32(i), blocks[i])
		}
		if err := b.GrowKVCache(c, 599); err == nil || !strings.Contains(err.Error(), "only grows") {
			t.Errorf("%v: shrinking: %v, want an error", typ, err)
		}
		if err := b.GrowKVCache(c, 1500); err != nil {
			t.Fatal(err)
		}
		if got := c.Spec().Blocks; got != 1500 {
			t.Fatalf("%v: %d blocks after growing to 1500", typ, got)
		}
		buf, zero := make([]byte, spec.BlockBytes()), make([]byte, spec.BlockBytes())
		for i := range 1500 {
			b.ReadBlock(c, int32(i), buf)
			want := zero
			if i < len(blocks) {
				want = blocks[i]
			}
			if !bytes.Equal(buf, want) {
				t.Fatalf("%v: block %d after growing differs from before (or from zero)", typ, i)
			}
		}
		// a slot of the last new block takes K/V
		w := spec.KVHeads * spec.HeadDim
		k, _ := b.NewTensor(1, w)
		v, _ := b.NewTensor(1, w)
		row := make([]float32, w)
		for i := range row {
			row[i] = 1
		}
		b.Upload(k, row)
		b.Upload(v, row)
		b.WriteKV(c, 1, k, v, []int32{1500*16 - 1})
		b.ReadBlock(c, 1499, buf)
		if bytes.Equal(buf, zero) {
			t.Errorf("%v: WriteKV into the last new block left it zero", typ)
		}
	}
}
