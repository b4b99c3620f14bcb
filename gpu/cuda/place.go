package cuda

import (
	"fmt"

	"folio/gpu"
	"folio/gpu/place"
	"folio/models/gguf"
)

// native is the weight types the kernels read as stored (nativeTypes):
// Weight keeps the others as F32.
var native place.Native = func(t gguf.TensorType) bool { _, ok := nativeTypes[t]; return ok }

// NeedOf is the place.Need of the model in f on a CUDA device, with a K/V
// pool of spec and scratch bytes of activations: each tensor as Weight
// uploads it (WeightBytes), and cuBLAS's F32 copy of the largest matrix.
func NeedOf(f *gguf.File, spec gpu.KVSpec, scratch int64) place.Need {
	return place.NeedOf(f, spec, scratch, native)
}

// WeightBytes is the device memory Weight takes for a rows × cols weight
// of typ.
func WeightBytes(typ gguf.TensorType, rows, cols int) int64 {
	return native.WeightBytes(typ, rows, cols)
}

// checkKV refuses a K/V pool the kernels cannot read or write.
func checkKV(spec gpu.KVSpec) error {
	if spec.Type == gguf.TypeQ8_0 {
		return fmt.Errorf("%w: cuda: a q8_0 K/V cache runs on the CPU only for now: use f16, or FOLIO_GPU=cpu", gpu.ErrUnsupported)
	}
	if spec.SharedKV {
		return fmt.Errorf("%w: cuda: a K/V pool whose V is its K (multi-head latent attention) runs on the CPU only for now", gpu.ErrUnsupported)
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

// DeviceName is the GPU's name.
func (b *Backend) DeviceName() string { return b.dev.Name }

// Kind is CUDA for place.Choose: the GPU opt names, for the model in f
// with a K/V pool of spec and scratch bytes of activations (cuBLAS's
// scratch counted only where cuBLAS loaded).
func Kind(opt Options, f *gguf.File, spec gpu.KVSpec, scratch int64) place.Kind {
	return kind(func() (*Backend, error) { return Open(opt) }, func() place.Need { return NeedOf(f, spec, scratch) })
}

// kind is CUDA's place.Kind with open and need.
func kind(open func() (*Backend, error), need func() place.Need) place.Kind {
	return place.Kind{
		Name: "cuda",
		Open: func(bool) (place.Device, error) {
			b, err := open()
			if err != nil {
				return nil, err
			}
			return b, nil
		},
		Need: func(d place.Device) place.Need {
			n := need()
			if d.(*Backend).blas == nil {
				n.BLAS = 0
			}
			return n
		},
		CheckKV: checkKV,
	}
}
