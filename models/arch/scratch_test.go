package arch_test

import (
	"path/filepath"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// countingCPU is the CPU backend, every capability kept, counting the
// activation bytes NewTensor allocates.
type countingCPU struct {
	*cpu.Backend
	bytes int64
}

func (c *countingCPU) NewTensor(rows, cols int) (gpu.Tensor, error) {
	c.bytes += 4 * int64(rows) * int64(cols)
	return c.Backend.NewTensor(rows, cols)
}

// TestScratchBytes: for every family dev synth writes, arch.ScratchBytes
// (what runner.Load counts before loading) is the activations arch.Load
// allocates, to the byte.
func TestScratchBytes(t *testing.T) {
	for _, a := range synth.Archs {
		path := filepath.Join(t.TempDir(), a+".gguf")
		if err := synth.WriteTiny(path, a, gguf.TypeF32, 1); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		be := &countingCPU{Backend: cpu.New(1)}
		opt := arch.Options{MaxRows: 64, MaxOut: 8}
		if _, err := arch.Load(f, be, opt); err != nil {
			t.Fatalf("%s: %v", a, err)
		}
		cfg, err := arch.ReadConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		if want := arch.ScratchBytes(cfg, opt); be.bytes != want {
			t.Errorf("%s: Load allocates %d bytes of activations, ScratchBytes says %d", a, be.bytes, want)
		}
		be.Close()
		f.Close()
	}
}
