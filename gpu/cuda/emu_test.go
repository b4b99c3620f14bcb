//go:build linux

package cuda

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"

	"folio/gpu"
	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/gpu/place"
	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/synth"
)

// The kernels run on the CPU: kernels/*.cu compiled by g++ with the
// emulation in testdata/emu (threads of a block as fibers), launched by the
// backend through a fake driver whose device memory is Go memory. Without
// g++, skipped on a laptop and a failure under CI.

var emuBuild struct {
	once sync.Once
	lib  string
	err  error
}

// emuLibrary compiles the emulation once per test binary, in a cache
// directory keyed by the source.
func emuLibrary(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the emulation uses ucontext, built here on Linux only")
	}
	gxx := fixtures.Tool(t, "g++") // the kernels' CPU emulation is built with it
	emuBuild.once.Do(func() {
		prelude, err1 := os.ReadFile("testdata/emu/prelude.h")
		rt, err2 := os.ReadFile("testdata/emu/runtime.cpp")
		if err1 != nil || err2 != nil {
			emuBuild.err = fmt.Errorf("%v %v", err1, err2)
			return
		}
		var table strings.Builder
		table.WriteString("const EmuKernel emu_kernels[] = {\n")
		for _, n := range kernelNames {
			fmt.Fprintf(&table, "    {%q, launch_fn<&%s>},\n", n, n)
		}
		fmt.Fprintf(&table, "};\nconst int emu_nkernels = %d;\n", len(kernelNames))
		src := string(prelude) + kernelSource() + string(rt) + table.String()
		sum := sha256.Sum256([]byte(src))
		dir := filepath.Join(os.TempDir(), "folio-cuda-emu")
		lib := filepath.Join(dir, hex.EncodeToString(sum[:8])+".so")
		if _, err := os.Stat(lib); err == nil {
			emuBuild.lib = lib
			return
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			emuBuild.err = err
			return
		}
		cpp := strings.TrimSuffix(lib, ".so") + ".cpp"
		if err := os.WriteFile(cpp, []byte(src), 0o644); err != nil {
			emuBuild.err = err
			return
		}
		tmp := lib + ".tmp"
		out, err := exec.Command(gxx, "-std=c++17", "-O1", "-ffp-contract=off", "-fno-strict-aliasing",
			"-shared", "-fPIC", "-w", "-o", tmp, cpp).CombinedOutput()
		if err != nil {
			emuBuild.err = fmt.Errorf("g++ %s: %v\n%s", cpp, err, out)
			return
		}
		emuBuild.lib, emuBuild.err = lib, os.Rename(tmp, lib)
	})
	if emuBuild.err != nil {
		t.Fatal(emuBuild.err)
	}
	return emuBuild.lib
}

// emuBackend is a Backend whose launches run the emulated kernels.
func emuBackend(t *testing.T) (*Backend, *fakeGPU) {
	return emuBackendWith(t, Options{NoCache: true})
}

func emuBackendWith(t *testing.T, opt Options) (*Backend, *fakeGPU) {
	d, f := emuDriver(t)
	saved := openBLAS
	openBLAS = func(uintptr, []string) (*blas, error) { return f.blas(), nil }
	be, err := open(d, (&fakeCompiler{}).compiler(), opt)
	openBLAS = saved
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be, f
}

// emuDriver is a fake driver whose launches run the emulated kernels,
// with graphs.
func emuDriver(t *testing.T) (*driver, *fakeGPU) {
	h, err := purego.Dlopen(emuLibrary(t), purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		t.Fatal(err)
	}
	lookup, err1 := purego.Dlsym(h, "emu_lookup")
	launch, err2 := purego.Dlsym(h, "emu_launch")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	f := newFakeGPU()
	d := f.driver()
	d.ModuleGetFunction = func(fn *uintptr, _ uintptr, name string) result {
		c := cString(name)
		*fn = callPtr(lookup, uintptr(unsafe.Pointer(&c[0])))
		runtime.KeepAlive(c)
		if *fn == 0 {
			return 500
		}
		return 0
	}
	d.LaunchKernel = func(fn uintptr, g, b [3]uint32, _ uint32, _ uintptr, params unsafe.Pointer) result {
		heap(params)
		r := call(launch, fn, uintptr(g[0]), uintptr(g[1]), uintptr(g[2]), uintptr(b[0]), uintptr(b[1]), uintptr(b[2]), uintptr(params))
		runtime.KeepAlive(params)
		return r
	}
	return f.withGraphs(d), f
}

