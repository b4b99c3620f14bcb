//go:build linux || darwin

package cuda

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// dlopenFirst opens the first library of names that loads (a bare name
// goes through the loader's search path, a pattern with * is globbed) and
// returns every attempt, in order; the error says why none loaded.
func dlopenFirst(what string, names []string) (uintptr, []dlAttempt, error) {
	var tried []dlAttempt
	for _, n := range names {
		paths := []string{n}
		if strings.Contains(n, "*") {
			paths, _ = filepath.Glob(n)
			if len(paths) == 0 {
				tried = append(tried, dlAttempt{n, "no file matches"})
			}
		}
		for _, p := range paths {
			h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
			if err == nil {
				return h, append(tried, dlAttempt{Path: p}), nil
			}
			tried = append(tried, dlAttempt{p, err.Error()})
		}
	}
	return 0, tried, fmt.Errorf("%s: %s", what, dlSummary(tried))
}

// symbols resolves each name into its *uintptr, naming the first missing
// one (an older library than folio needs).
func symbols(lib string, h uintptr, syms map[string]*uintptr) error {
	for name, dst := range syms {
		p, err := purego.Dlsym(h, name)
		if err != nil || p == 0 {
			return fmt.Errorf("%s has no %s: it is older than folio needs", lib, name)
		}
		*dst = p
	}
	return nil
}

// call calls the C function fn; every argument is a value or the address
// of heap memory kept alive by the caller (see heap).
func call(fn uintptr, args ...uintptr) result {
	return result(int32(callPtr(fn, args...)))
}

// callPtr calls the C function fn and returns its result whole (a pointer).
func callPtr(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}

// heap makes the object p points to escape to the heap, where it does not
// move while C reads its address. It does nothing at run time.
//
//go:noinline
func heap(p unsafe.Pointer) {
	if heapSinkOn {
		heapSink = p
	}
}

var (
	heapSinkOn bool
	//lint:ignore U1000 written, never read: the write is what makes p escape
	heapSink unsafe.Pointer
)

// addr is p's address for a C argument, p moved to the heap first.
func addr[T any](p *T) uintptr {
	heap(unsafe.Pointer(p))
	return uintptr(unsafe.Pointer(p))
}

// cString is s NUL-terminated, in heap memory.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	heap(unsafe.Pointer(&b[0]))
	return b
}

// goString copies the NUL-terminated C string at p.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(ptr, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(ptr), n))
}

// libDirFor is Debian's and Ubuntu's library folder for goarch: x86_64 or
// aarch64 (GH200 and DGX Spark are arm64); "" for another.
func libDirFor(goarch string) string {
	switch goarch {
	case "amd64":
		return "/usr/lib/x86_64-linux-gnu"
	case "arm64":
		return "/usr/lib/aarch64-linux-gnu"
	}
	return ""
}

// inLibDir is name in this machine's libDirFor folder, if it has one.
func inLibDir(name string) []string {
	if d := libDirFor(runtime.GOARCH); d != "" {
		return []string{filepath.Join(d, name)}
	}
	return nil
}

// driverNames are where libcuda is looked for: the loader's path first.
var driverNames = slices.Concat([]string{"libcuda.so.1", "libcuda.so"}, inLibDir("libcuda.so.1"), []string{
	"/usr/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/nvidia/lib/libcuda.so.1",
	"/usr/local/cuda/compat/libcuda.so.1"})

// loadDriver opens libcuda and wraps the calls of driver. Failure wraps
// ErrNoDriver.
func loadDriver() (*driver, error) {
	d, _, err := loadDriverTried()
	return d, err
}

