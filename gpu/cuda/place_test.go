package cuda

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/gpu/place"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// WeightBytes is what Weight allocates, type by type: the types the
// kernels read as stored (a one-row weight as F32), the others as F32.
func TestWeightBytesIsWhatWeightAllocates(t *testing.T) {
	b, _, _, err := openFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const cols = 256
	for _, tc := range []struct {
		typ  gguf.TensorType
		rows int
		want int64
	}{
		{gguf.TypeQ4_K, 3, 3 * 144},
		{gguf.TypeQ6_K, 3, 3 * 210},
		{gguf.TypeQ8_0, 3, 3 * 272},
		{gguf.TypeQ4_0, 3, 3 * 144},
		{gguf.TypeF16, 3, 3 * 512},
		{gguf.TypeF32, 3, 3 * 1024},
		{gguf.TypeQ5_K, 3, 3 * 1024}, // 176 bytes in the file: 5.8 times as much on the device
		{gguf.TypeQ4_1, 3, 3 * 1024},
		{gguf.TypeBF16, 3, 3 * 1024},
		{gguf.TypeQ3_K, 3, 3 * 1024},
		{gguf.TypeQ4_K, 1, 1024}, // a norm or a bias: F32
		{gguf.TypeF16, 1, 1024},
	} {
		t.Run(fmt.Sprintf("%v/%d", tc.typ, tc.rows), func(t *testing.T) {
			if got := WeightBytes(tc.typ, tc.rows, cols); got != tc.want {
				t.Errorf("WeightBytes(%v, %d, %d) = %d, want %d", tc.typ, tc.rows, cols, got, tc.want)
			}
			before := b.Used()
			if _, err := b.Weight("w", tc.typ, tc.rows, cols, make([]byte, int64(tc.rows)*tc.typ.RowBytes(cols))); err != nil {
				t.Fatal(err)
			}
			if got := b.Used() - before; got != tc.want {
				t.Errorf("%v [%d, %d]: Weight allocated %d bytes, WeightBytes says %d", tc.typ, tc.rows, cols, got, tc.want)
			}
		})
	}
}

// NeedOf counts each tensor as uploaded, the layers' apart, and cuBLAS's
// scratch as the largest weight it dequantizes (not an F32 one, not the
// token embeddings of a model with an output matrix: Embed reads them).
func TestNeedOfCountsWhatIsUploaded(t *testing.T) {
	w := gguf.NewWriter()
	add := func(name string, typ gguf.TensorType, shape ...uint64) {
		rows := uint64(1)
		for _, d := range shape[1:] {
			rows *= d
		}
		w.AddTensor(name, typ, shape, make([]byte, int64(rows)*typ.RowBytes(int64(shape[0]))))
	}
	add("token_embd.weight", gguf.TypeQ6_K, 256, 1000) // 1000 × 210; lookup only
	add("blk.0.attn_norm.weight", gguf.TypeF32, 256)   // 1024
	add("blk.0.attn_q.weight", gguf.TypeQ5_K, 256, 64) // 64 × 176 in the file, 64 × 1024 uploaded
	add("blk.0.ffn_down.weight", gguf.TypeQ8_0, 256, 300)
	add("output.weight", gguf.TypeQ4_K, 256, 200)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	spec := gpu.KVSpec{Layers: 1, Blocks: 4, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: gguf.TypeF16}
	got := NeedOf(f, spec, 12345)
	layers := int64(1024 + 64*1024 + 300*272)
	want := place.Need{Weights: 1000*210 + layers + 200*144, KV: spec.Bytes(), Scratch: 12345, BLAS: 4 * 300 * 256,
		Layers: 1, LayerWeights: layers, KVSpec: spec}
	if got != want {
		t.Errorf("NeedOf\n got %+v\nwant %+v", got, want)
	}
	var file int64
	for _, ti := range f.Tensors {
		file += ti.Bytes
	}
	if file+64*(1024-176) != got.Weights {
		t.Errorf("file %d bytes, uploaded %d: only Q5_K's expansion to F32 should differ", file, got.Weights)
	}
}

// A model whose file would fit but whose weights as uploaded do not is
// split, and what it then allocates on the GPU (weights, K/V, activations,
// cuBLAS's scratch after a prefill) stays inside what placement counted.
func TestChooseCountsWeightsAsUploaded(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeBF16, gguf.TypeQ8_0} {
		t.Run(typ.String(), func(t *testing.T) { chooseAsUploaded(t, typ) })
	}
}

