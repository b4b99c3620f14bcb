package cuda

import (
	"fmt"
	"strings"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
)

// Need is the device memory a model takes: its weights as Weight uploads
// them, the K/V pool, the activations and cuBLAS's scratch; Layers and
// LayerWeights say how much of it could move to the CPU, a layer at a
// time. NeedOf computes it from a model file.
type Need struct {
	Weights, KV, Scratch int64
	// BLAS is the F32 copy of the largest weight prefill's matmuls
	// dequantize for cuBLAS (matmulBLAS); place counts none without cuBLAS.
	BLAS         int64
	Layers       int   // the model's layers
	LayerWeights int64 // the weights of the layers (blk.*), part of Weights
	// KVSpec is the pool asked for: a type or head size the GPU has no
	// kernel for is refused before any weight is uploaded. Zero: unchecked.
	KVSpec gpu.KVSpec
}

// Reserve is kept free beyond Need on the device: the kernels' module, the
// per-op tables, and the driver's own allocations (cuBLAS's workspace,
// graphs) as the model runs.
const Reserve = 512 << 20

// Total is what the model takes with the reserve.
func (n Need) Total() int64 { return n.Weights + n.KV + n.Scratch + n.BLAS + Reserve }

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
	return fmt.Errorf("%w: cuda: the model needs %s on %s (weights %s as uploaded, K/V cache %s, scratch %s, cuBLAS scratch %s, reserve %s) and %s is free: %s",
		gpu.ErrOutOfMemory, gib(n.Total()), dev.Name, gib(n.Weights), gib(n.KV), gib(n.Scratch), gib(n.BLAS), gib(Reserve), gib(free), hint)
}

// LayersThatFit is how many layers, each with its weights and its share of
// the K/V pool, fit in free bytes beside everything that stays on the GPU
// (the weights outside the layers, scratch, cuBLAS's scratch, the
// reserve); at most Layers.
func (n Need) LayersThatFit(free int64) int {
	if n.Layers <= 0 {
		return 0
	}
	perLayer := (n.LayerWeights + n.KV + int64(n.Layers) - 1) / int64(n.Layers)
	avail := free - Reserve - n.Scratch - n.BLAS - (n.Weights - n.LayerWeights)
	if avail <= 0 || perLayer <= 0 {
		return 0
	}
	return int(min(int64(n.Layers), avail/perLayer))
}

// NeedOf is the Need of the model in f with a K/V pool of spec and scratch
// bytes of activations: each tensor counted as Weight uploads it
// (WeightBytes), so a type the kernels do not read counts as F32 (5.8
// times its file size for Q5_K).
func NeedOf(f *gguf.File, spec gpu.KVSpec, scratch int64) Need {
	n := Need{KV: spec.Bytes(), Scratch: scratch, Layers: spec.Layers, KVSpec: spec}
	for _, t := range f.Tensors {
		rows, cols := tensorRows(&t), int(t.Shape[0])
		b := t.Bytes
		if gguf.CanDequantize(t.Type) { // else Weight refuses it, and loading fails with the reason
			b = WeightBytes(t.Type, rows, cols)
		}
		n.Weights += b
		if strings.HasPrefix(t.Name, "blk.") {
			n.LayerWeights += b
		}
		if typ := uploadType(t.Type, rows); typ != gguf.TypeF32 && !arch.LookupOnly(f, t.Name) {
			n.BLAS = max(n.BLAS, 4*int64(rows)*int64(cols))
		}
	}
	return n
}

// tensorRows is the rows of a GGUF tensor: every dimension past the first.
func tensorRows(t *gguf.TensorInfo) int {
	rows := 1
	for _, d := range t.Shape[1:] {
		rows *= int(d)
	}
	return rows
}

// uploadType is the type Weight keeps a weight of typ with rows rows in:
// its own for the types the kernels read, F32 for the others and for a
// one-row weight (a norm or a bias).
func uploadType(typ gguf.TensorType, rows int) gguf.TensorType {
	if _, native := nativeTypes[typ]; !native || rows == 1 {
		return gguf.TypeF32
	}
	return typ
}