// loadDriverTried is loadDriver with every path it tried.
func loadDriverTried() (*driver, []dlAttempt, error) {
	h, tried, err := dlopenFirst("libcuda", driverNames)
	if err != nil {
		return nil, tried, fmt.Errorf("%w (%v)", ErrNoDriver, err)
	}
	var f struct {
		init, version, count, get, name, totalMem, attr, retain, release, setCurrent,
		streamCreate, streamDestroy, streamSync, memInfo, alloc, free, htod, dtoh, dtod,
		memset, modLoad, modUnload, getFunc, funcAttr, launch, errName uintptr
	}
	err = symbols("libcuda", h, map[string]*uintptr{
		"cuInit": &f.init, "cuDriverGetVersion": &f.version, "cuDeviceGetCount": &f.count,
		"cuDeviceGet": &f.get, "cuDeviceGetName": &f.name, "cuDeviceTotalMem_v2": &f.totalMem,
		"cuDeviceGetAttribute": &f.attr, "cuDevicePrimaryCtxRetain": &f.retain,
		"cuDevicePrimaryCtxRelease_v2": &f.release, "cuCtxSetCurrent": &f.setCurrent,
		"cuStreamCreate": &f.streamCreate, "cuStreamDestroy_v2": &f.streamDestroy,
		"cuStreamSynchronize": &f.streamSync, "cuMemGetInfo_v2": &f.memInfo,
		"cuMemAlloc_v2": &f.alloc, "cuMemFree_v2": &f.free, "cuMemcpyHtoDAsync_v2": &f.htod,
		"cuMemcpyDtoHAsync_v2": &f.dtoh, "cuMemcpyDtoDAsync_v2": &f.dtod, "cuMemsetD8Async": &f.memset,
		"cuModuleLoadData": &f.modLoad, "cuModuleUnload": &f.modUnload,
		"cuModuleGetFunction": &f.getFunc, "cuFuncGetAttribute": &f.funcAttr, "cuLaunchKernel": &f.launch, "cuGetErrorName": &f.errName,
	})
	if err != nil {
		return nil, tried, fmt.Errorf("%w (%v)", ErrNoDriver, err)
	}
	u := func(v uint32) uintptr { return uintptr(v) }
	i := func(v int32) uintptr { return uintptr(v) }
	d := &driver{
		Init:             func(flags uint32) result { return call(f.init, u(flags)) },
		DriverGetVersion: func(v *int32) result { return call(f.version, addr(v)) },
		DeviceGetCount:   func(n *int32) result { return call(f.count, addr(n)) },
		DeviceGet:        func(dev *int32, ord int32) result { return call(f.get, addr(dev), i(ord)) },
		DeviceGetName: func(name []byte, dev int32) result {
			heap(unsafe.Pointer(&name[0]))
			r := call(f.name, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), i(dev))
			runtime.KeepAlive(name)
			return r
		},
		DeviceTotalMem:     func(b *uint64, dev int32) result { return call(f.totalMem, addr(b), i(dev)) },
		DeviceGetAttribute: func(v *int32, a, dev int32) result { return call(f.attr, addr(v), i(a), i(dev)) },
		PrimaryCtxRetain:   func(ctx *uintptr, dev int32) result { return call(f.retain, addr(ctx), i(dev)) },
		PrimaryCtxRelease:  func(dev int32) result { return call(f.release, i(dev)) },
		CtxSetCurrent:      func(ctx uintptr) result { return call(f.setCurrent, ctx) },
		StreamCreate:       func(s *uintptr, flags uint32) result { return call(f.streamCreate, addr(s), u(flags)) },
		StreamDestroy:      func(s uintptr) result { return call(f.streamDestroy, s) },
		StreamSynchronize:  func(s uintptr) result { return call(f.streamSync, s) },
		MemGetInfo:         func(free, total *uint64) result { return call(f.memInfo, addr(free), addr(total)) },
		MemAlloc:           func(p *uint64, n uint64) result { return call(f.alloc, addr(p), uintptr(n)) },
		MemFree:            func(p uint64) result { return call(f.free, uintptr(p)) },
		MemcpyHtoDAsync: func(dst uint64, src unsafe.Pointer, n uint64, s uintptr) result {
			heap(src)
			r := call(f.htod, uintptr(dst), uintptr(src), uintptr(n), s)
			runtime.KeepAlive(src)
			return r
		},
		MemcpyDtoHAsync: func(dst unsafe.Pointer, src uint64, n uint64, s uintptr) result {
			heap(dst)
			r := call(f.dtoh, uintptr(dst), uintptr(src), uintptr(n), s)
			runtime.KeepAlive(dst)
			return r
		},
		MemcpyDtoDAsync: func(dst, src uint64, n uint64, s uintptr) result {
			return call(f.dtod, uintptr(dst), uintptr(src), uintptr(n), s)
		},
		MemsetD8Async: func(dst uint64, v uint8, n uint64, s uintptr) result {
			return call(f.memset, uintptr(dst), uintptr(v), uintptr(n), s)
		},
		ModuleLoadData: func(m *uintptr, image []byte) result {
			heap(unsafe.Pointer(&image[0]))
			r := call(f.modLoad, addr(m), uintptr(unsafe.Pointer(&image[0])))
			runtime.KeepAlive(image)
			return r
		},
		ModuleUnload: func(m uintptr) result { return call(f.modUnload, m) },
		ModuleGetFunction: func(fn *uintptr, m uintptr, name string) result {
			c := cString(name)
			r := call(f.getFunc, addr(fn), m, uintptr(unsafe.Pointer(&c[0])))
			runtime.KeepAlive(c)
			return r
		},
		FuncGetAttribute: func(v *int32, a int32, fn uintptr) result { return call(f.funcAttr, addr(v), i(a), fn) },
		LaunchKernel: func(fn uintptr, g, b [3]uint32, shmem uint32, s uintptr, params unsafe.Pointer) result {
			heap(params)
			r := call(f.launch, fn, u(g[0]), u(g[1]), u(g[2]), u(b[0]), u(b[1]), u(b[2]), u(shmem), s, uintptr(params), 0)
			runtime.KeepAlive(params)
			return r
		},
		ErrorName: func(r result) string {
			var p uintptr
			pp := &p
			if call(f.errName, uintptr(uint32(r)), addr(pp)) != 0 {
				return ""
			}
			return goString(*pp)
		},
	}
	// Graphs are optional: an older driver runs every op eagerly.
	var g struct{ create, add, inst, launch, execDestroy, destroy uintptr }
	if symbols("libcuda", h, map[string]*uintptr{"cuGraphCreate": &g.create, "cuGraphAddKernelNode_v2": &g.add,
		"cuGraphInstantiateWithFlags": &g.inst, "cuGraphLaunch": &g.launch, "cuGraphExecDestroy": &g.execDestroy,
		"cuGraphDestroy": &g.destroy}) == nil {
		d.GraphCreate = func(gr *uintptr) result { return call(g.create, addr(gr), 0) }
		d.GraphAddKernelNode = func(node *uintptr, gr, dep uintptr, p *kernelNodeParams) result {
			deps := new(uintptr)
			*deps = dep
			n := uintptr(0)
			if dep != 0 {
				n = 1
			}
			heap(p.params)
			r := call(g.add, addr(node), gr, addr(deps), n, addr(p))
			runtime.KeepAlive(p) // the driver reads p, its parameters and deps during the call
			runtime.KeepAlive(deps)
			return r
		}
		d.GraphInstantiate = func(exec *uintptr, gr uintptr) result { return call(g.inst, addr(exec), gr, 0) }
		d.GraphLaunch = func(exec, s uintptr) result { return call(g.launch, exec, s) }
		d.GraphExecDestroy = func(exec uintptr) result { return call(g.execDestroy, exec) }
		d.GraphDestroy = func(gr uintptr) result { return call(g.destroy, gr) }
	}
	return d, tried, nil
}

