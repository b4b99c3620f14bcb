package vulkan

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"folio/gpu"
)

var (
	// ErrNoLoader is wrapped when libvulkan.so.1 (the Vulkan loader) cannot
	// be opened: folio computes on the CPU instead.
	ErrNoLoader = errors.New("vulkan: no Vulkan loader")
	// ErrNoDevice is wrapped when the loader works but finds no device
	// that folio can use (none, or none with a compute queue).
	ErrNoDevice = errors.New("vulkan: no Vulkan device")
)

// result is a VkResult: 0 is success, positive values are statuses
// (VK_TIMEOUT, VK_INCOMPLETE), negative ones errors.
type result int32

// resultNames are vulkan_core.h's names of the VkResults a call can
// return.
var resultNames = map[result]string{
	0: "VK_SUCCESS", 1: "VK_NOT_READY", 2: "VK_TIMEOUT", 3: "VK_EVENT_SET", 4: "VK_EVENT_RESET", 5: "VK_INCOMPLETE",
	-1: "VK_ERROR_OUT_OF_HOST_MEMORY", -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY", -3: "VK_ERROR_INITIALIZATION_FAILED",
	-4: "VK_ERROR_DEVICE_LOST", -5: "VK_ERROR_MEMORY_MAP_FAILED", -6: "VK_ERROR_LAYER_NOT_PRESENT",
	-7: "VK_ERROR_EXTENSION_NOT_PRESENT", -8: "VK_ERROR_FEATURE_NOT_PRESENT", -9: "VK_ERROR_INCOMPATIBLE_DRIVER",
	-10: "VK_ERROR_TOO_MANY_OBJECTS", -11: "VK_ERROR_FORMAT_NOT_SUPPORTED", -12: "VK_ERROR_FRAGMENTED_POOL",
	-13: "VK_ERROR_UNKNOWN", -1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY", -1000072003: "VK_ERROR_INVALID_EXTERNAL_HANDLE",
	-1000161000: "VK_ERROR_FRAGMENTATION", -1000257000: "VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS",
	-1000012000: "VK_ERROR_INVALID_SHADER_NV",
}

func (r result) String() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// Error is a Vulkan call that returned an error code.
type Error struct {
	Call   string // the API function: "vkAllocateMemory"
	Result int32  // the VkResult
}

func (e *Error) Error() string {
	return fmt.Sprintf("vulkan: %s: %v", e.Call, result(e.Result))
}

// check turns a VkResult into nil (success or a status) or an Error
// naming call; out-of-memory results also wrap gpu.ErrOutOfMemory.
func check(call string, r result) error {
	if r >= 0 {
		return nil
	}
	err := &Error{Call: call, Result: int32(r)}
	if r == -1 || r == -2 {
		return fmt.Errorf("%w: %w", gpu.ErrOutOfMemory, err)
	}
	return err
}

// must panics with check's error: for failures inside an op, which
// gpu.Backend gives no way to return.
func must(call string, r result) {
	if err := check(call, r); err != nil {
		panic(err)
	}
}

// lib is the Vulkan loader's entry points folio calls: every one is
// exported by libvulkan.so.1 for Vulkan 1.0 and 1.1 (vkGetPhysicalDevice
// Properties2 is 1.1, which Open asks for).
type lib struct {
	createInstance, destroyInstance, enumeratePhysicalDevices, getPhysicalDeviceProperties,
	getPhysicalDeviceProperties2, getPhysicalDeviceQueueFamilyProperties, getPhysicalDeviceMemoryProperties,
	enumerateInstanceVersion, createDevice, destroyDevice, getDeviceQueue, deviceWaitIdle,
	allocateMemory, freeMemory, mapMemory, unmapMemory,
	createBuffer, destroyBuffer, getBufferMemoryRequirements, bindBufferMemory,
	createDescriptorSetLayout, destroyDescriptorSetLayout, createDescriptorPool, destroyDescriptorPool,
	resetDescriptorPool, allocateDescriptorSets, updateDescriptorSets,
	createShaderModule, destroyShaderModule, createPipelineLayout, destroyPipelineLayout,
	createComputePipelines, destroyPipeline,
	createCommandPool, destroyCommandPool, resetCommandPool, allocateCommandBuffers,
	beginCommandBuffer, endCommandBuffer, cmdBindPipeline, cmdBindDescriptorSets, cmdPushConstants,
	cmdDispatch, cmdPipelineBarrier, cmdCopyBuffer, cmdFillBuffer,
	queueSubmit, createFence, destroyFence, waitForFences, resetFences uintptr
}