// emuPair is an emulated backend and the CPU reference.
func emuPair(t *testing.T) (dev *Backend, ref *cpu.Backend, f *fakeGPU) {
	if testing.Short() {
		t.Skip("the emulation takes a while")
	}
	dev, f = emuBackend(t)
	ref = cpu.New(2)
	t.Cleanup(func() { ref.Close() })
	return dev, ref, f
}

// Every op, prefill's matmuls through cuBLAS (here SGEMM in Go, after the
// dequant kernels), then the matmuls again with the tiled kernel.
func TestKernelsOnTheEmulator(t *testing.T) {
	dev, ref, f := emuPair(t)
	checks := conformance.CheckOps(ref, dev, 5)
	if len(f.sgemms) == 0 {
		t.Error("no MatMul went through cuBLAS")
	}
	dev.SetBLAS(false)
	checks = append(checks, conformance.CheckMatMuls(ref, dev, 6)...)
	for _, r := range checks {
		if !r.Pass() {
			t.Errorf("%-60s NMSE %.3g (tolerance %.0e) %s", r.Op, r.NMSE, r.Tol, r.Err)
		} else {
			t.Logf("%-60s NMSE %.3g", r.Op, r.NMSE)
		}
	}
}

func TestGenerationOnTheEmulator(t *testing.T) {
	dev, ref, _ := emuPair(t)
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		path := synthModel(t, arch, gguf.TypeQ4_K, 1)
		g, err := conformance.CheckGeneration(path, ref, dev, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Pass() {
			t.Errorf("%s: %+v", arch, g)
		}
		t.Logf("%s: worst logits NMSE %.3g, tokens %v and %v", arch, g.Worst, g.Ref, g.Dev)
	}
}

// Gemma 2 and 3 through the kernels of the newer families: GeGLU,
// soft-capped attention and logits (gemma2), sliding windows of 4
// positions, shorter than the generation (prompt 8, 6 steps), and
// gemma3's local rope. F32 weights: no 8-bit activations on the CPU's
// side, so the logits agree to about 1e-8 (a kernel that ignored the
// window: 0.16 and 0.42).
func TestGemmaOnTheEmulator(t *testing.T) {
	dev, ref, _ := emuPair(t)
	for _, arch := range []string{"gemma2", "gemma3"} {
		g, err := conformance.CheckGeneration(gemmaModel(t, arch), ref, dev, 6)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Pass() {
			t.Errorf("%s: %+v", arch, g)
		}
		t.Logf("%s: worst logits NMSE %.3g, tokens %v and %v", arch, g.Worst, g.Ref, g.Dev)
	}
}