// cudaDirs are where the toolkit's libraries (NVRTC, cuBLAS) are looked
// for after the loader's path: the toolkit folders (Options.Toolkit:
// FOLIO_CUDA_PATH, CUDA_HOME, CUDA_PATH), /usr/local/cuda*, then Python's
// NVIDIA wheels.
func cudaDirs(toolkit []string) []string {
	var dirs []string
	for _, d := range toolkit {
		if d != "" {
			dirs = append(dirs, filepath.Join(d, "lib64"), filepath.Join(d, "lib"))
		}
	}
	// targets/*-linux: x86_64-linux, sbsa-linux (arm64 servers) or
	// aarch64-linux. Last, the libraries that Python's NVIDIA wheels install.
	dirs = append(dirs, "/usr/local/cuda/lib64", "/usr/local/cuda/targets/*-linux/lib", "/usr/local/cuda-*/lib64")
	if d := libDirFor(runtime.GOARCH); d != "" {
		dirs = append(dirs, d)
	}
	return append(dirs, "/usr/lib64",
		"/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib",
		"/usr/local/lib/python3*/dist-packages/nvidia/*/lib")
}

// libNames lists the places to look for lib (a base name such as
// "libnvrtc.so"): the loader's search path first, then cudaDirs.
func libNames(lib string, toolkit []string, versions ...string) []string {
	var names []string
	for _, v := range versions {
		names = append(names, lib+v)
	}
	for _, d := range cudaDirs(toolkit) {
		names = append(names, filepath.Join(d, lib+"*"))
	}
	return names
}

// libcVersion is glibc's version (gnu_get_libc_version), "" where the C
// library is not glibc.
func libcVersion() string {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return ""
	}
	fn, err := purego.Dlsym(h, "gnu_get_libc_version")
	if err != nil || fn == 0 {
		return ""
	}
	return goString(callPtr(fn))
}
