package cuda

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"
)

// Tests load no cuBLAS unless they ask for the fake one.
func init() {
	openBLAS = func(uintptr, []string) (*blas, error) { return nil, errors.New("cuBLAS is not loaded in tests") }
}

// fakeGPU is a driver without a GPU: device memory is Go memory, launches
// are recorded, not run. Fail makes the named call return its code.
type fakeGPU struct {
	mem      map[uint64][]byte // allocations by base address
	launches []fakeLaunch
	htod     int // host-to-device copies
	fail     map[string]result
	modules  int
	loaded   [][]byte // images given to cuModuleLoadData
	freeMem  uint64
	sgemms   [][6]int32 // opA, opB, m, n, k, lda of each SGEMM
	// queued counts the launches and copies since the stream was last
	// synchronized; freedQueued the frees made while some were.
	queued, freedQueued int
	// maxThreads is cuFuncGetAttribute's MAX_THREADS_PER_BLOCK by kernel
	// name, 1024 for the others.
	maxThreads map[string]int32
}

type fakeLaunch struct {
	fn          uintptr
	grid, block [3]uint32
	params      []uint64 // the 8-byte slots the parameter pointers point at
}

func newFakeGPU() *fakeGPU {
	return &fakeGPU{mem: map[uint64][]byte{}, fail: map[string]result{}, freeMem: 80 << 30}
}

