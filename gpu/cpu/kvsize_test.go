package cpu

import (
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// The sizes gpu.KVSpec gives (and runner budgets with) are the bytes the
// pool holds: for each K/V type, at load and after growing.
func TestKVSpecSizesAreWhatIsAllocated(t *testing.T) {
	for _, c := range []struct {
		typ gguf.TensorType
		row int64 // one token's K in one layer: 2 heads × 64 elements
	}{
		{gguf.TypeF16, 128 * 2},
		{gguf.TypeF32, 128 * 4},
		{gguf.TypeQ8_0, 128 / 32 * 34},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			spec := gpu.KVSpec{Layers: 3, Blocks: 5, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: c.typ}
			if got := spec.RowBytes(); got != c.row {
				t.Errorf("RowBytes %d, want %d", got, c.row)
			}
			if got, want := spec.BytesPerToken(), 2*3*c.row; got != want {
				t.Errorf("BytesPerToken %d, want %d", got, want)
			}
			if got, want := spec.BlockBytes(), 16*2*3*c.row; got != want {
				t.Errorf("BlockBytes %d, want %d", got, want)
			}
			if spec.Tokens() != 80 {
				t.Errorf("Tokens %d, want 80", spec.Tokens())
			}
			b := New(2)
			defer b.Close()
			kv, err := b.NewKVCache(spec)
			if err != nil {
				t.Fatal(err)
			}
			checkAllocated(t, kv.(*KVCache), spec)
			if err := b.GrowKVCache(kv, 9); err != nil {
				t.Fatal(err)
			}
			spec.Blocks = 9
			checkAllocated(t, kv.(*KVCache), spec)
		})
	}
}

// checkAllocated compares c's buffers with spec's sizes.
func checkAllocated(t *testing.T, c *KVCache, spec gpu.KVSpec) {
	t.Helper()
	var total int64
	for l := range spec.Layers {
		k, v := c.layerBytes(l)
		if int64(len(k)) != int64(spec.Blocks)*int64(c.blockBytes()) || len(v) != len(k) {
			t.Errorf("%d blocks: layer %d holds %d and %d bytes, want %d blocks of %d", spec.Blocks, l, len(k), len(v), spec.Blocks, c.blockBytes())
		}
		total += int64(len(k) + len(v))
	}
	if total != spec.Bytes() {
		t.Errorf("%d blocks: the pool holds %d bytes, Bytes says %d", spec.Blocks, total, spec.Bytes())
	}
	if got := 2 * int64(spec.Layers) * int64(c.blockBytes()); got != spec.BlockBytes() {
		t.Errorf("a block holds %d bytes over all layers, BlockBytes says %d", got, spec.BlockBytes())
	}
}
