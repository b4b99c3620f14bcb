package cuda

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// Every kernel of the sources declares __launch_bounds__(N) with N the
// threads Go launches it with: a kernel compiled for fewer would fail
// every launch on a GPU (the emulation cannot see it).
func TestLaunchBoundsMatchTheTable(t *testing.T) {
	src := kernelSource()
	global := strings.Count(src, "__global__ void")
	found := regexp.MustCompile(`extern "C" __global__ void __launch_bounds__\((\d+)\) (\w+)\(`).FindAllStringSubmatch(src, -1)
	if len(found) != global {
		t.Errorf("%d kernels, %d with __launch_bounds__", global, len(found))
	}
	bounds := map[string]int{}
	for _, m := range found {
		bounds[m[2]], _ = strconv.Atoi(m[1])
	}
	ks := Kernels()
	if len(ks) != int(numKernels) || len(bounds) != len(ks) {
		t.Errorf("Kernels() lists %d, the sources bound %d, Go has %d", len(ks), len(bounds), numKernels)
	}
	for _, k := range ks {
		if k.Threads <= 0 || k.Threads%32 != 0 || k.Threads > 1024 {
			t.Errorf("%s: %d threads is not whole warps of at most 1024", k.Name, k.Threads)
		}
		if got, ok := bounds[k.Name]; !ok || got != k.Threads {
			t.Errorf("%s: __launch_bounds__(%d) in the source, launched with %d", k.Name, got, k.Threads)
		}
	}
	want := map[string]int{"attention_f16": 512, "matvec_q4_k": 128, "matmul_q6_k": 256, "get_rows_f32": 128}
	for _, k := range ks {
		if n, ok := want[k.Name]; ok && k.Threads != n {
			t.Errorf("%s launches %d threads, want %d", k.Name, k.Threads, n)
		}
	}
}

// Every op's launches, kernel by kernel, have the table's block: each
// kernel is launched at least once here, through the ops (the fake driver
// records the blocks).
func TestLaunchesUseTheTable(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{}
	saved := openBLAS
	openBLAS = func(uintptr, []string) (*blas, error) { return f.blas(), nil }
	b, err := open(f.driver(), c.compiler(), Options{NoCache: true})
	openBLAS = saved
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const k, m = 256, 64
	for typ := range nativeTypes {
		w, err := b.Weight("w", typ, m, k, make([]byte, m*typ.RowBytes(k)))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, matvecMaxN, blasMinRows} { // matvec, tiled, dequant for cuBLAS
			x, _ := b.NewTensor(n, k)
			y, _ := b.NewTensor(n, m)
			b.MatMul(y, x, w)
		}
		e, _ := b.NewTensor(2, k)
		b.Embed(e, w, []int32{0, m - 1})
	}
	x, _ := b.NewTensor(4, 128)
	norm, _ := b.Weight("norm", gguf.TypeF32, 1, 128, make([]byte, 4*128))
	b.RMSNorm(x, x, norm, 1e-6)
	b.Add(x, x, x)
	b.SiLUMul(x, x, x)
	b.Softmax(x)
	b.Rope(x, []int32{0, 1, 2, 3}, &gpu.Rope{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1})
	b.Scale(x, x, 0.5)
	b.Softcap(x, 30)
	b.GELUMul(x, x, nil)
	b.LayerNorm(x, x, norm, norm, 1e-5)
	b.SwiGLUOAI(x, x, x, 1.702, 7)
	b.SigmoidMul(x, x, x)
	coefs, _ := b.NewTensor(4, 16)
	gpu.MixRows(b, x, x, []gpu.Tensor{x, x}, coefs, []int{0, 5}, 1)
	gpu.MatchNorm(b, x, x, x)
	gpu.MulRow(b, x, x, make([]float32, 128))
	gpu.SparsifyRows(b, x, 1.6)
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32} {
		c, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: 4, BlockSize: 16, KVHeads: 2, HeadDim: 64, Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		kv, _ := b.NewTensor(4, 128)
		b.WriteKV(c, 0, kv, kv, []int32{0, 1, 2, 3})
		batch := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Start: 0, Len: 4, Pos: 0, Blocks: []int32{0}}}}
		b.Attention(x, x, c, 0, batch, gpu.AttnOpts{Scale: 0.125})
		wide, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: 1, BlockSize: 16, KVHeads: 1, HeadDim: 512, Type: typ})
		if err != nil {
			t.Fatal(err)
		}
		q, _ := b.NewTensor(4, 512)
		b.Attention(q, q, wide, 0, batch, gpu.AttnOpts{Scale: 0.125}) // the _wide kernel
	}

	byFn := map[uintptr]kernel{}
	for k := range numKernels {
		byFn[b.fn[k]] = k
	}
	seen := map[kernel]bool{}
	for _, l := range f.launches {
		k := byFn[l.fn]
		seen[k] = true
		n := int(l.block[0] * l.block[1] * l.block[2])
		if n > kernelThreads[k] || fixedThreads(k) && n != kernelThreads[k] {
			t.Errorf("%s launched with %v threads, table %d", k, l.block, kernelThreads[k])
		}
	}
	seen[kDequantF32] = true // SGEMM reads an F32 weight as it is: no op launches it
	for k := range numKernels {
		if !seen[k] {
			t.Errorf("%s was not launched", k)
		}
	}
}

// A launch outside its kernel's bound is refused before it reaches the
// driver, naming the kernel.
func TestLaunchOutsideItsBoundPanics(t *testing.T) {
	b, f, _, err := openFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	before := len(f.launches)
	mustPanic(t, map[string]func(){
		"attention of 1024": func() { b.launch(kAttentionF16, dims{grid3(1, 1), block1(1024)}) },
		"matvec of 256":     func() { b.launch(kMatvecQ8_0, dims{grid3(1, 1), block1(256)}) },
		"matmul of 128":     func() { b.launch(kMatmulF16, dims{grid3(1, 1), block1(128)}) },
		"softmax of 48":     func() { b.launch(kSoftmax, dims{grid3(1, 1), block1(48)}) },
	})
	if len(f.launches) != before {
		t.Errorf("%d launches reached the driver", len(f.launches)-before)
	}
	func() {
		defer func() {
			if r := recover(); r == nil || !strings.Contains(r.(string), "attention_f32 launched with 1024 threads a block; its __launch_bounds__ is 512") {
				t.Errorf("recovered %v", r)
			}
		}()
		b.launch(kAttentionF32, dims{grid3(1, 1), block1(1024)})
	}()
	b.launch(kSoftmax, dims{grid3(1, 1), block1(64)}) // fewer whole warps: allowed for a row kernel
}