// bytes returns the n bytes of device memory at p.
func (f *fakeGPU) bytes(p uint64, n uint64) []byte {
	bases := make([]uint64, 0, len(f.mem))
	for b := range f.mem {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	for _, b := range bases {
		m := f.mem[b]
		if p >= b && p+n <= b+uint64(len(m)) {
			return m[p-b : p-b+n]
		}
	}
	panic(fmt.Sprintf("fake GPU: %d bytes at %#x are outside every allocation", n, p))
}

var fakeErrorNames = map[result]string{1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	100: "CUDA_ERROR_NO_DEVICE", 200: "CUDA_ERROR_INVALID_IMAGE", 500: "CUDA_ERROR_NOT_FOUND"}

func (f *fakeGPU) driver() *driver {
	fail := func(call string) result { return f.fail[call] }
	return &driver{
		Init:             func(uint32) result { return fail("cuInit") },
		DriverGetVersion: func(v *int32) result { *v = 13000; return fail("cuDriverGetVersion") },
		DeviceGetCount:   func(n *int32) result { *n = 1; return fail("cuDeviceGetCount") },
		DeviceGet:        func(d *int32, o int32) result { *d = o; return fail("cuDeviceGet") },
		DeviceGetName:    func(b []byte, _ int32) result { copy(b, "Fake H200\x00"); return fail("cuDeviceGetName") },
		DeviceTotalMem:   func(b *uint64, _ int32) result { *b = 140 << 30; return fail("cuDeviceTotalMem") },
		DeviceGetAttribute: func(v *int32, a, _ int32) result {
			*v = map[int32]int32{attrComputeMajor: 9, attrComputeMinor: 0, attrSMCount: 132,
				attrMemBusWidth: 6144, attrMemClockKHz: 3_201_000}[a]
			return fail("cuDeviceGetAttribute")
		},
		PrimaryCtxRetain:  func(c *uintptr, _ int32) result { *c = 7; return fail("cuDevicePrimaryCtxRetain") },
		PrimaryCtxRelease: func(int32) result { return 0 },
		CtxSetCurrent:     func(uintptr) result { return fail("cuCtxSetCurrent") },
		StreamCreate:      func(s *uintptr, _ uint32) result { *s = 9; return fail("cuStreamCreate") },
		StreamDestroy:     func(uintptr) result { return 0 },
		StreamSynchronize: func(uintptr) result {
			if r := fail("cuStreamSynchronize"); r != 0 {
				return r
			}
			f.queued = 0
			return 0
		},
		MemGetInfo: func(free, total *uint64) result {
			*free, *total = f.freeMem, 140<<30
			return fail("cuMemGetInfo")
		},
		MemAlloc: func(p *uint64, n uint64) result {
			if r := fail("cuMemAlloc"); r != 0 {
				return r
			}
			// Real addresses, so that the emulated kernels (emu_test.go)
			// can use them; Go's heap does not move, and mem keeps them.
			buf := make([]byte, max(n, 1))
			*p = uint64(uintptr(unsafe.Pointer(&buf[0])))
			f.mem[*p] = buf[:n]
			return 0
		},
		MemFree: func(p uint64) result {
			if _, ok := f.mem[p]; !ok {
				return 1
			}
			if f.queued > 0 {
				f.freedQueued++
			}
			delete(f.mem, p)
			return 0
		},
		MemcpyHtoDAsync: func(dst uint64, src unsafe.Pointer, n uint64, _ uintptr) result {
			f.htod++
			f.queued++
			copy(f.bytes(dst, n), unsafe.Slice((*byte)(src), n))
			return fail("cuMemcpyHtoDAsync")
		},
		MemcpyDtoHAsync: func(dst unsafe.Pointer, src uint64, n uint64, _ uintptr) result {
			f.queued++
			copy(unsafe.Slice((*byte)(dst), n), f.bytes(src, n))
			return fail("cuMemcpyDtoHAsync")
		},
		MemcpyDtoDAsync: func(dst, src, n uint64, _ uintptr) result {
			f.queued++
			copy(f.bytes(dst, n), f.bytes(src, n))
			return 0
		},
		MemsetD8Async: func(dst uint64, v uint8, n uint64, _ uintptr) result {
			f.queued++
			b := f.bytes(dst, n)
			for i := range b {
				b[i] = v
			}
			return 0
		},
		ModuleLoadData: func(m *uintptr, image []byte) result {
			f.loaded = append(f.loaded, append([]byte(nil), image...))
			if r := fail("cuModuleLoadData"); r != 0 {
				delete(f.fail, "cuModuleLoadData") // fails once
				return r
			}
			f.modules++
			*m = 11
			return 0
		},
		ModuleUnload: func(uintptr) result { return 0 },
		ModuleGetFunction: func(fn *uintptr, _ uintptr, name string) result {
			for k, n := range kernelNames {
				if n == name {
					*fn = uintptr(100 + k)
					return 0
				}
			}
			return 500
		},
		FuncGetAttribute: func(v *int32, a int32, fn uintptr) result {
			name := ""
			if k := int(fn) - 100; k >= 0 && k < len(kernelNames) {
				name = kernelNames[k]
			}
			switch a {
			case funcMaxThreads:
				*v = 1024
				if n, ok := f.maxThreads[name]; ok {
					*v = n
				}
			case funcRegisters:
				*v = 40
			case funcLocalBytes, funcSharedBytes:
				*v = 0
			default:
				return 1
			}
			return fail("cuFuncGetAttribute")
		},
		LaunchKernel: func(fn uintptr, g, b [3]uint32, _ uint32, _ uintptr, params unsafe.Pointer) result {
			l := fakeLaunch{fn: fn, grid: g, block: b}
			ptrs := (*[maxArgs]unsafe.Pointer)(params)
			for _, p := range ptrs {
				if p == nil {
					break
				}
				l.params = append(l.params, *(*uint64)(p))
			}
			f.launches = append(f.launches, l)
			f.queued++
			return fail("cuLaunchKernel")
		},
		ErrorName: func(r result) string { return fakeErrorNames[r] },
	}
}

// fakeCompiler compiles by returning a fixed image, counting calls.
type fakeCompiler struct {
	calls int
	fail  bool
	ver   [2]int
}

func (c *fakeCompiler) compiler() *compiler {
	return &compiler{
		Version: func() (int, int) { return c.ver[0], c.ver[1] },
		Compile: func(src, name string, opts []string) ([]byte, string, error) {
			c.calls++
			if c.fail {
				return nil, "folio.cu(3): error: identifier \"x\" is undefined", &Error{Call: "nvrtcCompileProgram", Code: 6, Name: "NVRTC_ERROR_COMPILATION"}
			}
			return []byte(fmt.Sprintf("cubin of %d bytes for %v", len(src), opts)), "", nil
		},
	}
}

// openFake opens a backend on a fake GPU with the kernel cache in dir.
func openFake(dir string) (*Backend, *fakeGPU, *fakeCompiler, error) {
	f, c := newFakeGPU(), &fakeCompiler{ver: [2]int{13, 0}}
	b, err := open(f.driver(), c.compiler(), Options{CacheDir: dir})
	return b, f, c, err
}

// blas is cuBLAS's SGEMM done in Go on the fake GPU's memory, by its
// definition (column-major, op T reads A[l + i·lda]).
func (f *fakeGPU) blas() *blas {
	// floats is the device memory at p holding element last, as float32s.
	floats := func(p uint64, last int) []float32 {
		raw := f.bytes(p, uint64(4*(last+1)))
		return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), last+1)
	}
	// index maps (row, col) of op(X) to X's column-major index.
	index := func(op int32, ld int32) func(r, c int) int {
		if op == blasOpT {
			return func(r, c int) int { return c + r*int(ld) }
		}
		return func(r, c int) int { return r + c*int(ld) }
	}
	return &blas{
		Sgemm: func(opA, opB, m, n, k int32, alpha *float32, a uint64, lda int32, b uint64, ldb int32, beta *float32, c uint64, ldc int32) result {
			f.sgemms = append(f.sgemms, [6]int32{opA, opB, m, n, k, lda})
			ia, ib := index(opA, lda), index(opB, ldb)
			A, B := floats(a, ia(int(m)-1, int(k)-1)), floats(b, ib(int(k)-1, int(n)-1))
			C := floats(c, int(m)-1+(int(n)-1)*int(ldc))
			for j := range int(n) {
				for i := range int(m) {
					var sum float32
					for l := range int(k) {
						sum += A[ia(i, l)] * B[ib(l, j)]
					}
					C[i+j*int(ldc)] = *alpha*sum + *beta*C[i+j*int(ldc)]
				}
			}
			return 0
		},
		Destroy: func() result { return 0 },
	}
}

