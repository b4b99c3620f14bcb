// Package place puts a model on a GPU backend: it sizes the model for a
// device (Need), chooses among the GPU backends FOLIO_GPU allows (Choose:
// CUDA, then Vulkan), runs the first-load check of a device, and splits a
// model too large for the device's memory between the device and the CPU
// (Split). The backends themselves (gpu/cuda, gpu/vulkan) say only what
// is theirs: how to open a device, which weight types their kernels read
// as stored, and which K/V pools they serve (Kind).
package place

import (
	"errors"
	"fmt"
	"strings"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
)

// Need is the device memory a model takes: its weights as the backend's
// Weight uploads them, the K/V pool, the activations and a BLAS library's
// scratch; Layers and LayerWeights say how much of it could move to the
// CPU, a layer at a time. NeedOf computes it from a model file.
type Need struct {
	Weights, KV, Scratch int64
	// BLAS is the F32 copy of the largest weight that prefill's matmuls
	// dequantize for a BLAS library (cuBLAS); 0 where none is used.
	BLAS         int64
	Layers       int   // the model's layers
	LayerWeights int64 // the weights of the layers (blk.*), part of Weights
	// KVSpec is the pool asked for: a type or head size the backend has no
	// kernel for is refused before any weight is uploaded. Zero: unchecked.
	KVSpec gpu.KVSpec
}

// Reserve is kept free beyond Need on the device: the kernels' modules or
// pipelines, the per-op tables, and the driver's own allocations (cuBLAS's
// workspace, graphs, descriptor pools) as the model runs.
const Reserve = 512 << 20

// Total is what the model takes with the reserve.
func (n Need) Total() int64 { return n.Weights + n.KV + n.Scratch + n.BLAS + Reserve }

