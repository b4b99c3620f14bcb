//go:build linux || darwin

package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// fakeMaps is /proc/self/maps as a machine with CUDA would have it.
const fakeMaps = `7f0000000000-7f0000001000 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000002000-7f0000003000 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06
7f0000003000-7f0000004000 r--p 00001000 08:01 2 /usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06
7f0000005000-7f0000006000 r-xp 00000000 08:01 3 /usr/local/cuda-13.0/lib64/libnvrtc.so.13.0.48
7f0000007000-7f0000008000 r-xp 00000000 08:01 4 /usr/local/cuda-13.0/lib64/libcublas.so.13.0.0.19
7f0000009000-7f000000a000 rw-p 00000000 00:00 0 [heap]
`

// fakeEnv is a preflight environment over f (graphs on) with the fake
// compiler and cuBLAS.
func fakeEnv(f *fakeGPU, d *driver, c *fakeCompiler) preflightEnv {
	return preflightEnv{
		driver: func() (*driver, []dlAttempt, error) {
			return d, []dlAttempt{{"libcuda.so.1", ""}}, nil
		},
		nvrtc: func() (*compiler, []dlAttempt, error) {
			return c.compiler(), []dlAttempt{{"libnvrtc.so", "libnvrtc.so: cannot open shared object file"},
				{"/usr/local/cuda-13.0/lib64/libnvrtc.so.13", ""}}, nil
		},
		blas: func(uintptr) (*blas, []dlAttempt, error) {
			b := f.blas()
			b.Version = func() int { return 130000 }
			return b, []dlAttempt{{"libcublasLt.so", ""}, {"libcublas.so", ""}}, nil
		},
		maps: func() (string, error) { return fakeMaps, nil },
		libc: func() string { return "2.39" },
	}
}

// withAdd makes d's launches of the add kernel compute, in Go (y = a + b,
// b broadcast when it has one row), so that the graph step's result can be
// checked on the fake GPU.
func (f *fakeGPU) withAdd(d *driver) *driver {
	launch := d.LaunchKernel
	d.LaunchKernel = func(fn uintptr, g, bl [3]uint32, shm uint32, s uintptr, params unsafe.Pointer) result {
		if r := launch(fn, g, bl, shm, s, params); r != 0 || fn != 100+uintptr(kAdd) {
			return r
		}
		p := (*[6]*uint64)(params)
		n, cols, bRows := int(*p[3]), int(int32(*p[4])), int(int32(*p[5]))
		floats := func(ptr uint64, n int) []float32 {
			return unsafe.Slice((*float32)(unsafe.Pointer(&f.bytes(ptr, uint64(4*n))[0])), n)
		}
		a, b, y := floats(*p[0], n), floats(*p[1], bRows*cols), floats(*p[2], n)
		for i := range y {
			j := i
			if bRows == 1 {
				j = i % cols
			}
			y[i] = a[i] + b[j]
		}
		return 0
	}
	return d
}

// Without a driver, preflight lists every path it tried, each with its
// error, says that there is no driver, and stops there.
func TestPreflightWithoutDriver(t *testing.T) {
	tried := []dlAttempt{{"libcuda.so.1", "libcuda.so.1: cannot open shared object file: No such file or directory"},
		{"/usr/local/nvidia/lib64/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1: wrong ELF class"}}
	env := fakeEnv(newFakeGPU(), nil, &fakeCompiler{})
	env.driver = func() (*driver, []dlAttempt, error) {
		return nil, tried, fmt.Errorf("%w (libcuda: %s)", ErrNoDriver, dlSummary(tried))
	}
	var out bytes.Buffer
	err := preflight(&out, env, t.TempDir())
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("error %v does not wrap ErrNoDriver", err)
	}
	s := out.String()
	for _, a := range tried {
		if !strings.Contains(s, "driver: dlopen "+a.Path+": "+strings.TrimPrefix(a.Err, a.Path+": ")+"\n") {
			t.Errorf("attempt %s is not reported with its error:\n%s", a.Path, s)
		}
	}
	for _, want := range []string{"system: ", "glibc 2.39", "driver: no NVIDIA driver", "preflight: FAIL at driver"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "nvrtc:") {
		t.Errorf("preflight went on past the driver:\n%s", s)
	}
}