// withGraphs gives d CUDA graphs that replay their nodes through
// d.LaunchKernel (whatever it is when the graph is launched).
func (f *fakeGPU) withGraphs(d *driver) *driver {
	type node struct {
		fn          uintptr
		grid, block [3]uint32
		vals        []uint64
	}
	graphs := map[uintptr][]node{}
	next := uintptr(1)
	d.GraphCreate = func(g *uintptr) result {
		*g, next = next, next+1
		graphs[*g] = nil
		return 0
	}
	d.GraphAddKernelNode = func(n *uintptr, g, dep uintptr, p *kernelNodeParams) result {
		if want := uintptr(len(graphs[g])); (dep == 0) != (want == 0) {
			return 1 // each node after the first depends on one
		}
		nd := node{fn: p.fn, grid: p.grid, block: p.block}
		for _, q := range (*[maxArgs + 1]unsafe.Pointer)(p.params) {
			if q == nil {
				break
			}
			nd.vals = append(nd.vals, *(*uint64)(q))
		}
		graphs[g] = append(graphs[g], nd)
		*n = uintptr(len(graphs[g]))
		return 0
	}
	d.GraphInstantiate = func(exec *uintptr, g uintptr) result { *exec = g; return 0 }
	d.GraphLaunch = func(exec, s uintptr) result {
		for _, nd := range graphs[exec] {
			var ptrs [maxArgs + 1]unsafe.Pointer
			vals := append([]uint64(nil), nd.vals...)
			for i := range vals {
				ptrs[i] = unsafe.Pointer(&vals[i])
			}
			if r := d.LaunchKernel(nd.fn, nd.grid, nd.block, 0, s, unsafe.Pointer(&ptrs[0])); r != 0 {
				return r
			}
		}
		return 0
	}
	d.GraphExecDestroy = func(uintptr) result { return 0 }
	d.GraphDestroy = func(g uintptr) result { delete(graphs, g); return 0 }
	return d
}