// WeightBytes is the device memory Weight takes for a rows × cols weight
// of typ.
func WeightBytes(typ gguf.TensorType, rows, cols int) int64 {
	return int64(rows) * uploadType(typ, rows).RowBytes(int64(cols))
}

// checkKV refuses a K/V pool the kernels cannot read or write.
func checkKV(spec gpu.KVSpec) error {
	if spec.Type == gguf.TypeQ8_0 {
		return fmt.Errorf("%w: cuda: a q8_0 K/V cache runs on the CPU only for now: use f16, or FOLIO_GPU=cpu", gpu.ErrUnsupported)
	}
	if spec.HeadDim > attMaxHead {
		return fmt.Errorf("%w: cuda: attention heads of %d elements (at most %d)", gpu.ErrUnsupported, spec.HeadDim, attMaxHead)
	}
	return nil
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

// Choose opens the backend mode (FOLIO_GPU: cpu, cuda or auto) asks for,
// with opt, for a model of need:
//
//   - "cpu": none;
//   - "cuda": the first GPU, or an error saying why it cannot be used;
//   - "auto" or "": the first GPU when a driver loads, else none, with a
//     notice saying why.
//
// A model that does not fit whole is split (Split): as many layers as fit
// on the GPU, the rest on host(), with a notice saying so; with no layer
// fitting, it is an error for "cuda" and the CPU for "auto". The caller
// computes on the CPU when Choose returns no backend, and logs the notice
// ("" when there is nothing to say) where it logs the load.
func Choose(mode string, opt Options, need Need, host func() gpu.Backend) (gpu.Backend, string, error) {
	return chooseVetted(mode, need, host, func() (*Backend, error) { return Open(opt) }, opt.Vet)
}

func choose(mode string, need Need, host func() gpu.Backend, open func() (*Backend, error)) (gpu.Backend, string, error) {
	return chooseVetted(mode, need, host, open, nil)
}

func chooseVetted(mode string, need Need, host func() gpu.Backend, open func() (*Backend, error),
	vet func(gpu.Backend, string) (bool, error)) (gpu.Backend, string, error) {
	switch mode {
	case "cpu":
		return nil, "", nil
	case "cuda", "auto", "":
	default:
		return nil, "", fmt.Errorf("cuda: FOLIO_GPU=%q: use cpu, cuda or auto", mode)
	}
	b, err := open()
	if err == nil && need.KVSpec != (gpu.KVSpec{}) {
		if kerr := checkKV(need.KVSpec); kerr != nil { // the GPU is there: refused, whatever the mode
			b.Close()
			return nil, "", kerr
		}
	}
	quiet := false
	if err == nil && vet != nil {
		used := b.Used()
		if quiet, err = vet(b, b.Identity()); err != nil {
			b.Close()
		} else if b.Used() != used { // a check ran and left its tensors: the model gets a fresh context
			b.Close()
			b, err = open()
		}
	}
	if err == nil {
		be, notice, perr := place(b, need, host)
		if perr == nil {
			return be, notice, nil
		}
		b.Close()
		err = perr
	}
	if mode == "cuda" {
		return nil, "", fmt.Errorf("%w (FOLIO_GPU=cuda; unset it to fall back to the CPU)", err)
	}
	if quiet {
		return nil, "", nil // said once, when the check failed
	}
	return nil, fmt.Sprintf("%v; computing on the CPU", err), nil
}

// place puts the model on b whole, or split with host (saying so in the
// notice), or says why not.
func place(b *Backend, need Need, host func() gpu.Backend) (gpu.Backend, string, error) {
	if b.blas == nil {
		need.BLAS = 0
	}
	free, err := b.Free()
	if err != nil {
		return nil, "", err
	}
	fit := need.Fit(b.dev, free)
	if fit == nil {
		return b, "", nil
	}
	k := need.LayersThatFit(free)
	if k == 0 || host == nil {
		return nil, "", fit
	}
	notice := fmt.Sprintf("%d of %d layers on %s (%s free), the rest on the CPU: the model needs %s on the GPU whole",
		k, need.Layers, b.dev.Name, gib(free), gib(need.Total()))
	return NewSplit(b, host(), k), notice, nil
}
