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
	for _, graphs := range []bool{false, true} {
		t.Run(map[bool]string{false: "eager", true: "graphs"}[graphs], func(t *testing.T) {
			decodeAllocs(t, graphs)
		})
	}
}

func decodeAllocs(t *testing.T, graphs bool) {
	f, c := newFakeGPU(), &fakeCompiler{}
	d := f.driver()
	d.LaunchKernel = func(uintptr, [3]uint32, [3]uint32, uint32, uintptr, unsafe.Pointer) result { return 0 }
	d.MemcpyHtoDAsync = func(uint64, unsafe.Pointer, uint64, uintptr) result { return 0 }
	d.MemcpyDtoHAsync = func(unsafe.Pointer, uint64, uint64, uintptr) result { return 0 }
	d = f.withGraphs(d)
	d.GraphLaunch = func(uintptr, uintptr) result { return 0 }
	b, err := open(d, c.compiler(), Options{NoCache: true, Graphs: graphs})
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
	for range stableSteps {
		step()
	}
	if n := testing.AllocsPerRun(20, step); n != 0 {
		t.Errorf("%.1f allocations a decode step", n)
	}
	if graphs != (b.GraphLaunches() > 0) {
		t.Errorf("graphs %v, %d steps as graphs", graphs, b.GraphLaunches())
	}
}

// decodeSchedule loads the model at path on be and runs one sequence
// through steps of the given numbers of tokens, returning each step's
// last logits.
func decodeSchedule(t *testing.T, path string, be gpu.Backend, steps []int) [][]float32 {
	t.Helper()
	gf, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gf.Close()
	m, err := arch.Load(gf, be, arch.Options{MaxRows: 8, MaxOut: 1})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := be.NewKVCache(m.KVSpec(4, 16, gguf.TypeF16))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	pos := 0
	for _, n := range steps {
		tokens := make([]int32, n)
		for i := range tokens {
			tokens[i] = int32((pos + i) * 31 % m.Vocab)
		}
		b := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: n, Pos: pos, Blocks: []int32{3, 1, 0, 2}}}}
		lt, err := m.Forward(kv, b, tokens, []int32{int32(n - 1)})
		if err != nil {
			t.Fatal(err)
		}
		logits := make([]float32, m.Vocab)
		be.Download(logits, lt)
		out = append(out, logits)
		pos += n
	}
	return out
}
