package vulkan

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/gpu/place"
	"folio/gpu/vet"
	"folio/models/gguf"
	"folio/models/synth"
)

// kindFor is Kind for a tiny llama file with an F16 pool of 4 blocks.
func kindFor(t *testing.T, opt Options) place.Kind {
	t.Helper()
	open(t, opt).Close() // skips without a device
	path := filepath.Join(t.TempDir(), "llama.gguf")
	if err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 1); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	spec := gpu.KVSpec{Layers: 2, Blocks: 4, BlockSize: 16, KVHeads: 2, HeadDim: 16, Type: gguf.TypeF16}
	return Kind(opt, f, spec, 1<<20)
}

func host() gpu.Backend { return cpu.New(1) }

// FOLIO_GPU=auto declines a Vulkan device that is the CPU (lavapipe here)
// unless FOLIO_VULKAN_DEVICE names it, and does not look for one on a
// system without GPU device nodes; FOLIO_GPU=vulkan takes it. The
// model's need counts no BLAS scratch and the device's memory as free.
func TestKindOnTheCPUDevice(t *testing.T) {
	k := kindFor(t, Options{})
	if b := open(t, Options{}); b.dev.typ != typeCPU {
		t.Skipf("%s is not a CPU device", b.dev.Name)
	}
	for _, nodes := range []bool{false, true} {
		was := gpuNodes
		gpuNodes = func() bool { return nodes }
		be, notice, err := place.Choose("auto", []place.Kind{k}, host, nil)
		gpuNodes = was
		want := "the CPU itself"
		if !nodes {
			want = "no GPU device node (/dev/dri/*, /dev/nvidia*"
		}
		if be != nil || err != nil || !strings.Contains(notice, want) || nodes && !strings.Contains(notice, "FOLIO_GPU=vulkan") {
			t.Errorf("auto, device nodes %v: %v, %v, notice %q; want the CPU, saying why (%q)", nodes, be, err, notice, want)
		}
	}
	for _, c := range []struct {
		mode string
		opt  Options
	}{{"vulkan", Options{}}, {"auto", Options{Device: "llvmpipe"}}} {
		be, notice, err := place.Choose(c.mode, []place.Kind{kindFor(t, c.opt)}, host, nil)
		b, ok := be.(*Backend)
		if err != nil || notice != "" || !ok {
			t.Fatalf("%s %+v: %T, %v, %q; want the Vulkan device", c.mode, c.opt, be, err, notice)
		}
		if free, _ := b.Free(); free != b.dev.MemoryBytes || !strings.HasPrefix(b.Identity(), "vulkan "+b.dev.Name) {
			t.Errorf("free %d of %d, identity %q", free, b.dev.MemoryBytes, b.Identity())
		}
		b.Close()
	}
	spec := gpu.KVSpec{Layers: 2, Blocks: 4, BlockSize: 16, KVHeads: 2, HeadDim: 16, Type: gguf.TypeQ8_0}
	if err := k.CheckKV(spec); !errors.Is(err, gpu.ErrUnsupported) {
		t.Errorf("a q8_0 pool: %v", err)
	}
}

// brokenSoftmax is the Vulkan backend with a softmax that leaves its input
// as it was: a kernel wrong on a device folio has not met.
type brokenSoftmax struct{ *Backend }

func (brokenSoftmax) Softmax(gpu.Tensor) {}

// A device whose kernel gives a wrong result fails the first-load check:
// the model goes to the CPU with one notice naming the op (the next load
// quietly), and FOLIO_GPU=vulkan makes it an error. The sound device takes
// the model, fresh (the check's tensors freed).
func TestKindVetsTheDevice(t *testing.T) {
	opt := Options{Device: "0"}
	k := kindFor(t, opt)
	few := func() []conformance.Case {
		var out []conformance.Case
		for _, c := range vet.Subset(1) {
			if strings.HasPrefix(c.Op, "Softmax") || strings.HasPrefix(c.Op, "MatMul Q8_0") || strings.HasPrefix(c.Op, "RMSNorm") {
				out = append(out, c)
			}
		}
		return out
	}
	good := vet.New(t.TempDir(), "test")
	good.Cases = few
	be, notice, err := place.Choose("auto", []place.Kind{k}, host, good.Check)
	if b, ok := be.(*Backend); err != nil || notice != "" || !ok || b.Used() != 0 {
		t.Fatalf("a sound device: %T, %v, notice %q; want a fresh Vulkan backend", be, err, notice)
	}
	be.Close()

	broken := k
	broken.Open = func(auto bool) (place.Device, error) {
		d, err := k.Open(auto)
		if err != nil {
			return nil, err
		}
		return brokenSoftmax{d.(*Backend)}, nil
	}
	bad := vet.New(t.TempDir(), "test")
	bad.Cases = few
	be, notice, err = place.Choose("auto", []place.Kind{broken}, host, bad.Check)
	if be != nil || err != nil || !strings.Contains(notice, "Softmax") || !strings.Contains(notice, "computing on the CPU") {
		t.Fatalf("a wrong softmax: %v, %v, notice %q; want the CPU and a notice naming the op", be, err, notice)
	}
	t.Logf("notice: %s", notice)
	if be, notice, err = place.Choose("auto", []place.Kind{broken}, host, bad.Check); be != nil || err != nil || notice != "" {
		t.Errorf("the wrong device again: %v, %v, notice %q; want the CPU, said once", be, err, notice)
	}
	if _, _, err = place.Choose("vulkan", []place.Kind{broken}, host, bad.Check); !errors.Is(err, vet.ErrFailed) || !strings.Contains(err.Error(), "FOLIO_GPU=vulkan") {
		t.Errorf("FOLIO_GPU=vulkan on the wrong device: %v, want the check's failure as an error", err)
	}
}
