package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"folio/gpu"
)

// ErrNoDriver is wrapped when the NVIDIA driver cannot be loaded or has no
// device: the caller computes on the CPU instead.
var ErrNoDriver = errors.New("cuda: no NVIDIA driver")

// result is a CUresult (or nvrtcResult): 0 is success.
type result int32

// Driver API attributes and flags used here (cuda.h).
const (
	attrComputeMajor  = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeMinor  = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	attrSMCount       = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
	attrMemBusWidth   = 37 // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
	attrMemClockKHz   = 36 // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
	streamNonBlocking = 1  // CU_STREAM_NON_BLOCKING
)

// driver is the part of the CUDA driver API folio calls, as Go functions:
// the real one wraps libcuda's symbols (driver_load.go), tests put fakes in
// their place. Pointers passed in must point to heap memory (the real
// table hands them to C as addresses). Device pointers are uint64
// (CUdeviceptr); contexts, streams, modules and functions are opaque
// handles.
type driver struct {
	Init               func(flags uint32) result
	DriverGetVersion   func(v *int32) result
	DeviceGetCount     func(n *int32) result
	DeviceGet          func(dev *int32, ordinal int32) result
	DeviceGetName      func(name []byte, dev int32) result
	DeviceTotalMem     func(bytes *uint64, dev int32) result
	DeviceGetAttribute func(v *int32, attr, dev int32) result
	PrimaryCtxRetain   func(ctx *uintptr, dev int32) result
	PrimaryCtxRelease  func(dev int32) result
	CtxSetCurrent      func(ctx uintptr) result
	StreamCreate       func(s *uintptr, flags uint32) result
	StreamDestroy      func(s uintptr) result
	StreamSynchronize  func(s uintptr) result
	MemGetInfo         func(free, total *uint64) result
	MemAlloc           func(p *uint64, n uint64) result
	MemFree            func(p uint64) result
	MemcpyHtoDAsync    func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) result
	MemcpyDtoHAsync    func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) result
	MemcpyDtoDAsync    func(dst, src uint64, n uint64, s uintptr) result
	MemsetD8Async      func(dst uint64, v uint8, n uint64, s uintptr) result
	ModuleLoadData     func(m *uintptr, image []byte) result
	ModuleUnload       func(m uintptr) result
	ModuleGetFunction  func(f *uintptr, m uintptr, name string) result
	// FuncGetAttribute is cuFuncGetAttribute: one of f's funcAttr values.
	FuncGetAttribute func(v *int32, attr int32, f uintptr) result
	// LaunchKernel's params is the kernelParams array of cuLaunchKernel:
	// one pointer per kernel argument, to the argument's value.
	LaunchKernel func(f uintptr, grid, block [3]uint32, shmem uint32, s uintptr, params unsafe.Pointer) result
	// ErrorName is cuGetErrorName's string for r, "" if it has none.
	ErrorName func(r result) string

	// CUDA graphs (graph.go), nil when the driver lacks them: a graph of
	// kernel nodes, each depending on the one before.
	GraphCreate        func(g *uintptr) result
	GraphAddKernelNode func(node *uintptr, g uintptr, dep uintptr, p *kernelNodeParams) result // dep 0: none
	GraphInstantiate   func(exec *uintptr, g uintptr) result
	GraphLaunch        func(exec, s uintptr) result
	GraphExecDestroy   func(exec uintptr) result
	GraphDestroy       func(g uintptr) result
}

// kernelNodeParams is CUDA_KERNEL_NODE_PARAMS_v2 (72 bytes): the launch
// of a graph's kernel node; the driver copies the parameters' values.
type kernelNodeParams struct {
	fn          uintptr
	grid, block [3]uint32
	shmem       uint32
	params      unsafe.Pointer // void**: one pointer per kernel parameter
	extra       unsafe.Pointer
	kern        uintptr // CUkernel: 0, as fn says which
	_           uintptr // CUcontext: 0 likewise
}

// check turns a CUresult into nil or an error naming call and the code.
func (d *driver) check(call string, r result) error {
	if r == 0 {
		return nil
	}
	name := ""
	if d.ErrorName != nil {
		name = d.ErrorName(r)
	}
	if name == "" {
		name = "CUDA_ERROR_UNKNOWN_CODE"
	}
	err := &Error{Call: call, Code: int(r), Name: name}
	if r == errOutOfMemory {
		return fmt.Errorf("%w: %w", gpu.ErrOutOfMemory, err)
	}
	return err
}

// must panics with check's error: for failures inside an op, which
// gpu.Backend gives no way to return.
func (d *driver) must(call string, r result) {
	if err := d.check(call, r); err != nil {
		panic(err)
	}
}

const errOutOfMemory result = 2 // CUDA_ERROR_OUT_OF_MEMORY

// Error is a failed driver or NVRTC call.
type Error struct {
	Call string // the API function: "cuMemAlloc"
	Code int    // the CUresult or nvrtcResult
	Name string // the library's name for Code: "CUDA_ERROR_OUT_OF_MEMORY"
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
}
