//go:build linux || darwin

package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// loadNVRTC opens NVRTC and wraps it as a compiler.
func loadNVRTC(toolkit []string) (*compiler, error) {
	c, _, err := loadNVRTCTried(toolkit)
	return c, err
}

// loadNVRTCTried is loadNVRTC with every path it tried.
func loadNVRTCTried(toolkit []string) (*compiler, []dlAttempt, error) {
	h, tried, err := dlopenFirst("NVRTC", libNames("libnvrtc.so", toolkit, "", ".13", ".12", ".11.2"))
	if err != nil {
		return nil, tried, fmt.Errorf("cuda: NVRTC (the CUDA toolkit's run-time compiler) is needed to build folio's kernels: %v; install the CUDA toolkit or set FOLIO_CUDA_PATH to it", err)
	}
	var f struct{ version, create, compile, logSize, log, binSize, bin, destroy, errStr uintptr }
	err = symbols("libnvrtc", h, map[string]*uintptr{
		"nvrtcVersion": &f.version, "nvrtcCreateProgram": &f.create, "nvrtcCompileProgram": &f.compile,
		"nvrtcGetProgramLogSize": &f.logSize, "nvrtcGetProgramLog": &f.log, "nvrtcGetCUBINSize": &f.binSize,
		"nvrtcGetCUBIN": &f.bin, "nvrtcDestroyProgram": &f.destroy, "nvrtcGetErrorString": &f.errStr,
	})
	if err != nil {
		return nil, tried, err
	}
	check := func(what string, r result) error {
		if r == 0 {
			return nil
		}
		r2 := callPtr(f.errStr, uintptr(uint32(r)))
		return &Error{Call: what, Code: int(r), Name: goString(r2)}
	}
	c := &compiler{}
	c.Version = func() (int, int) {
		var v [2]int32
		p := &v
		if call(f.version, addr(&p[0]), addr(&p[1])) != 0 {
			return 0, 0
		}
		return int(v[0]), int(v[1])
	}
	c.Compile = func(src, name string, opts []string) ([]byte, string, error) {
		var prog uintptr
		pp := &prog
		cs, cn := cString(src), cString(name)
		if err := check("nvrtcCreateProgram", call(f.create, addr(pp), uintptr(unsafe.Pointer(&cs[0])),
			uintptr(unsafe.Pointer(&cn[0])), 0, 0, 0)); err != nil {
			return nil, "", err
		}
		defer call(f.destroy, addr(pp))
		copts := make([][]byte, len(opts))
		ptrs := make([]uintptr, len(opts)+1)
		for i, o := range opts {
			copts[i] = cString(o)
			ptrs[i] = uintptr(unsafe.Pointer(&copts[i][0]))
		}
		heap(unsafe.Pointer(&ptrs[0]))
		cerr := check("nvrtcCompileProgram", call(f.compile, *pp, uintptr(len(opts)), uintptr(unsafe.Pointer(&ptrs[0]))))
		runtime.KeepAlive(copts)
		runtime.KeepAlive(ptrs)
		runtime.KeepAlive(cs)
		runtime.KeepAlive(cn)
		var n uint64
		np := &n
		log := ""
		if call(f.logSize, *pp, addr(np)) == 0 && *np > 1 {
			buf := make([]byte, *np)
			heap(unsafe.Pointer(&buf[0]))
			if call(f.log, *pp, uintptr(unsafe.Pointer(&buf[0]))) == 0 {
				log = string(buf[:len(buf)-1])
			}
			runtime.KeepAlive(buf)
		}
		if cerr != nil {
			return nil, log, cerr
		}
		if err := check("nvrtcGetCUBINSize", call(f.binSize, *pp, addr(np))); err != nil {
			return nil, log, err
		}
		bin := make([]byte, *np)
		heap(unsafe.Pointer(&bin[0]))
		err := check("nvrtcGetCUBIN", call(f.bin, *pp, uintptr(unsafe.Pointer(&bin[0]))))
		runtime.KeepAlive(bin)
		return bin, log, err
	}
	return c, tried, nil
}
