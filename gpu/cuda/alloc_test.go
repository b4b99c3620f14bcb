package cuda

import (
	"testing"
	"unsafe"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
)

// A decode step in steady state allocates nothing on the Go side: its
// launches reuse one parameter block, and its tables are uploaded from
// buffers kept on the backend.
func TestDecodeStepAllocatesNothing(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	d := f.driver()
	d.LaunchKernel = func(uintptr, [3]uint32, [3]uint32, uint32, uintptr, unsafe.Pointer) result { return 0 }
	d.MemcpyHtoDAsync = func(uint64, unsafe.Pointer, uint64, uintptr) result { return 0 }
	d.MemcpyDtoHAsync = func(unsafe.Pointer, uint64, uint64, uintptr) result { return 0 }
	b, err := open(d, c.compiler(), Options{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	gf, err := gguf.Open(synthModel(t, "llama", gguf.TypeQ4_K, 2))
	if err != nil {
		t.Fatal(err)
	}
	defer gf.Close()
	m, err := arch.Load(gf, b, arch.Options{MaxRows: 4, MaxOut: 1})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := b.NewKVCache(m.KVSpec(4, 16, gguf.TypeF16))
	if err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, m.Vocab)
	batch := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: 1, Pos: 5, Blocks: []int32{2, 0}}}}
	tokens, out := []int32{7}, []int32{0}
	step := func() {
		batch.Seqs[0].Pos = 5 + batch.Seqs[0].Pos%3 // positions change, tables keep their size
		lt, err := m.Forward(kv, batch, tokens, out)
		if err != nil {
			t.Fatal(err)
		}
		b.Download(logits, lt)
	}
	step()
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("%.1f allocations a decode step", n)
	}
}