// Gemma 4 and Gemma 3n through the kernels, each layer group's K/V in a
// cache of its own (CheckGeneration's groups): Gemma 4's global layer
// with heads of 128 over one K/V head, and of 512 as the real ones, and
// E2B's layout (per-layer
// embeddings, the last layers reading earlier layers' K/V), windows of 4;
// Gemma 3n's streams (mix_rows, match_norm, mul_row, sparsify_rows) over
// 22 layers, 20 and 21 reading layer 18's K/V. F32 weights, as
// TestGemmaOnTheEmulator.
func TestGemma4And3nOnTheEmulator(t *testing.T) {
	dev, ref, _ := emuPair(t)
	for _, c := range []struct {
		name, arch string
		edit       func(*synth.Config)
	}{
		{"gemma4", "gemma4", func(c *synth.Config) { c.Window = 4 }},
		{"gemma4 heads of 512", "gemma4", func(c *synth.Config) { c.Window, c.HeadDim = 4, 512 }}, // the _wide kernels
		{"gemma4 E-layout", "gemma4", func(c *synth.Config) { c.Window, c.Layers, c.SharedKV, c.PLEDim = 4, 8, 4, 64 }},
		{"gemma3n", "gemma3n", func(c *synth.Config) { c.Window, c.Layers = 4, 22 }},
	} {
		path := filepath.Join(t.TempDir(), c.arch+".gguf")
		if err := synth.WriteTiny(path, c.arch, gguf.TypeF32, 2, c.edit); err != nil {
			t.Fatal(err)
		}
		g, err := conformance.CheckGeneration(path, ref, dev, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Pass() {
			t.Errorf("%s: %+v", c.name, g)
		}
		t.Logf("%s: worst logits NMSE %.3g, tokens %v and %v", c.name, g.Worst, g.Ref, g.Dev)
	}
}

// The first layer on the (emulated) GPU, the second on the CPU.
func TestSplitOnTheEmulator(t *testing.T) {
	dev, ref, _ := emuPair(t)
	host := cpu.New(2)
	s := place.NewSplit(dev, host, 1)
	defer host.Close()
	g, err := conformance.CheckGeneration(synthModel(t, "llama", gguf.TypeQ8_0, 2), ref, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Pass() {
		t.Errorf("%+v", g)
	}
	t.Logf("worst logits NMSE %.3g", g.Worst)
}

// Decode steps replayed as graphs compute what eager steps do, also when
// a step of another shape breaks the pattern and a graph is made again.
func TestGraphsOnTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulation takes a while")
	}
	dev, _ := emuBackendWith(t, Options{NoCache: true, Graphs: true})
	ref := cpu.New(2)
	defer ref.Close()
	path := synthModel(t, "llama", gguf.TypeQ4_K, 1)
	var got [2][][]float32
	for i, be := range []gpu.Backend{ref, dev} {
		got[i] = decodeSchedule(t, path, be, []int{4, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1})
	}
	for step := range got[0] {
		if e := gpu.NMSE(got[1][step], got[0][step]); e > conformance.GenTolerance {
			t.Errorf("step %d: logits NMSE %.3g", step, e)
		}
	}
	if dev.GraphLaunches() < 4 {
		t.Errorf("%d steps ran as graphs, want at least 4 of the 10 decode steps", dev.GraphLaunches())
	}
	t.Logf("%d of %d steps as graphs", dev.GraphLaunches(), len(got[0]))
}

// qwen3moe's mixture of experts (routing on the host between the
// device's matmuls: a Download of the router's logits, a Gather, the
// experts' matmuls and a Download of each expert's rows, an Upload of
// the weighted sums), on the device alone and with its second layer on
// the CPU. F32 weights, as TestGemmaOnTheEmulator. And qwen2moe's, whose
// shared expert runs beside the chosen ones behind a [rows, 1] gate.
func TestMoEOnTheEmulator(t *testing.T) {
	dev, ref, _ := emuPair(t)
	host := cpu.New(2)
	defer host.Close()
	for _, family := range []string{"qwen3moe", "qwen2moe"} {
		path := filepath.Join(t.TempDir(), family+".gguf")
		if err := synth.WriteTiny(path, family, gguf.TypeF32, 2, func(c *synth.Config) { c.Layers = 2 }); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			be   gpu.Backend
		}{{"device", dev}, {"split", place.NewSplit(dev, host, 1)}} {
			g, err := conformance.CheckGeneration(path, ref, c.be, 4)
			if err != nil {
				t.Fatal(err)
			}
			if !g.Pass() {
				t.Errorf("%s %s: %+v", family, c.name, g)
			}
			t.Logf("%s %s: worst logits NMSE %.3g, tokens %v and %v", family, c.name, g.Worst, g.Ref, g.Dev)
		}
	}
}

// gpt-oss through the device's kernels: Q/K/V/O biases, attention sinks,
// a window of 4 positions on layer 0 (shorter than the prompt of 8 and
// the 6 steps after it) with its own rope base, YaRN, routing with the
// router's and experts' biases and the clamped SwiGLU (SwiGLUOAI), the
// experts in MXFP4 and the other matrices in BF16 as gpt-oss's release;
// on the device alone and with its second layer on the CPU.
func TestGptossOnTheEmulator(t *testing.T) {
	dev, ref, _ := emuPair(t)
	host := cpu.New(2)
	defer host.Close()
	path := filepath.Join(t.TempDir(), "gpt-oss.gguf")
	if err := synth.WriteTiny(path, "gpt-oss", gguf.TypeMXFP4, 3, func(c *synth.Config) { c.Layers, c.Window = 2, 4 }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		be   gpu.Backend
	}{{"device", dev}, {"split", place.NewSplit(dev, host, 1)}} {
		g, err := conformance.CheckGeneration(path, ref, c.be, 6)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Pass() {
			t.Errorf("%s: %+v", c.name, g)
		}
		t.Logf("%s: worst logits NMSE %.3g, tokens %v and %v", c.name, g.Worst, g.Ref, g.Dev)
	}
}
