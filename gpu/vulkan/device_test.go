package vulkan

import (
	"errors"
	"strings"
	"testing"

	"folio/gpu"
)

// Pick: discrete GPUs first by default, then integrated, virtual, other
// and CPU; an index or part of a name picks that device; a device without
// a compute queue is never picked.
func TestPick(t *testing.T) {
	devs := []Device{
		{Index: 0, Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Compute: true, typ: typeCPU},
		{Index: 1, Name: "Intel(R) UHD Graphics 770", Compute: true, typ: typeIntegratedGPU},
		{Index: 2, Name: "NVIDIA GeForce RTX 4090", Compute: true, typ: typeDiscreteGPU},
		{Index: 3, Name: "Display Only", Compute: false, typ: typeDiscreteGPU},
	}
	for _, c := range []struct {
		devs []Device
		sel  string
		want int
	}{
		{devs, "", 2},
		{devs[:2], "", 1},
		{devs[:1], "", 0},
		{devs, "0", 0},
		{devs, " 1 ", 1},
		{devs, "llvmpipe", 0},
		{devs, "geforce", 2},
		{devs, "3", -1},
		{devs, "radeon", -1},
		{devs[3:], "", -1},
		{nil, "", -1},
	} {
		got, err := Pick(c.devs, c.sel)
		if got != c.want {
			t.Errorf("Pick(%d devices, %q) = %d, want %d (%v)", len(c.devs), c.sel, got, c.want, err)
		}
		if (got < 0) != errors.Is(err, ErrNoDevice) {
			t.Errorf("Pick(%d devices, %q): error %v", len(c.devs), c.sel, err)
		}
	}
	_, err := Pick(devs, "radeon")
	if err == nil || !strings.Contains(err.Error(), "FOLIO_VULKAN_DEVICE") || !strings.Contains(err.Error(), "2: NVIDIA GeForce RTX 4090 (discrete GPU)") {
		t.Errorf("the error should name the setting and list the devices: %v", err)
	}
}

// A VkResult error names the call and the result; out-of-memory results
// wrap gpu.ErrOutOfMemory; statuses are not errors.
func TestCheck(t *testing.T) {
	if err := check("vkWaitForFences", 2); err != nil { // VK_TIMEOUT
		t.Errorf("a status is an error: %v", err)
	}
	err := check("vkAllocateMemory", -2)
	if err == nil || err.Error() != "gpu: out of memory: vulkan: vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY" || !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Errorf("out of device memory: %v", err)
	}
	var ve *Error
	if err := check("vkCreateDevice", -4); !errors.As(err, &ve) || ve.Call != "vkCreateDevice" || err.Error() != "vulkan: vkCreateDevice: VK_ERROR_DEVICE_LOST" {
		t.Errorf("device lost: %v", err)
	}
	if err := check("vkQueueSubmit", -1234); err == nil || err.Error() != "vulkan: vkQueueSubmit: VkResult(-1234)" {
		t.Errorf("an unknown result: %v", err)
	}
}

// Memory types: device buffers take device-local memory (host-visible
// and coherent too where memory is unified), staging takes host-visible
// coherent memory, cached where there is some.
func TestMemoryTypes(t *testing.T) {
	var discrete physicalDeviceMemoryProperties
	discrete.memoryTypeCount = 4
	discrete.memoryTypes[0].propertyFlags = memDeviceLocal
	discrete.memoryTypes[1].propertyFlags = memHostVisible | memHostCoherent
	discrete.memoryTypes[2].propertyFlags = memHostVisible | memHostCoherent | memHostCached
	discrete.memoryTypes[3].propertyFlags = memDeviceLocal | memHostVisible | memHostCoherent // a BAR
	if unifiedMemory(typeDiscreteGPU, &discrete) {
		t.Error("a discrete GPU's BAR counted as unified memory")
	}
	if i := memoryTypeIndex(&discrete, ^uint32(0), memDeviceLocal, 0); i != 0 {
		t.Errorf("device memory: type %d", i)
	}
	if i := memoryTypeIndex(&discrete, ^uint32(0), memHostVisible|memHostCoherent, memHostCached); i != 2 {
		t.Errorf("staging: type %d", i)
	}
	if i := memoryTypeIndex(&discrete, 0b0010, memHostVisible|memHostCoherent, memHostCached); i != 1 {
		t.Errorf("staging, type 2 not allowed: type %d", i)
	}
	if i := memoryTypeIndex(&discrete, 0b0001, memHostVisible, 0); i != -1 {
		t.Errorf("no allowed type: %d", i)
	}
	var lavapipe physicalDeviceMemoryProperties
	lavapipe.memoryTypeCount = 1
	lavapipe.memoryTypes[0].propertyFlags = memDeviceLocal | memHostVisible | memHostCoherent | memHostCached
	if !unifiedMemory(typeCPU, &lavapipe) {
		t.Error("lavapipe's memory is not unified")
	}
}

// A kernel's subgroup variant runs where compute shaders have subgroup
// arithmetic and the subgroup size, 4 or more, divides its workgroup.
func TestSubgroupsFit(t *testing.T) {
	for _, c := range []struct {
		size  int
		arith bool
		group int
		want  bool
	}{
		{8, true, normGroup, true}, // lavapipe with AVX2
		{8, true, matmulGroup, true},
		{4, true, matmulGroup, true}, // Mali
		{32, true, matmulGroup, true},
		{64, true, matmulGroup, true},
		{128, true, normGroup, true},
		{128, true, matmulGroup, false}, // larger than the workgroup
		{2, true, matmulGroup, false},   // more subgroup sums than the shared arrays hold
		{1, true, normGroup, false},
		{32, false, matmulGroup, false}, // no arithmetic in compute shaders
		{32, true, 0, false},            // a kernel without a variant
	} {
		dev := Device{SubgroupSize: c.size, SubgroupArithmetic: c.arith}
		if got := subgroupsFit(dev, c.group); got != c.want {
			t.Errorf("subgroupsFit(size %d, arithmetic %v, group %d) = %v, want %v", c.size, c.arith, c.group, got, c.want)
		}
	}
}

// The kernels with a workgroup size in kernelTable, and only they, have a
// subgroup variant embedded.
func TestSubgroupVariants(t *testing.T) {
	for k := range numKernels {
		_, err := spirvOf(k, true)
		if has := err == nil; has != (kernelTable[k].group > 0) {
			t.Errorf("kernel %s: subgroup variant embedded %v, workgroup size %d in kernelTable", k, has, kernelTable[k].group)
		}
	}
}
