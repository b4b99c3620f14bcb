package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/gpu/place"
	"folio/models/gguf"
)

func TestOpenLoadsEveryKernelAndCaches(t *testing.T) {
	dir := t.TempDir()
	b, f, c, err := openFake(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "cuda:0" || b.Cached || c.calls != 1 || f.modules != 1 {
		t.Errorf("name %s, cached %v, %d compiles, %d modules", b.Name(), b.Cached, c.calls, f.modules)
	}
	for k, fn := range b.fn {
		if fn != uintptr(100+k) {
			t.Errorf("kernel %s resolved to %d", kernel(k), fn)
		}
	}
	if !strings.Contains(string(f.loaded[0]), "sm_90") {
		t.Errorf("image %q not compiled for the device's sm_90", f.loaded[0])
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2, _, c2, err := openFake(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if !b2.Cached || c2.calls != 0 {
		t.Errorf("second open: cached %v, %d compiles", b2.Cached, c2.calls)
	}
}

// A cached image the driver refuses is compiled again and loaded.
func TestOpenRecompilesARefusedCachedImage(t *testing.T) {
	dir := t.TempDir()
	b, _, _, err := openFake(dir)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	f, c := newFakeGPU(), &fakeCompiler{ver: [2]int{13, 0}}
	f.fail["cuModuleLoadData"] = 200
	b, err = open(f.driver(), c.compiler(), Options{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Cached || c.calls != 1 || len(f.loaded) != 2 {
		t.Errorf("cached %v, %d compiles, %d loads", b.Cached, c.calls, len(f.loaded))
	}
	// The cache holds the new image: the next open compiles nothing.
	b2, _, c2, err := openFake(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	if !b2.Cached || c2.calls != 0 {
		t.Errorf("after the refused image: cached %v, %d compiles", b2.Cached, c2.calls)
	}
}

func TestOpenFailuresNameTheCall(t *testing.T) {
	for call, code := range map[string]result{"cuStreamCreate": 2, "cuDevicePrimaryCtxRetain": 100, "cuModuleLoadData": 200} {
		f, c := newFakeGPU(), &fakeCompiler{}
		f.fail[call] = code
		_, err := open(f.driver(), c.compiler(), Options{NoCache: true})
		if err == nil || !strings.Contains(err.Error(), call) {
			t.Errorf("%s failing: %v", call, err)
		}
		if len(f.mem) != 0 {
			t.Errorf("%s failing: %d allocations left", call, len(f.mem))
		}
	}
	f, c := newFakeGPU(), &fakeCompiler{fail: true}
	if _, err := open(f.driver(), c.compiler(), Options{NoCache: true}); err == nil || !strings.Contains(err.Error(), "compiling") {
		t.Errorf("compile failure: %v", err)
	}
	if _, err := open(newFakeGPU().driver(), c.compiler(), Options{Ordinal: 3}); !errors.Is(err, ErrNoDriver) {
		t.Errorf("device 3 of 1: %v", err)
	}
}

func TestTensorsRoundTripAndClose(t *testing.T) {
	b, f, _, err := openFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	x, err := b.NewTensor(3, 5)
	if err != nil {
		t.Fatal(err)
	}
	in := make([]float32, 15)
	for i := range in {
		in[i] = float32(i) - 7.5
	}
	b.Upload(x, in)
	out := make([]float32, 15)
	b.Download(out, x)
	if !slices.Equal(in, out) {
		t.Errorf("round trip %v", out)
	}
	v := b.Slice(x, 2)
	if b.Slice(x, 2) != v || b.Slice(x, 3) != x || v.Rows() != 2 {
		t.Error("Slice does not reuse its views")
	}
	b.Download(out[:10], v)
	if !slices.Equal(in[:10], out[:10]) {
		t.Errorf("view %v", out[:10])
	}
	// A native weight stays encoded; a one-row weight and another type
	// become F32.
	q := make([]byte, gguf.TypeQ8_0.RowBytes(64)*2)
	w, err := b.Weight("w", gguf.TypeQ8_0, 2, 64, q)
	if err != nil || w.Type() != gguf.TypeQ8_0 {
		t.Fatalf("Q8_0 weight %v, %v", w, err)
	}
	h := make([]byte, 2*8)
	h[0], h[1] = 0x00, 0x3c // 1.0 in F16
	norm, err := b.Weight("norm", gguf.TypeF16, 1, 8, h)
	if err != nil || norm.Type() != gguf.TypeF32 {
		t.Fatalf("F16 norm %v, %v", norm, err)
	}
	got := make([]byte, 4)
	copy(got, f.bytes(norm.(*Tensor).ptr, 4))
	if math.Float32frombits(uint32(got[0])|uint32(got[1])<<8|uint32(got[2])<<16|uint32(got[3])<<24) != 1 {
		t.Errorf("norm's first element bytes %v, want 1.0", got)
	}
	if _, err := b.Weight("bad", gguf.TypeQ4_K, 2, 100, nil); err == nil {
		t.Error("a Q4_K row of 100 elements was accepted")
	}
	if _, err := b.Weight("short", gguf.TypeF32, 2, 4, make([]byte, 8)); err == nil {
		t.Error("8 bytes for a 2×4 F32 weight were accepted")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.mem) != 0 {
		t.Errorf("Close left %d allocations", len(f.mem))
	}
}

func TestOpsLaunchWithTheirParameters(t *testing.T) {
	b, f, _, err := openFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x, _ := b.NewTensor(1, 256)
	y, _ := b.NewTensor(1, 512)
	w, err := b.Weight("w", gguf.TypeQ4_K, 512, 256, make([]byte, 512*gguf.TypeQ4_K.RowBytes(256)))
	if err != nil {
		t.Fatal(err)
	}
	b.MatMul(y, x, w)
	l := f.launches[len(f.launches)-1]
	if l.fn != b.fn[kMatvecQ4_K] || l.grid != [3]uint32{64, 1, 1} {
		t.Fatalf("launch %+v", l)
	}
	wt := w.(*Tensor)
	want := []uint64{wt.ptr, 144, x.(*Tensor).ptr, y.(*Tensor).ptr, 256, 512}
	if !slices.Equal(l.params, want) {
		t.Errorf("matvec parameters %v, want %v", l.params, want)
	}

	// Rope's positions are uploaded once for the layers that reuse them.
	q, _ := b.NewTensor(2, 64)
	r := &gpu.Rope{HeadDim: 32, Dims: 32, Base: 10000, Scale: 1}
	pos := []int32{5, 6}
	before := f.htod
	b.Rope(q, pos, r)
	b.Rope(q, pos, r)
	if f.htod != before+1 {
		t.Errorf("%d uploads for the same positions twice", f.htod-before)
	}
	b.Rope(q, []int32{6, 7}, r)
	if f.htod != before+2 {
		t.Errorf("new positions were not uploaded")
	}
	l = f.launches[len(f.launches)-1]
	if l.fn != b.fn[kRope] || math.Float32frombits(uint32(l.params[8])) != 1 ||
		math.Float32frombits(uint32(l.params[9])) != float32(math.Pow(10000, -2.0/32)) ||
		math.Float32frombits(uint32(l.params[10])) != 1 { // MScale unset: 1
		t.Errorf("rope launch %+v", l)
	}
	b.Rope(q, []int32{6, 7}, &gpu.Rope{HeadDim: 32, Dims: 32, Base: 10000, Scale: 1, MScale: 1.25})
	if l = f.launches[len(f.launches)-1]; math.Float32frombits(uint32(l.params[10])) != 1.25 {
		t.Errorf("rope launch with MScale 1.25: %+v", l)
	}
	mustPanic(t, map[string]func(){
		"MatMul shape":  func() { b.MatMul(y, q, w) },
		"Rope position": func() { b.Rope(q, []int32{1}, r) },
		"Add shape":     func() { b.Add(x, x, y) },
		"act of weight": func() { b.SiLUMul(w, x, x) },
	})
}

func TestAttentionMeta(t *testing.T) {
	spec := gpu.KVSpec{Layers: 1, Blocks: 8, BlockSize: 4, KVHeads: 1, HeadDim: 32, Type: gguf.TypeF16}
	batch := &gpu.Batch{BlockSize: 4, Seqs: []gpu.Seq{
		{Start: 0, Len: 1, Pos: 5, Blocks: []int32{3, 1, 7}}, // decode at position 5: blocks 3, 1
		{Start: 2, Len: 3, Pos: 0, Blocks: []int32{6}},       // prefill of 3; row 1 is in no sequence
	}}
	// A window of 3 at positions 9 and 10: positions 7 … 9 and 8 … 10,
	// blocks 1 and 2 of the table; block 0 left the window (-1).
	window := &gpu.Batch{BlockSize: 4, Seqs: []gpu.Seq{{Start: 0, Len: 2, Pos: 9, Blocks: []int32{-1, 5, 2}}}}
	prefill := &gpu.Batch{BlockSize: 4, Seqs: []gpu.Seq{{Start: 0, Len: 3, Pos: 0, Blocks: []int32{4}}}}
	for _, c := range []struct {
		name  string
		rows  int
		batch *gpu.Batch
		o     gpu.AttnOpts
		want  []int32
	}{
		{"causal", 5, batch, gpu.AttnOpts{Scale: 1}, []int32{
			0, 6, 0, // row 0: positions 0 … 5, table at 0
			0, 0, 0, // row 1: none
			0, 1, 2, 0, 2, 2, 0, 3, 2, // rows 2-4: 1, 2, 3 positions, table at 2
			3, 1, 6,
		}},
		{"window", 2, window, gpu.AttnOpts{Window: 3}, []int32{
			7, 3, -1, // the list holds table entries 1 and 2: entry i at -1 + i
			8, 3, -1,
			5, 2,
		}},
		{"bidirectional", 3, prefill, gpu.AttnOpts{Bidirectional: true}, []int32{
			0, 3, 0, 0, 3, 0, 0, 3, 0, 4,
		}},
		{"bidirectional window 2", 3, prefill, gpu.AttnOpts{Bidirectional: true, Window: 2}, []int32{
			0, 2, 0, // positions 0 … 1
			0, 3, 0, // 0 … 2
			1, 2, 0, // 1 … 2
			4,
		}},
	} {
		if got := attentionMeta(nil, c.rows, spec, c.batch, c.o); !slices.Equal(got, c.want) {
			t.Errorf("%s: meta %v, want %v", c.name, got, c.want)
		}
	}
	mustPanic(t, map[string]func(){
		"block 9 of an 8-block pool": func() {
			attentionMeta(nil, 1, spec, &gpu.Batch{BlockSize: 4, Seqs: []gpu.Seq{{Len: 1, Blocks: []int32{9}}}}, gpu.AttnOpts{})
		},
		"a freed block without a window":  func() { attentionMeta(nil, 2, spec, window, gpu.AttnOpts{}) },
		"a freed block inside the window": func() { attentionMeta(nil, 2, spec, window, gpu.AttnOpts{Window: 7}) },
	})
}

func TestBlockIOAndCopyBlocks(t *testing.T) {
	b, _, _, err := openFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	spec := gpu.KVSpec{Layers: 2, Blocks: 3, BlockSize: 2, KVHeads: 2, HeadDim: 4, Type: gguf.TypeF32}
	c, err := b.NewKVCache(spec)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, spec.BlockBytes())
	for i := range buf {
		buf[i] = byte(i*7 + 1)
	}
	b.WriteBlock(c, 1, buf)
	b.CopyBlocks(c, []gpu.BlockCopy{{Src: 1, Dst: 2}, {Src: 0, Dst: 1}})
	got := make([]byte, len(buf))
	b.ReadBlock(c, 2, got)
	if !slices.Equal(got, buf) {
		t.Error("block 2 is not the copy of what block 1 held")
	}
	b.ReadBlock(c, 1, got)
	if slices.ContainsFunc(got, func(v byte) bool { return v != 0 }) {
		t.Error("block 1 is not the copy of the empty block 0")
	}
	// Grown in place: the blocks keep their bytes, the new ones are zero
	// and take writes; the old allocation is gone.
	used := b.Used()
	if err := b.GrowKVCache(c, 5); err != nil || c.Spec().Blocks != 5 {
		t.Fatalf("grown to %d blocks: %v", c.Spec().Blocks, err)
	}
	if grown := b.Used() - used; grown != 2*spec.Bytes()/3 {
		t.Errorf("the growth from 3 blocks to 5 took %d more bytes, want %d", grown, 2*spec.Bytes()/3)
	}
	b.ReadBlock(c, 2, got)
	if !slices.Equal(got, buf) {
		t.Error("block 2 lost its bytes in the growth")
	}
	b.ReadBlock(c, 4, got)
	if slices.ContainsFunc(got, func(v byte) bool { return v != 0 }) {
		t.Error("the new block 4 is not zero")
	}
	b.WriteBlock(c, 4, buf)
	b.CopyBlocks(c, []gpu.BlockCopy{{Src: 4, Dst: 3}})
	for _, blk := range []int32{2, 3, 4} {
		if b.ReadBlock(c, blk, got); !slices.Equal(got, buf) {
			t.Errorf("block %d after the growth", blk)
		}
	}
	if err := b.GrowKVCache(c, 4); err == nil {
		t.Error("shrinking a pool: no error")
	}
	if _, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: 1, BlockSize: 1, KVHeads: 1, HeadDim: 1024, Type: gguf.TypeF16}); !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("heads of 1024: %v", err)
	}
}

func TestNeedFit(t *testing.T) {
	dev := Device{Name: "Fake H200"}
	n := place.Need{Weights: 4 << 30, KV: 1 << 30, Scratch: 256 << 20}
	if err := n.Fit("cuda", dev.Name, n.Total()); err != nil {
		t.Errorf("exact fit refused: %v", err)
	}
	err := n.Fit("cuda", dev.Name, n.Total()-1)
	if !errors.Is(err, gpu.ErrOutOfMemory) || !strings.Contains(err.Error(), "5.75 GiB") || !strings.Contains(err.Error(), "lower num_ctx") {
		t.Errorf("one byte short: %v", err)
	}
	big := place.Need{Weights: 100 << 30}
	if err := big.Fit("cuda", dev.Name, 80<<30); err == nil || !strings.Contains(err.Error(), "smaller quantization") {
		t.Errorf("weights too large: %v", err)
	}
}

func TestChoose(t *testing.T) {
	f := newFakeGPU()
	f.fail["cuInit"] = 100
	resetDriver(t, func() (*driver, error) { return f.driver(), nil })
	if b, _, err := choose("cpu", place.Need{}, nil, openDefault); b != nil || err != nil {
		t.Errorf("cpu: %v, %v", b, err)
	}
	if b, _, err := choose("auto", place.Need{}, nil, openDefault); b != nil || err != nil {
		t.Errorf("auto without a device: %v, %v", b, err)
	}
	if _, _, err := choose("cuda", place.Need{}, nil, openDefault); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "FOLIO_GPU=cuda") {
		t.Errorf("cuda without a device: %v", err)
	}
	if _, _, err := choose("gpu", place.Need{}, nil, openDefault); err == nil || !strings.Contains(err.Error(), "use cpu, auto, cuda") {
		t.Errorf("an unknown mode: %v", err)
	}
}

// A model that fits goes whole on the GPU; one that does not is split as
// LayersThatFit says; one without a layer that fits is refused (cuda) or
// left to the CPU (auto).
func TestChoosePlacement(t *testing.T) {
	const gb = 1 << 30
	need := place.Need{Weights: 10 * gb, LayerWeights: 8 * gb, Layers: 16, KV: 2 * gb, Scratch: gb / 2}
	for _, tc := range []struct {
		mode   string
		free   int64
		onDev  int // -1: the whole GPU, -2: none
		errSub string
	}{
		{"auto", 20 * gb, -1, ""},
		{"cuda", 8 * gb, 8, ""},                           // 8 − 0.5 reserve − 0.5 scratch − 2 outside the layers = 5 GiB, 10/16 GiB a layer
		{"auto", 3*gb + gb/2, -2, ""},                     // nothing past what stays on the GPU
		{"cuda", 3*gb + gb/2, -2, "smaller quantization"}, // the same, refused
	} {
		t.Run(fmt.Sprintf("%s/%dMiB free", tc.mode, tc.free>>20), func(t *testing.T) {
			f, c := newFakeGPU(), &fakeCompiler{}
			f.freeMem = uint64(tc.free)
			open := func() (*Backend, error) { return open(f.driver(), c.compiler(), Options{NoCache: true}) }
			be, notice, err := choose(tc.mode, need, func() gpu.Backend { return cpu.New(1) }, open)
			// what the caller logs: the split or the fallback, never the whole GPU
			want := map[int]string{-1: "", -2: "computing on the CPU"}[tc.onDev]
			if tc.onDev >= 0 {
				want = "layers on"
			}
			if tc.errSub != "" {
				want = ""
			}
			if (want == "") != (notice == "") || !strings.Contains(notice, want) {
				t.Errorf("%s, %d free: notice %q, want %q", tc.mode, tc.free, notice, want)
			}
			switch {
			case tc.errSub != "":
				if err == nil || !strings.Contains(err.Error(), tc.errSub) || be != nil {
					t.Errorf("%s, %d free: %v, %v", tc.mode, tc.free, be, err)
				}
			case err != nil:
				t.Errorf("%s, %d free: %v", tc.mode, tc.free, err)
			case tc.onDev == -1:
				if _, ok := be.(*Backend); !ok {
					t.Errorf("%s, %d free: %T, want the GPU whole", tc.mode, tc.free, be)
				}
			case tc.onDev == -2:
				if be != nil {
					t.Errorf("%s, %d free: %T, want none", tc.mode, tc.free, be)
				}
			default:
				s, ok := be.(*place.Split)
				if !ok || s.OnDevice() != tc.onDev {
					t.Errorf("%s, %d free: %T %v, want %d layers on the GPU", tc.mode, tc.free, be, be, tc.onDev)
				}
			}
			if be != nil {
				be.Close()
			}
			if be == nil && len(f.mem) != 0 {
				t.Errorf("%s, %d free: %d allocations left after refusing", tc.mode, tc.free, len(f.mem))
			}
		})
	}
}

// Prefill's MatMul dequantizes the weight to F32 and calls SGEMM on the
// row-major operands as column-major ones: dst(m×n) = wᵀ·x.
func TestMatMulThroughBLAS(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	saved := openBLAS
	openBLAS = func(uintptr, []string) (*blas, error) { return f.blas(), nil }
	b, err := open(f.driver(), c.compiler(), Options{NoCache: true})
	openBLAS = saved
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !strings.HasPrefix(b.BLAS(), "cuBLAS") {
		t.Fatalf("BLAS %q", b.BLAS())
	}
	const n, k, m = 16, 256, 40
	x, _ := b.NewTensor(n, k)
	y, _ := b.NewTensor(n, m)
	w, err := b.Weight("w", gguf.TypeQ6_K, m, k, make([]byte, m*gguf.TypeQ6_K.RowBytes(k)))
	if err != nil {
		t.Fatal(err)
	}
	b.MatMul(y, x, w)
	l := f.launches[len(f.launches)-1]
	if l.fn != b.fn[kDequantQ6_K] || l.params[0] != w.(*Tensor).ptr || l.params[2] != b.wbuf.ptr || l.params[3] != m || l.params[4] != k {
		t.Errorf("dequant launch %+v", l)
	}
	if len(f.sgemms) != 1 || f.sgemms[0] != [6]int32{blasOpT, blasOpN, m, n, k, k} {
		t.Errorf("SGEMMs %v", f.sgemms)
	}
	// Fewer rows, or cuBLAS off, take the kernels.
	b.MatMul(b.Slice(y, 15), b.Slice(x, 15), w)
	b.SetBLAS(false)
	b.MatMul(y, x, w)
	if len(f.sgemms) != 1 || f.launches[len(f.launches)-1].fn != b.fn[kMatmulQ6_K] {
		t.Errorf("SGEMMs %v, last launch %v", f.sgemms, f.launches[len(f.launches)-1])
	}
}

// With Sync, a kernel's fault is reported with its name.
func TestSyncNamesTheFaultingKernel(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	b, err := open(f.driver(), c.compiler(), Options{NoCache: true, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x, _ := b.NewTensor(2, 64)
	f.fail["cuStreamSynchronize"] = 700 // CUDA_ERROR_ILLEGAL_ADDRESS
	defer func() {
		err, _ := recover().(error)
		if err == nil || !strings.Contains(err.Error(), "cuStreamSynchronize after softmax") {
			t.Errorf("recovered %v", err)
		}
		delete(f.fail, "cuStreamSynchronize")
	}()
	b.Softmax(x)
}

// Without memory for the dequantized weight, prefill turns cuBLAS off and
// runs the tiled kernel rather than failing.
func TestMatMulWithoutScratchMemory(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	saved := openBLAS
	openBLAS = func(uintptr, []string) (*blas, error) { return f.blas(), nil }
	b, err := open(f.driver(), c.compiler(), Options{NoCache: true})
	openBLAS = saved
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x, _ := b.NewTensor(32, 256)
	y, _ := b.NewTensor(32, 64)
	w, _ := b.Weight("w", gguf.TypeQ8_0, 64, 256, make([]byte, 64*gguf.TypeQ8_0.RowBytes(256)))
	f.fail["cuMemAlloc"] = 2
	b.MatMul(y, x, w)
	delete(f.fail, "cuMemAlloc")
	if l := f.launches[len(f.launches)-1]; l.fn != b.fn[kMatmulQ8_0] || len(f.sgemms) != 0 {
		t.Errorf("last launch %v, %d SGEMMs", l, len(f.sgemms))
	}
	if !strings.Contains(b.BLAS(), "CUDA_ERROR_OUT_OF_MEMORY") {
		t.Errorf("BLAS() = %q", b.BLAS())
	}
}