func chooseAsUploaded(t *testing.T, typ gguf.TensorType) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.WriteTiny(path, "llama", typ, 1, func(c *synth.Config) { c.Layers = 4 }); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ac, err := arch.ReadConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	aopt := arch.Options{MaxRows: 32, MaxOut: 1}
	spec := gpu.KVSpec{Layers: ac.Layers, Blocks: 8, BlockSize: 16, KVHeads: ac.KVHeads, HeadDim: ac.HeadDim, Type: gguf.TypeF16}
	need := NeedOf(f, spec, arch.ScratchBytes(ac, aopt))
	var file, up, upLayers int64 // the file's bytes; the weights as Weight uploads them
	for _, ti := range f.Tensors {
		file += ti.Bytes
		n := WeightBytes(ti.Type, int(ti.Elements())/int(ti.Shape[0]), int(ti.Shape[0]))
		up += n
		if strings.HasPrefix(ti.Name, "blk.") {
			upLayers += n
		}
	}
	// Free memory for all but a layer and a half of the weights as uploaded.
	free := up + need.KV + need.Scratch + need.BLAS + place.Reserve - 3*upLayers/2/int64(ac.Layers)
	if typ == gguf.TypeBF16 && file+need.KV+need.Scratch+place.Reserve > free {
		t.Fatalf("the file's %d bytes do not fit in %d: the test does not show the case", file, free)
	}
	fg, c := newFakeGPU(), &fakeCompiler{}
	fg.freeMem = uint64(free)
	var dev *Backend
	open := func() (*Backend, error) {
		saved := openBLAS
		openBLAS = func(uintptr, []string) (*blas, error) { return fg.blas(), nil }
		defer func() { openBLAS = saved }()
		b, err := open(fg.driver(), c.compiler(), Options{NoCache: true})
		dev = b
		return b, err
	}
	be, _, err := choose("cuda", need, func() gpu.Backend { return cpu.New(1) }, open)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	s, ok := be.(*place.Split)
	if !ok || s.OnDevice() != need.Layers-2 {
		t.Fatalf("%T, want a split with %d of %d layers on the GPU", be, need.Layers-2, need.Layers)
	}
	m, err := arch.Load(f, be, aopt)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := be.NewKVCache(spec)
	if err != nil {
		t.Fatal(err)
	}
	tokens := make([]int32, 20)
	batch := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: len(tokens), Blocks: []int32{0, 1}}}}
	if _, err := m.Forward(kv, batch, tokens, []int32{19}); err != nil {
		t.Fatal(err)
	}
	if typ == gguf.TypeQ8_0 && (len(fg.sgemms) == 0 || dev.wbuf.cap == 0 || dev.wbuf.cap > need.BLAS) {
		t.Errorf("%d SGEMMs, cuBLAS scratch of %d bytes, %d counted", len(fg.sgemms), dev.wbuf.cap, need.BLAS)
	}
	if budget := free - place.Reserve; dev.Used() > budget {
		t.Errorf("the GPU holds %d bytes, placement allowed %d outside the reserve", dev.Used(), budget)
	}
	t.Logf("%v: file %d bytes, weights as uploaded %d; GPU holds %d of %d free (reserve %d)", typ, file, need.Weights, dev.Used(), free, int64(place.Reserve))
}

// A K/V type the GPU has no kernel for is refused once a GPU is found,
// before any weight is uploaded, in either mode; without a GPU the CPU
// takes it.
func TestChooseRefusesQ8KVBeforeUploading(t *testing.T) {
	spec := gpu.KVSpec{Layers: 2, Blocks: 4, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: gguf.TypeQ8_0}
	need := place.Need{Weights: 1 << 20, LayerWeights: 1 << 19, Layers: 2, KV: spec.Bytes(), KVSpec: spec}
	for _, mode := range []string{"auto", "cuda"} {
		f, c := newFakeGPU(), &fakeCompiler{}
		open := func() (*Backend, error) { return open(f.driver(), c.compiler(), Options{NoCache: true}) }
		be, _, err := choose(mode, need, func() gpu.Backend { return cpu.New(1) }, open)
		if be != nil || !errors.Is(err, gpu.ErrUnsupported) || !strings.Contains(err.Error(), "q8_0 K/V cache") {
			t.Errorf("%s: %v, %v", mode, be, err)
		}
		if len(f.mem) != 0 || f.htod != 0 {
			t.Errorf("%s: %d allocations, %d uploads", mode, len(f.mem), f.htod)
		}
	}
	noGPU := func() (*Backend, error) { return nil, ErrNoDriver }
	if be, _, err := choose("auto", need, nil, noGPU); be != nil || err != nil {
		t.Errorf("auto without a GPU: %v, %v", be, err)
	}
	big := need
	big.KVSpec.Type, big.KVSpec.HeadDim = gguf.TypeF16, 1024
	f, c := newFakeGPU(), &fakeCompiler{}
	if _, _, err := choose("auto", big, nil, func() (*Backend, error) { return open(f.driver(), c.compiler(), Options{NoCache: true}) }); !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("heads of 1024: %v", err)
	}
}

// choose is place.Choose over CUDA alone, its device opened by open, for a
// model of need.
func choose(mode string, need place.Need, host func() gpu.Backend, open func() (*Backend, error)) (gpu.Backend, string, error) {
	return chooseVetted(mode, need, host, open, nil)
}

// chooseVetted is choose with the first-load check vet.
func chooseVetted(mode string, need place.Need, host func() gpu.Backend, open func() (*Backend, error), vet place.Vet) (gpu.Backend, string, error) {
	return place.Choose(mode, []place.Kind{kind(open, func() place.Need { return need })}, host, vet)
}

// openDefault opens the first GPU as folio does.
func openDefault() (*Backend, error) { return Open(Options{}) }

// synthModel writes the tiny preset of arch with layers layers of typ.
func synthModel(t *testing.T, arch string, typ gguf.TensorType, layers int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), arch+".gguf")
	if err := synth.WriteTiny(path, arch, typ, 4, func(c *synth.Config) { c.Layers = layers }); err != nil {
		t.Fatal(err)
	}
	return path
}

// gemmaModel writes the tiny model of arch (gemma2 or gemma3) in F32 with
// sliding windows of 4 positions: shorter than CheckGeneration's prompt.
func gemmaModel(t *testing.T, arch string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), arch+".gguf")
	if err := synth.WriteTiny(path, arch, gguf.TypeF32, 2, func(c *synth.Config) { c.Window = 4 }); err != nil {
		t.Fatal(err)
	}
	return path
}
