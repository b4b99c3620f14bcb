package cuda

import (
	"errors"
	"testing"

	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/models/gguf"
)

// On a machine with an NVIDIA GPU: every op against the CPU, both matmul
// paths, and greedy generations (qwen3; gemma2 and gemma3 for the newer
// families' kernels and sliding windows). Skipped without a driver or a
// device.
func TestOnTheGPU(t *testing.T) {
	dev, err := Open(Options{Sync: true, CacheDir: t.TempDir()})
	if errors.Is(err, ErrNoDriver) {
		t.Skip("no NVIDIA GPU:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ref := cpu.NewReference(0)
	defer ref.Close()
	t.Logf("%s: %s", dev.Device().Name, dev.BLAS())
	checks := conformance.CheckOps(ref, dev, 9)
	dev.SetBLAS(false)
	checks = append(checks, conformance.CheckMatMuls(ref, dev, 10)...)
	dev.SetBLAS(true)
	for _, r := range checks {
		if !r.Pass() {
			t.Errorf("%-60s NMSE %.3g (tolerance %.0e) %s", r.Op, r.NMSE, r.Tol, r.Err)
		}
	}
	g, err := conformance.CheckGeneration(synthModel(t, "qwen3", gguf.TypeQ4_K, 2), ref, dev, 8)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Pass() {
		t.Errorf("generation: %+v", g)
	}
	for _, arch := range []string{"gemma2", "gemma3"} {
		g, err := conformance.CheckGeneration(gemmaModel(t, arch), ref, dev, 6)
		if err != nil {
			t.Fatal(err)
		}
		if !g.Pass() {
			t.Errorf("%s generation: %+v", arch, g)
		}
	}
}
