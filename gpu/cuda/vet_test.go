//go:build linux

package cuda

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"folio/gpu"
	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/gpu/place"
	"folio/gpu/vet"
)

// emuOpener opens emulated devices for Choose; with broken, the softmax
// kernel's launches do nothing, as a kernel wrong on hardware it never met.
func emuOpener(t *testing.T, broken bool) func() (*Backend, error) {
	return func() (*Backend, error) {
		d, f := emuDriver(t)
		if broken {
			var softmax uintptr
			get, launch := d.ModuleGetFunction, d.LaunchKernel
			d.ModuleGetFunction = func(fn *uintptr, m uintptr, name string) result {
				r := get(fn, m, name)
				if name == "softmax" {
					softmax = *fn
				}
				return r
			}
			d.LaunchKernel = func(fn uintptr, g, b [3]uint32, sh uint32, st uintptr, params unsafe.Pointer) result {
				if fn == softmax {
					return 0
				}
				return launch(fn, g, b, sh, st, params)
			}
		}
		saved := openBLAS
		openBLAS = func(uintptr, []string) (*blas, error) { return f.blas(), nil }
		defer func() { openBLAS = saved }()
		return open(d, (&fakeCompiler{}).compiler(), Options{NoCache: true})
	}
}

// The first load on a device runs gpu/vet's check: a device whose kernels
// agree with the CPU takes the model (and is not checked again); one with a
// wrong kernel leaves the model on the CPU with one notice, the next load
// quietly, and is an error where FOLIO_GPU=cuda forces it.
func TestChooseVetsTheDevice(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulation takes a while")
	}
	need := place.Need{Weights: 1 << 20, LayerWeights: 1 << 19, Layers: 2}
	host := func() gpu.Backend { return cpu.New(1) }
	dir := t.TempDir()

	// A few cases: the whole subset takes minutes on the emulator.
	few := func() []conformance.Case {
		var out []conformance.Case
		for _, c := range vet.Subset(1) {
			if strings.HasPrefix(c.Op, "Softmax") || strings.HasPrefix(c.Op, "MatMul Q8_0") || strings.HasPrefix(c.Op, "RMSNorm [5") {
				out = append(out, c)
			}
		}
		return out
	}
	good := vet.New(dir, "test")
	good.Cases = few
	be, notice, err := chooseVetted("auto", need, host, emuOpener(t, false), good.Check)
	if err != nil || notice != "" {
		t.Fatalf("a sound device: %v, notice %q", err, notice)
	}
	dev, ok := be.(*Backend)
	if !ok || dev.Used() != 0 {
		t.Fatalf("%T holding %d bytes: want a fresh GPU backend, the check's tensors gone", be, dev.Used())
	}
	be.Close()
	calls := 0
	counting := func(b gpu.Backend, id string) (bool, error) { calls++; return good.Check(b, id) }
	if be, _, err = chooseVetted("auto", need, host, emuOpener(t, false), counting); err != nil || be == nil {
		t.Fatalf("the sound device again: %v", err)
	}
	be.Close()
	if calls != 1 {
		t.Errorf("vet called %d times", calls)
	}

	bad := vet.New(t.TempDir(), "test")
	bad.Cases = few
	be, notice, err = chooseVetted("auto", need, host, emuOpener(t, true), bad.Check)
	if be != nil || err != nil || !strings.Contains(notice, "first-run check") || !strings.Contains(notice, "Softmax") ||
		!strings.Contains(notice, "computing on the CPU") {
		t.Fatalf("a wrong softmax: %v, %v, notice %q; want the CPU and a notice naming the op", be, err, notice)
	}
	t.Logf("notice: %s", notice)
	if be, notice, err = chooseVetted("auto", need, host, emuOpener(t, true), bad.Check); be != nil || err != nil || notice != "" {
		t.Errorf("the wrong device again: %v, %v, notice %q; want the CPU, said once", be, err, notice)
	}
	if _, _, err = chooseVetted("cuda", need, host, emuOpener(t, true), bad.Check); !errors.Is(err, vet.ErrFailed) || !strings.Contains(err.Error(), "FOLIO_GPU=cuda") {
		t.Errorf("FOLIO_GPU=cuda on the wrong device: %v, want the check's failure as an error", err)
	}
}