// symbols maps each entry point's C name to its field.
func (l *lib) symbols() map[string]*uintptr {
	return map[string]*uintptr{
		"vkCreateInstance": &l.createInstance, "vkDestroyInstance": &l.destroyInstance,
		"vkEnumeratePhysicalDevices": &l.enumeratePhysicalDevices, "vkGetPhysicalDeviceProperties": &l.getPhysicalDeviceProperties,
		"vkGetPhysicalDeviceProperties2":           &l.getPhysicalDeviceProperties2,
		"vkGetPhysicalDeviceQueueFamilyProperties": &l.getPhysicalDeviceQueueFamilyProperties,
		"vkGetPhysicalDeviceMemoryProperties":      &l.getPhysicalDeviceMemoryProperties,
		"vkEnumerateInstanceVersion":               &l.enumerateInstanceVersion,
		"vkCreateDevice":                           &l.createDevice, "vkDestroyDevice": &l.destroyDevice,
		"vkGetDeviceQueue": &l.getDeviceQueue, "vkDeviceWaitIdle": &l.deviceWaitIdle,
		"vkAllocateMemory": &l.allocateMemory, "vkFreeMemory": &l.freeMemory, "vkMapMemory": &l.mapMemory,
		"vkUnmapMemory": &l.unmapMemory, "vkCreateBuffer": &l.createBuffer, "vkDestroyBuffer": &l.destroyBuffer,
		"vkGetBufferMemoryRequirements": &l.getBufferMemoryRequirements, "vkBindBufferMemory": &l.bindBufferMemory,
		"vkCreateDescriptorSetLayout": &l.createDescriptorSetLayout, "vkDestroyDescriptorSetLayout": &l.destroyDescriptorSetLayout,
		"vkCreateDescriptorPool": &l.createDescriptorPool, "vkDestroyDescriptorPool": &l.destroyDescriptorPool,
		"vkResetDescriptorPool": &l.resetDescriptorPool, "vkAllocateDescriptorSets": &l.allocateDescriptorSets,
		"vkUpdateDescriptorSets": &l.updateDescriptorSets, "vkCreateShaderModule": &l.createShaderModule,
		"vkDestroyShaderModule": &l.destroyShaderModule, "vkCreatePipelineLayout": &l.createPipelineLayout,
		"vkDestroyPipelineLayout": &l.destroyPipelineLayout, "vkCreateComputePipelines": &l.createComputePipelines,
		"vkDestroyPipeline": &l.destroyPipeline, "vkCreateCommandPool": &l.createCommandPool,
		"vkDestroyCommandPool": &l.destroyCommandPool, "vkResetCommandPool": &l.resetCommandPool,
		"vkAllocateCommandBuffers": &l.allocateCommandBuffers, "vkBeginCommandBuffer": &l.beginCommandBuffer,
		"vkEndCommandBuffer": &l.endCommandBuffer, "vkCmdBindPipeline": &l.cmdBindPipeline,
		"vkCmdBindDescriptorSets": &l.cmdBindDescriptorSets, "vkCmdPushConstants": &l.cmdPushConstants,
		"vkCmdDispatch": &l.cmdDispatch, "vkCmdPipelineBarrier": &l.cmdPipelineBarrier,
		"vkCmdCopyBuffer": &l.cmdCopyBuffer, "vkCmdFillBuffer": &l.cmdFillBuffer,
		"vkQueueSubmit": &l.queueSubmit, "vkCreateFence": &l.createFence, "vkDestroyFence": &l.destroyFence,
		"vkWaitForFences": &l.waitForFences, "vkResetFences": &l.resetFences,
	}
}

// call calls the C function fn with args, values or addresses of pinned
// memory (pins), and returns its VkResult.
func call(fn uintptr, args ...uintptr) result {
	return result(int32(callRaw(fn, args...)))
}

// pins keeps the Go memory a Vulkan call reads or writes in place until
// Unpin: the structs passed, and everything their pointer fields point to.
type pins struct{ p runtime.Pinner }

// ptr pins v and returns its address for a struct field.
func ptr[T any](ps *pins, v *T) unsafe.Pointer {
	ps.p.Pin(v)
	return unsafe.Pointer(v)
}

// arg pins v and returns its address as a call argument.
func arg[T any](ps *pins, v *T) uintptr { return uintptr(ptr(ps, v)) }

// slicePtr pins s's array and returns its address, nil for an empty s.
func slicePtr[T any](ps *pins, s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return ptr(ps, &s[0])
}

// cString pins s, NUL-terminated, and returns its address.
func cString(ps *pins, s string) unsafe.Pointer {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return slicePtr(ps, b)
}

func (ps *pins) unpin() { ps.p.Unpin() }