// Here (no GPU in CI), the real preflight says cleanly that there is no
// driver and names every path it tried; on a GPU machine (bench/gpu-check.sh
// runs this test there) it must pass.
func TestPreflightHere(t *testing.T) {
	var out bytes.Buffer
	err := Preflight(&out, Options{CacheDir: t.TempDir()})
	if err == nil {
		t.Log(out.String())
		return
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("a driver loads here, and preflight fails: %v\n%s", err, out.String())
	}
	for _, n := range driverNames {
		if !strings.Contains(out.String(), "driver: dlopen "+n+": ") || strings.Contains(out.String(), "driver: dlopen "+n+": "+n+": ") {
			t.Errorf("path %s is not reported:\n%s", n, out.String())
		}
	}
	if !strings.Contains(err.Error(), "no NVIDIA driver") {
		t.Errorf("error %v", err)
	}
}

// On the fake GPU every step passes: each kernel's attributes are read
// and each kernel launched, the SGEMM goes through cuBLAS, the graph runs,
// and the backend finds the kernels the compile step cached.
func TestPreflightOnFakeGPU(t *testing.T) {
	f, c := newFakeGPU(), &fakeCompiler{ver: [2]int{13, 0}}
	var out bytes.Buffer
	if err := preflight(&out, fakeEnv(f, f.withAdd(f.withGraphs(f.driver())), c), t.TempDir()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	t.Log(s)
	for k := range numKernels {
		if !strings.Contains(s, fmt.Sprintf("module: %-16s %5d", k, 40)) {
			t.Errorf("no attributes of %s", k)
		}
		if !strings.Contains(s, fmt.Sprintf("launch:   %-14s grid", k)) {
			t.Errorf("%s was not launched", k)
		}
	}
	for _, want := range []string{
		"driver: mapped /usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06\n",
		"driver: CUDA 13.0 (13000), 1 devices", "driver: cuda:0 Fake H200, compute 9.0",
		"nvrtc: dlopen libnvrtc.so: cannot open shared object file\n",
		"nvrtc: version 13.0", "nvrtc: mapped /usr/local/cuda-13.0/lib64/libnvrtc.so.13.0.48",
		"compile: folio.cu", "--gpu-architecture=sm_90", "backend: cuda:0, the kernels from the cache",
		"cublas: version 13.0.0", "cublas: mapped /usr/local/cuda-13.0/lib64/libcublas.so.13.0.0.19",
		"sgemm: NMSE ", "graph: y = a + 2·bias, NMSE 0", "preflight: pass",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Count(s, "libcuda.so.580.65.06") != 1 {
		t.Error("a library mapped twice is listed twice")
	}
	if c.calls != 1 {
		t.Errorf("NVRTC compiled %d times, want 1 (the backend takes the cached image)", c.calls)
	}
	if len(f.sgemms) != 1 || f.sgemms[0] != [6]int32{blasOpT, blasOpN, 16, 16, 16, 16} {
		t.Errorf("SGEMMs %v", f.sgemms)
	}
}

// preflightSteps are the steps' names, in order, as their lines begin.
var preflightSteps = []string{"system", "driver", "nvrtc", "compile", "module", "backend", "launch", "cublas", "sgemm", "graph"}

// Preflight stops at the first step that fails, names it and the call,
// and runs nothing after it.
func TestPreflightStopsAtTheFirstFailure(t *testing.T) {
	for _, tc := range []struct {
		name, step, err string
		set             func(f *fakeGPU, d *driver, c *fakeCompiler, env *preflightEnv)
	}{
		{"cuInit", "driver", "cuInit: CUDA_ERROR_NO_DEVICE", func(f *fakeGPU, _ *driver, _ *fakeCompiler, _ *preflightEnv) {
			f.fail["cuInit"] = 100
		}},
		{"NVRTC missing", "nvrtc", "NVRTC", func(_ *fakeGPU, _ *driver, _ *fakeCompiler, env *preflightEnv) {
			env.nvrtc = func() (*compiler, []dlAttempt, error) {
				return nil, []dlAttempt{{"libnvrtc.so", "not found"}}, errors.New("cuda: NVRTC … is needed")
			}
		}},
		{"compile error", "compile", "NVRTC_ERROR_COMPILATION", func(_ *fakeGPU, _ *driver, c *fakeCompiler, _ *preflightEnv) {
			c.fail = true
		}},
		{"image refused", "module", "cuModuleLoadData: CUDA_ERROR_INVALID_IMAGE", func(f *fakeGPU, _ *driver, _ *fakeCompiler, _ *preflightEnv) {
			f.fail["cuModuleLoadData"] = 200
		}},
		{"too many registers", "module", "attention_f16 (128 threads, launched with", func(f *fakeGPU, _ *driver, _ *fakeCompiler, _ *preflightEnv) {
			f.maxThreads = map[string]int32{"attention_f16": 128}
		}},
		{"attribute refused", "module", "cuFuncGetAttribute matvec_f32", func(f *fakeGPU, _ *driver, _ *fakeCompiler, _ *preflightEnv) {
			f.fail["cuFuncGetAttribute"] = 1
		}},
		{"launch refused", "launch", "cuLaunchKernel matvec_f32: CUDA_ERROR_INVALID_VALUE", func(f *fakeGPU, _ *driver, _ *fakeCompiler, _ *preflightEnv) {
			f.fail["cuLaunchKernel"] = 1
		}},
		{"cuBLAS missing", "cublas", "cuBLAS: libcublas.so", func(_ *fakeGPU, _ *driver, _ *fakeCompiler, env *preflightEnv) {
			env.blas = func(uintptr) (*blas, []dlAttempt, error) {
				tried := []dlAttempt{{"libcublas.so", "libcublas.so: cannot open"}, {"/usr/local/cuda/lib64/libcublas*", "no file matches"}}
				return nil, tried, fmt.Errorf("cuBLAS: %s", dlSummary(tried))
			}
		}},
		{"SGEMM wrong", "sgemm", "differs from the CPU's", func(f *fakeGPU, _ *driver, _ *fakeCompiler, env *preflightEnv) {
			env.blas = func(uintptr) (*blas, []dlAttempt, error) {
				b := f.blas()
				sgemm := b.Sgemm
				b.Sgemm = func(opA, opB, m, n, k int32, alpha *float32, a uint64, lda int32, bp uint64, ldb int32, beta *float32, c uint64, ldc int32) result {
					return sgemm(blasOpN, opB, m, n, k, alpha, a, lda, bp, ldb, beta, c, ldc) // the weight not transposed
				}
				return b, nil, nil
			}
		}},
		{"graph launch", "graph", "cuGraphLaunch: CUDA_ERROR_INVALID_VALUE", func(_ *fakeGPU, d *driver, _ *fakeCompiler, _ *preflightEnv) {
			d.GraphLaunch = func(uintptr, uintptr) result { return 1 }
		}},
		{"graph node lost", "graph", "differs from the eager", func(_ *fakeGPU, d *driver, _ *fakeCompiler, _ *preflightEnv) {
			add := d.GraphAddKernelNode
			n := 0
			d.GraphAddKernelNode = func(node *uintptr, g, dep uintptr, p *kernelNodeParams) result {
				if n++; n == 2 {
					*node = 2
					return 0 // the second node is dropped
				}
				return add(node, g, dep, p)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, c := newFakeGPU(), &fakeCompiler{ver: [2]int{13, 0}}
			d := f.withAdd(f.withGraphs(f.driver()))
			env := fakeEnv(f, d, c)
			tc.set(f, d, c, &env)
			var out bytes.Buffer
			err := preflight(&out, env, t.TempDir())
			s := out.String()
			if err == nil || !strings.Contains(err.Error(), "gpu preflight: "+tc.step+": ") || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one at %s naming %q\n%s", err, tc.step, tc.err, s)
			}
			if !strings.HasSuffix(s, "\n") || !strings.Contains(s, "preflight: FAIL at "+tc.step+" after") {
				t.Errorf("no FAIL line for %s:\n%s", tc.step, s)
			}
			later := preflightSteps[slices.Index(preflightSteps, tc.step)+1:]
			for _, line := range strings.Split(s, "\n") {
				step, _, _ := strings.Cut(line, ":")
				if slices.Contains(later, step) || strings.HasPrefix(line, "preflight: pass") {
					t.Errorf("preflight went on past %s: %q", tc.step, line)
				}
			}
			if tc.step == "compile" && !strings.Contains(s, "compile:   folio.cu(3): error") {
				t.Errorf("NVRTC's log is not shown:\n%s", s)
			}
		})
	}
}
