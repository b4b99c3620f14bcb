package cuda

import (
	"errors"
	"fmt"
	"log"
	"sync"

	"folio/gpu"
)

// Need is the device memory a model takes: its weights as stored, the K/V
// pool and the activations.
type Need struct {
	Weights, KV, Scratch int64
}

// Reserve is kept free beyond Need on the device: the kernels' module, the
// per-op tables, and the driver's own allocations as the model runs.
const Reserve = 512 << 20

// Total is what the model takes with the reserve.
func (n Need) Total() int64 { return n.Weights + n.KV + n.Scratch + Reserve }

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// Fit says whether a model of need fits in free bytes of device memory,
// and if not, which knob to turn. The whole model goes on one GPU or not
// at all: layers are not split between the GPU and the CPU.
func (n Need) Fit(dev Device, free int64) error {
	if n.Total() <= free {
		return nil
	}
	hint := "use a smaller quantization, or FOLIO_GPU=cpu"
	if n.KV+n.Scratch > n.Weights/4 {
		hint = "lower num_ctx or FOLIO_KV_MEMORY (the K/V cache), or num_batch (scratch); or FOLIO_GPU=cpu"
	}
	return fmt.Errorf("%w: cuda: the model needs %s on %s (weights %s, K/V cache %s, scratch %s, reserve %s) and %s is free: %s",
		gpu.ErrOutOfMemory, gib(n.Total()), dev.Name, gib(n.Weights), gib(n.KV), gib(n.Scratch), gib(Reserve), gib(free), hint)
}

// Free is the device memory free now.
func (b *Backend) Free() (int64, error) {
	b.enter()
	defer b.leave()
	free, total := new(uint64), new(uint64)
	if err := b.d.check("cuMemGetInfo", b.d.MemGetInfo(free, total)); err != nil {
		return 0, err
	}
	return int64(*free), nil
}

// Choose opens the backend FOLIO_GPU (mode) asks for, for a model of need:
//
//   - "cpu": none (nil, nil);
//   - "cuda": the first GPU, or an error saying why it cannot be used;
//   - "auto" or "": the first GPU when a driver loads and the model fits,
//     else none, with one log line (per process) saying why.
//
// The caller computes on the CPU when Choose returns no backend.
func Choose(mode string, need Need) (*Backend, error) {
	switch mode {
	case "cpu":
		return nil, nil
	case "cuda", "auto", "":
	default:
		return nil, fmt.Errorf("cuda: FOLIO_GPU=%q: use cpu, cuda or auto", mode)
	}
	b, err := openFor(need)
	if err == nil {
		return b, nil
	}
	if mode == "cuda" {
		return nil, fmt.Errorf("%w (FOLIO_GPU=cuda; unset it to fall back to the CPU)", err)
	}
	logFallback(err)
	return nil, nil
}

// openFor opens GPU 0 and checks that need fits in its free memory.
func openFor(need Need) (*Backend, error) {
	b, err := Open(Options{})
	if err != nil {
		return nil, err
	}
	free, err := b.Free()
	if err == nil {
		err = need.Fit(b.dev, free)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

var fallbackOnce sync.Once

// logFallback says once per process why the CPU computes.
func logFallback(err error) {
	fallbackOnce.Do(func() {
		if errors.Is(err, ErrNoDriver) {
			log.Printf("folio: %v; computing on the CPU", err)
			return
		}
		log.Printf("folio: not using the GPU: %v; computing on the CPU (FOLIO_GPU=cuda makes this an error)", err)
	})
}