// GiB formats n bytes in GiB for messages.
func GiB(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// Fit says whether a model of need fits whole in free bytes of the memory
// of the device named device (kind its backend: "cuda", "vulkan"), and if
// not, which knob to turn.
func (n Need) Fit(kind, device string, free int64) error {
	if n.Total() <= free {
		return nil
	}
	hint := "use a smaller quantization, or FOLIO_GPU=cpu"
	if n.KV+n.Scratch > n.Weights/4 {
		hint = "lower num_ctx or FOLIO_KV_MEMORY (the K/V cache), or num_batch (scratch); or FOLIO_GPU=cpu"
	}
	blas := ""
	if n.BLAS > 0 {
		blas = ", BLAS scratch " + GiB(n.BLAS)
	}
	return fmt.Errorf("%w: %s: the model needs %s on %s (weights %s as uploaded, K/V cache %s, scratch %s%s, reserve %s) and %s is free: %s",
		gpu.ErrOutOfMemory, kind, GiB(n.Total()), device, GiB(n.Weights), GiB(n.KV), GiB(n.Scratch), blas, GiB(Reserve), GiB(free), hint)
}

// LayersThatFit is how many layers, each with its weights and its share of
// the K/V pool, fit in free bytes beside everything that stays on the GPU
// (the weights outside the layers, scratch, BLAS scratch, the reserve); at
// most Layers.
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

// Native says which weight types a backend's kernels read as stored; it
// keeps the others (and every one-row weight: a norm, a bias) as F32.
type Native func(gguf.TensorType) bool

// UploadType is the type a backend with native keeps a weight of typ with
// rows rows in: its own for the types the kernels read, F32 for the
// others and for a one-row weight.
func (native Native) UploadType(typ gguf.TensorType, rows int) gguf.TensorType {
	if !native(typ) || rows == 1 {
		return gguf.TypeF32
	}
	return typ
}

// WeightBytes is the device memory a rows × cols weight of typ takes.
func (native Native) WeightBytes(typ gguf.TensorType, rows, cols int) int64 {
	return int64(rows) * native.UploadType(typ, rows).RowBytes(int64(cols))
}

// NeedOf is the Need of the model in f on a backend whose kernels read
// native, with a K/V pool of spec and scratch bytes of activations: each
// tensor counted as uploaded (a type the kernels do not read counts as
// F32: 5.8 times its file size for Q5_K), and BLAS as the largest matrix
// the kernels read quantized (not an F32 one, not the token embeddings of
// a model with an output matrix: Embed reads them); the caller zeroes
// BLAS where no BLAS library runs.
func NeedOf(f *gguf.File, spec gpu.KVSpec, scratch int64, native Native) Need {
	n := Need{KV: spec.Bytes(), Scratch: scratch, Layers: spec.Layers, KVSpec: spec}
	for _, t := range f.Tensors {
		rows, cols := tensorRows(&t), int(t.Shape[0])
		b := t.Bytes
		if gguf.CanDequantize(t.Type) { // else Weight refuses it, and loading fails with the reason
			b = native.WeightBytes(t.Type, rows, cols)
		}
		n.Weights += b
		if strings.HasPrefix(t.Name, "blk.") {
			n.LayerWeights += b
		}
		if typ := native.UploadType(t.Type, rows); typ != gguf.TypeF32 && !arch.LookupOnly(f, t.Name) {
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

// Device is an open GPU backend a model can be placed on.
type Device interface {
	gpu.Backend
	// Free is the device memory free now.
	Free() (int64, error)
	// Used is the device memory the backend has allocated.
	Used() int64
	// Identity names the device, its driver and the backend: the key of
	// gpu/vet's verdicts.
	Identity() string
	// DeviceName is the device's name, for messages.
	DeviceName() string
}

// Kind is a GPU backend Choose can open: CUDA or Vulkan.
type Kind struct {
	// Name is FOLIO_GPU's value that forces it: "cuda", "vulkan".
	Name string
	// Open opens its device; auto says FOLIO_GPU=auto asked, where a kind
	// may decline a device it opens when forced (a CPU-emulated one).
	Open func(auto bool) (Device, error)
	// Need is the model's need on the open device.
	Need func(Device) Need
	// CheckKV refuses a K/V pool the kernels cannot read or write (nil:
	// any).
	CheckKV func(gpu.KVSpec) error
}

// Vet is the first-load check of a device (gpu/vet's Checker.Check):
// quiet says a failure was reported already.
type Vet func(dev gpu.Backend, identity string) (quiet bool, err error)

// Modes are FOLIO_GPU's values for kinds: cpu, auto and each kind's name.
func Modes(kinds []Kind) string {
	names := []string{"cpu", "auto"}
	for _, k := range kinds {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// Choose opens the backend mode (FOLIO_GPU) asks for, among kinds, for the
// model whose Need each kind computes:
//
//   - "cpu": none;
//   - a kind's name: that kind's device, or an error saying why it cannot
//     be used;
//   - "auto" or "": the first kind, in the order given, whose device opens
//     and takes the model; none, with a notice saying why each could not,
//     when none does.
//
// A device is checked (vet) before the model goes on it; one that fails is
// not used. A model that does not fit whole is split (Split): as many
// layers as fit on the device, the rest on host(), with a notice saying
// so; with no layer fitting, it is an error for a forced kind and the next
// kind (at last the CPU) for "auto". A device that opens but whose kernels
// cannot serve the K/V pool asked for is an error whatever the mode: F16
// would load. The caller computes on the CPU when Choose returns no
// backend, and logs the notice ("" when there is nothing to say) where it
// logs the load.
func Choose(mode string, kinds []Kind, host func() gpu.Backend, vet Vet) (gpu.Backend, string, error) {
	try := kinds
	switch mode {
	case "cpu":
		return nil, "", nil
	case "auto", "":
	default:
		try = nil
		for _, k := range kinds {
			if k.Name == mode {
				try = []Kind{k}
			}
		}
		if try == nil {
			return nil, "", fmt.Errorf("place: FOLIO_GPU=%q: use %s", mode, Modes(kinds))
		}
	}
	forced := mode != "auto" && mode != ""
	var why []string
	for _, k := range try {
		be, notice, quiet, err := k.choose(!forced, host, vet)
		switch {
		case err == nil:
			return be, notice, nil
		case errors.As(err, new(kvRefused)):
			return nil, "", err.(kvRefused).error
		case forced:
			return nil, "", fmt.Errorf("%w (FOLIO_GPU=%s; unset it to fall back to the CPU)", err, k.Name)
		case !quiet: // a failed check is said once, when it fails
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 {
		return nil, "", nil
	}
	return nil, strings.Join(why, "; ") + "; computing on the CPU", nil
}

// kvRefused is a K/V pool refused by a device that opened.
type kvRefused struct{ error }

// choose opens k's device, checks it and places the model on it.
func (k Kind) choose(auto bool, host func() gpu.Backend, vet Vet) (gpu.Backend, string, bool, error) {
	d, err := k.Open(auto)
	if err != nil {
		return nil, "", false, err
	}
	need := k.Need(d)
	if k.CheckKV != nil && need.KVSpec != (gpu.KVSpec{}) {
		if err := k.CheckKV(need.KVSpec); err != nil { // the GPU is there: refused, whatever the mode
			d.Close()
			return nil, "", false, kvRefused{err}
		}
	}
	if vet != nil {
		used := d.Used()
		quiet, err := vet(d, d.Identity())
		if err != nil {
			d.Close()
			return nil, "", quiet, err
		}
		if d.Used() != used { // a check ran and left its tensors: the model gets a fresh device
			d.Close()
			if d, err = k.Open(auto); err != nil {
				return nil, "", false, err
			}
		}
	}
	be, notice, err := fit(k.Name, d, need, host)
	if err != nil {
		d.Close()
		return nil, "", false, err
	}
	return be, notice, false, nil
}

// fit puts the model on d whole, or split with host (saying so in the
// notice), or says why not.
func fit(kind string, d Device, need Need, host func() gpu.Backend) (gpu.Backend, string, error) {
	free, err := d.Free()
	if err != nil {
		return nil, "", err
	}
	whole := need.Fit(kind, d.DeviceName(), free)
	if whole == nil {
		return d, "", nil
	}
	k := need.LayersThatFit(free)
	if k == 0 || host == nil {
		return nil, "", whole
	}
	notice := fmt.Sprintf("%d of %d layers on %s (%s free), the rest on the CPU: the model needs %s on the GPU whole",
		k, need.Layers, d.DeviceName(), GiB(free), GiB(need.Total()))
	return NewSplit(d, host(), k), notice, nil
}
