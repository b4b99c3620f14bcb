package vulkan

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"folio/gpu"
	"folio/gpu/place"
	"folio/models/gguf"
)

// native is the weight types MatMul's kernels read as stored
// (matmulTypes).
var native place.Native = func(t gguf.TensorType) bool { _, ok := matmulTypes[t]; return ok }

// Free is the device-local memory less what the backend has allocated.
// Vulkan 1.1 reports its heaps' sizes, not what other programs hold
// (VK_EXT_memory_budget would), so on a busy GPU an allocation placement
// counted on can still fail: that error names the tensor and the knob.
func (b *Backend) Free() (int64, error) { return b.dev.MemoryBytes - b.used, nil }

// DeviceName is the device's name.
func (b *Backend) DeviceName() string { return b.dev.Name }

// Identity names the device for gpu/vet: the backend, the device, its
// Vulkan version and its driver.
func (b *Backend) Identity() string {
	return fmt.Sprintf("vulkan %s (%s) api %s driver %s", b.dev.Name, b.dev.Type, b.dev.API, b.dev.Driver)
}

// checkKV refuses a K/V pool NewKVCache or Attention would, before any
// weight is uploaded.
func checkKV(spec gpu.KVSpec) error {
	switch {
	case spec.Type != gguf.TypeF16 && spec.Type != gguf.TypeF32:
		return fmt.Errorf("%w: vulkan: a %v K/V cache runs on the CPU only for now: use f16, or FOLIO_GPU=cpu", gpu.ErrUnsupported, spec.Type)
	case spec.Type == gguf.TypeF16 && spec.HeadDim%2 != 0:
		return fmt.Errorf("%w: vulkan: an f16 K/V cache needs heads of an even number of elements, and this model's have %d", gpu.ErrUnsupported, spec.HeadDim)
	case spec.HeadDim > maxHead:
		return fmt.Errorf("%w: vulkan: attention heads of %d elements (at most %d)", gpu.ErrUnsupported, spec.HeadDim, maxHead)
	case spec.SharedKV:
		return fmt.Errorf("%w: vulkan: a K/V pool whose V is its K (multi-head latent attention) runs on the CPU only for now", gpu.ErrUnsupported)
	}
	return nil
}

// nodeGlobs are the device nodes a Vulkan driver for a GPU opens on Linux:
// Mesa's and the DRM drivers' render nodes, NVIDIA's, WSL's paravirtual
// GPU, Qualcomm's and Arm's kernel drivers.
var nodeGlobs = []string{"/dev/dri/*", "/dev/nvidia*", "/dev/dxg", "/dev/kgsl*", "/dev/mali*"}

// gpuNodes says whether a GPU's device node exists, or whether that cannot
// be told (not Linux). Without one the only Vulkan devices are the CPU
// itself (lavapipe, SwiftShader), which FOLIO_GPU=auto declines, and
// probing for them loads their compiler (~0.15 s a model load).
var gpuNodes = func() bool {
	if runtime.GOOS != "linux" {
		return true
	}
	for _, g := range nodeGlobs {
		if m, _ := filepath.Glob(g); len(m) > 0 {
			return true
		}
	}
	return false
}

// maxHead is the largest attention head the attention kernel takes.
const maxHead = 512

// Kind is Vulkan for place.Choose: the device opt names, for the model in
// f with a K/V pool of spec and scratch bytes of activations. Under
// FOLIO_GPU=auto a device that is the CPU (Mesa's lavapipe) is declined
// unless FOLIO_VULKAN_DEVICE names it: folio's CPU kernels outrun it; on a
// Linux system with no GPU device node Vulkan is not even asked.
func Kind(opt Options, f *gguf.File, spec gpu.KVSpec, scratch int64) place.Kind {
	return place.Kind{
		Name: "vulkan",
		Open: func(auto bool) (place.Device, error) {
			if auto && opt.Device == "" { // the device Open would take, looked at before it is made
				if !gpuNodes() {
					return nil, fmt.Errorf("%w: this system has no GPU device node (%s)", ErrNoDevice, strings.Join(nodeGlobs, ", "))
				}
				info, err := Probe()
				if err != nil {
					return nil, err
				}
				i, err := info.Pick("")
				if err != nil {
					return nil, err
				}
				if d := info.Devices[i]; d.typ == typeCPU {
					return nil, fmt.Errorf("%w but %s, the CPU itself (folio's CPU kernels are faster; FOLIO_GPU=vulkan uses it)", ErrNoDevice, d.Name)
				}
			}
			b, err := Open(opt)
			if err != nil {
				return nil, err
			}
			return b, nil
		},
		Need:    func(place.Device) place.Need { n := place.NeedOf(f, spec, scratch, native); n.BLAS = 0; return n },
		CheckKV: checkKV,
	}
}
