package cuda

import (
	"errors"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// The device memory a K/V pool takes is gpu.KVSpec's Bytes, and its last
// layer's V ends where that memory does; Q8_0 is refused here.
func TestKVSpecSizesAreWhatIsAllocated(t *testing.T) {
	b, f, _, err := openFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, c := range []struct {
		typ gguf.TensorType
		row int64 // one token's K in one layer: 2 heads × 64 elements
	}{
		{gguf.TypeF16, 128 * 2},
		{gguf.TypeF32, 128 * 4},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			spec := gpu.KVSpec{Layers: 3, Blocks: 5, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: c.typ}
			kv, err := b.NewKVCache(spec)
			if err != nil {
				t.Fatal(err)
			}
			cc := b.kv(kv)
			mem := int64(len(f.mem[cc.ptr]))
			if want := 3 * 5 * 16 * 2 * c.row; mem != want || spec.Bytes() != want {
				t.Errorf("allocated %d bytes, Bytes says %d, want %d", mem, spec.Bytes(), want)
			}
			if end := int64(cc.v(spec.Layers-1)-cc.ptr) + int64(spec.Blocks)*cc.blockRun; end != mem {
				t.Errorf("the last layer's V ends at %d of %d bytes", end, mem)
			}
			if 2*int64(spec.Layers)*cc.blockRun != spec.BlockBytes() {
				t.Errorf("a block is %d bytes over all layers, BlockBytes says %d", 2*int64(spec.Layers)*cc.blockRun, spec.BlockBytes())
			}
		})
	}
	q8 := gpu.KVSpec{Layers: 3, Blocks: 5, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: gguf.TypeQ8_0}
	if _, err := b.NewKVCache(q8); !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("a q8_0 pool: %v, want ErrUnsupported", err)
	}
}
