package cuda

import (
	"fmt"
	"log"
	"sync"

	"folio/gpu"
)

// Need is the device memory a model takes: its weights as stored, the K/V
// pool and the activations; Layers and LayerWeights say how much of it
// could move to the CPU, a layer at a time.
type Need struct {
	Weights, KV, Scratch int64
	Layers               int   // the model's layers
	LayerWeights         int64 // the weights of the layers (blk.*), part of Weights
}

// Reserve is kept free beyond Need on the device: the kernels' module, the
// per-op tables, and the driver's own allocations as the model runs.
const Reserve = 512 << 20

// Total is what the model takes with the reserve.
func (n Need) Total() int64 { return n.Weights + n.KV + n.Scratch + Reserve }

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// Fit says whether a model of need fits whole in free bytes of device
// memory, and if not, which knob to turn.
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

// LayersThatFit is how many layers, each with its weights and its share of
// the K/V pool, fit in free bytes beside everything that stays on the GPU
// (the weights outside the layers, scratch, the reserve); at most Layers.
func (n Need) LayersThatFit(free int64) int {
	if n.Layers <= 0 {
		return 0
	}
	perLayer := (n.LayerWeights + n.KV + int64(n.Layers) - 1) / int64(n.Layers)
	avail := free - Reserve - n.Scratch - (n.Weights - n.LayerWeights)
	if avail <= 0 || perLayer <= 0 {
		return 0
	}
	return int(min(int64(n.Layers), avail/perLayer))
}

// Free is the device memory free now.
func (b *Backend) Free() (int64, error) {
	b.enter()
	defer b.leave()
	b.graphBreak()
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
//   - "auto" or "": the first GPU when a driver loads, else none, with one
//     log line (per process) saying why.
//
// A model that does not fit whole is split (Split): as many layers as fit
// on the GPU, the rest on host(), said once in the log; with no layer
// fitting, it is an error for "cuda" and the CPU for "auto". The caller
// computes on the CPU when Choose returns no backend.
func Choose(mode string, need Need, host func() gpu.Backend) (gpu.Backend, error) {
	return choose(mode, need, host, func() (*Backend, error) { return Open(Options{}) })
}

func choose(mode string, need Need, host func() gpu.Backend, open func() (*Backend, error)) (gpu.Backend, error) {
	switch mode {
	case "cpu":
		return nil, nil
	case "cuda", "auto", "":
	default:
		return nil, fmt.Errorf("cuda: FOLIO_GPU=%q: use cpu, cuda or auto", mode)
	}
	b, err := open()
	if err == nil {
		var be gpu.Backend
		if be, err = place(b, need, host); err == nil {
			return be, nil
		}
		b.Close()
	}
	if mode == "cuda" {
		return nil, fmt.Errorf("%w (FOLIO_GPU=cuda; unset it to fall back to the CPU)", err)
	}
	logOnce(&fallbackOnce, "folio: %v; computing on the CPU", err)
	return nil, nil
}

// place puts the model on b whole, or split with host, or says why not.
func place(b *Backend, need Need, host func() gpu.Backend) (gpu.Backend, error) {
	free, err := b.Free()
	if err != nil {
		return nil, err
	}
	fit := need.Fit(b.dev, free)
	if fit == nil {
		return b, nil
	}
	k := need.LayersThatFit(free)
	if k == 0 || host == nil {
		return nil, fit
	}
	logOnce(&splitOnce, "folio: %d of %d layers on %s (%s free), the rest on the CPU: the model needs %s on the GPU whole",
		k, need.Layers, b.dev.Name, gib(free), gib(need.Total()))
	return NewSplit(b, host(), k), nil
}

var fallbackOnce, splitOnce sync.Once

// logOnce logs once per process per once.
func logOnce(once *sync.Once, format string, args ...any) {
	once.Do(func() { log.Printf(format, args...) })
}
