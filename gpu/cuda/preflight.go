package cuda

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Preflight checks, one step at a time, what folio needs of the GPU, and
// stops at the first step that fails: the system (glibc, the libraries
// mapped into the process), the driver (every path dlopen was given, cuInit,
// the devices), NVRTC, a compile of the kernels (its time and whole log,
// stored in the kernel cache at opt.CacheDir, "" for the default, for the
// commands that follow), the module and each kernel's attributes against
// the threads folio launches it with, one tiny synchronized launch of every
// kernel, cuBLAS and an SGEMM against the CPU, and a two-node CUDA graph.
// Each line is written before the work it names, so that a hang or a crash
// shows where. Without a driver the error wraps ErrNoDriver.
// NVRTC and cuBLAS are looked for in opt.Toolkit first.
func Preflight(w io.Writer, opt Options) error {
	return preflight(w, preflightEnv{
		driver: loadDriverTried,
		nvrtc:  func() (*compiler, []dlAttempt, error) { return loadNVRTCTried(opt.Toolkit) },
		blas:   func(stream uintptr) (*blas, []dlAttempt, error) { return loadBLASTried(stream, opt.Toolkit) },
		maps:   func() (string, error) { b, err := os.ReadFile("/proc/self/maps"); return string(b), err },
		libc:   libcVersion,
	}, opt.CacheDir)
}

// dlAttempt is one path dlopen was given: Err is why it did not load, ""
// for the one that did.
type dlAttempt struct {
	Path, Err string
}

// dlSummary is the first failed attempt's error and how many more there
// were: the error's line stays short, and `folio gpu preflight` lists them
// all.
func dlSummary(tried []dlAttempt) string {
	first := ""
	for _, a := range tried {
		if a.Err != "" && !strings.HasSuffix(a.Err, "no file matches") {
			first = a.Err // dlerror's message names the path
			break
		}
	}
	if first == "" && len(tried) > 0 {
		first = tried[0].Path + ": " + tried[0].Err
	}
	if len(tried) > 1 {
		first += fmt.Sprintf(" (and %d more paths tried; `folio gpu preflight` lists them)", len(tried)-1)
	}
	return first
}

// preflightEnv is what preflight loads and reads; tests put fakes in its
// place.
type preflightEnv struct {
	driver func() (*driver, []dlAttempt, error)
	nvrtc  func() (*compiler, []dlAttempt, error)
	blas   func(stream uintptr) (*blas, []dlAttempt, error)
	maps   func() (string, error) // the text of /proc/self/maps
	libc   func() string          // glibc's version, "" if unknown
}

// cuFuncGetAttribute's attributes (CUfunction_attribute).
const (
	funcMaxThreads  = 0 // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
	funcSharedBytes = 1 // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
	funcLocalBytes  = 3 // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES
	funcRegisters   = 4 // CU_FUNC_ATTRIBUTE_NUM_REGS
)

// preflightRun is one preflight's state, step to step.
type preflightRun struct {
	w        io.Writer
	env      preflightEnv
	cacheDir string
	start    time.Time

	d             *driver
	nv            *compiler
	dev           Device
	devH          int32
	ctx           uintptr // the primary context, retained for the run
	driverVersion int
	image         []byte // the kernels, compiled by the compile step

	b       *Backend   // opened on traced, by the backend step
	traced  driver     // d, its launches recorded (preflight_launch.go)
	tracing bool       // print each launch as it is made
	rec     []traceRec // the launches made since the last clear
	ran     [numKernels]bool
}

func preflight(w io.Writer, env preflightEnv, cacheDir string) error {
	runtime.LockOSThread() // the context is made current on this thread, for every step
	defer runtime.UnlockOSThread()
	p := &preflightRun{w: w, env: env, cacheDir: cacheDir, start: time.Now()}
	defer p.close()
	steps := []struct {
		name string
		run  func() error
	}{
		{"system", p.system}, {"driver", p.loadDriver}, {"nvrtc", p.loadNVRTC}, {"compile", p.compile},
		{"module", p.module}, {"backend", p.openBackend}, {"launch", p.launches}, {"cublas", p.loadBLAS},
		{"sgemm", p.sgemm}, {"graph", p.graph},
	}
	for _, s := range steps {
		if err := p.step(s.run); err != nil {
			p.say("preflight: FAIL at %s after %.1f s", s.name, time.Since(p.start).Seconds())
			return fmt.Errorf("gpu preflight: %s: %w", s.name, err)
		}
	}
	p.say("preflight: pass (%.1f s)", time.Since(p.start).Seconds())
	return nil
}

// step runs one step; a panic (a failed call inside an op) is its error.
func (p *preflightRun) step(run func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = e
			} else {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	return run()
}

// say writes one line; an unbuffered w (stdout, a pipe) has it at once.
func (p *preflightRun) say(format string, args ...any) {
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *preflightRun) close() {
	if p.b != nil {
		p.b.Close()
	}
	if p.ctx != 0 {
		p.d.PrimaryCtxRelease(p.devH)
	}
}

// mapped lists the files of the process's mappings whose names start with
// one of prefixes, each once, in the order they appear.
func (p *preflightRun) mapped(prefixes ...string) []string {
	maps, err := p.env.maps()
	if err != nil {
		return []string{"(the process's mappings are unreadable: " + err.Error() + ")"}
	}
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(maps, "\n") {
		i := strings.IndexByte(line, '/')
		if i < 0 {
			continue
		}
		path := strings.TrimSuffix(line[i:], " (deleted)")
		base := filepath.Base(path)
		for _, pre := range prefixes {
			if strings.HasPrefix(base, pre) && !seen[path] {
				seen[path] = true
				out = append(out, path)
			}
		}
	}
	return out
}

// sayMapped writes the mapped files of prefixes, or that there are none.
func (p *preflightRun) sayMapped(step string, prefixes ...string) {
	files := p.mapped(prefixes...)
	if len(files) == 0 {
		p.say("%s: no %s mapped into the process", step, strings.Join(prefixes, "* or "))
	}
	for _, f := range files {
		p.say("%s: mapped %s", step, f)
	}
}

// sayTried writes each path dlopen was given and what became of it.
func (p *preflightRun) sayTried(step string, tried []dlAttempt) {
	for _, a := range tried {
		if a.Err == "" {
			p.say("%s: dlopen %s: loaded", step, a.Path)
		} else {
			p.say("%s: dlopen %s: %s", step, a.Path, strings.TrimPrefix(a.Err, a.Path+": "))
		}
	}
}

func (p *preflightRun) system() error {
	libc := p.env.libc()
	if libc == "" {
		libc = "unknown (not glibc?)"
	}
	exe, _ := os.Executable()
	p.say("system: %s on %s/%s, %s, glibc %s", exe, runtime.GOOS, runtime.GOARCH, runtime.Version(), libc)
	p.sayMapped("system", "libc.so", "ld-linux")
	return nil
}

func (p *preflightRun) loadDriver() error {
	p.say("driver: loading libcuda …")
	d, tried, err := p.env.driver()
	p.sayTried("driver", tried)
	if err != nil {
		p.say("driver: no NVIDIA driver: none of the %d paths above loads; folio computes on the CPU here", len(tried))
		p.say("driver: (with a driver installed, put the folder of libcuda.so.1 on LD_LIBRARY_PATH)")
		return err
	}
	p.d = d
	p.sayMapped("driver", "libcuda.so")
	p.say("driver: cuInit …")
	if err := d.check("cuInit", d.Init(0)); err != nil {
		return fmt.Errorf("%w (%v)", ErrNoDriver, err)
	}
	info, err := probe(d)
	if err != nil {
		return err
	}
	p.driverVersion = info.DriverVersion
	p.say("driver: CUDA %s (%d), %d devices", info.DriverString(), info.DriverVersion, len(info.Devices))
	if len(info.Devices) == 0 {
		return fmt.Errorf("%w: the driver sees no device", ErrNoDriver)
	}
	for _, dv := range info.Devices {
		p.say("driver: cuda:%d %s, compute %d.%d, %d SMs, %.1f GiB (%.1f GiB free)", dv.Ordinal, dv.Name,
			dv.Major, dv.Minor, dv.SMs, float64(dv.TotalBytes)/(1<<30), float64(dv.FreeBytes)/(1<<30))
	}
	p.dev = info.Devices[0]
	h, ctx := new(int32), new(uintptr)
	if err := d.check("cuDeviceGet", d.DeviceGet(h, 0)); err != nil {
		return err
	}
	p.devH = *h
	if err := d.check("cuDevicePrimaryCtxRetain", d.PrimaryCtxRetain(ctx, p.devH)); err != nil {
		return err
	}
	p.ctx = *ctx
	return d.check("cuCtxSetCurrent", d.CtxSetCurrent(p.ctx))
}

func (p *preflightRun) loadNVRTC() error {
	p.say("nvrtc: loading NVRTC …")
	nv, tried, err := p.env.nvrtc()
	p.sayTried("nvrtc", tried)
	if err != nil {
		return err
	}
	p.nv = nv
	maj, min := nv.Version()
	p.say("nvrtc: version %d.%d", maj, min)
	p.sayMapped("nvrtc", "libnvrtc")
	return nil
}

// compile compiles the kernels whatever the cache holds, timed, with
// NVRTC's whole log, and stores them in the cache for the commands that
// follow.
func (p *preflightRun) compile() error {
	src, opts := kernelSource(), compileOptions(p.dev)
	p.say("compile: folio.cu (%d lines, %d bytes) with %s …", strings.Count(src, "\n"), len(src), strings.Join(opts, " "))
	t := time.Now()
	image, log, err := p.nv.Compile(src, "folio.cu", opts)
	took := time.Since(t).Seconds()
	if log = strings.TrimRight(log, "\n"); strings.TrimSpace(log) == "" {
		p.say("compile: %.2f s; NVRTC's log is empty", took)
	} else {
		p.say("compile: %.2f s; NVRTC's log (%d lines):", took, strings.Count(log, "\n")+1)
		for _, line := range strings.Split(log, "\n") {
			p.say("compile:   %s", line)
		}
	}
	if err != nil {
		return err
	}
	p.image = image
	p.say("compile: cubin of %d bytes", len(image))
	p.sayMapped("compile", "libnvrtc-builtins")
	dir := p.cacheDir
	if dir == "" {
		dir = defaultCacheDir()
	}
	maj, min := p.nv.Version()
	cache := kernelCache{dir: dir}
	key := cacheKey(src, opts, [2]int{maj, min}, p.driverVersion)
	cache.put(key, image)
	if cache.get(key) == nil {
		p.say("compile: the kernel cache %q cannot be written: each command compiles again", dir)
	} else {
		p.say("compile: stored in %s", cache.path(key))
	}
	return nil
}

// module loads the compiled image and checks each kernel's attributes
// against the threads per block folio launches it with.
func (p *preflightRun) module() error {
	d := p.d
	p.say("module: cuModuleLoadData of %d bytes …", len(p.image))
	mod := new(uintptr)
	if err := d.check("cuModuleLoadData", d.ModuleLoadData(mod, p.image)); err != nil {
		return err
	}
	defer d.ModuleUnload(*mod)
	p.say("module: %-16s %5s %7s %7s %8s %8s", "kernel", "regs", "local", "shared", "max thr", "launch")
	var bad []string
	for k := range numKernels {
		fn := new(uintptr)
		if err := d.check("cuModuleGetFunction "+k.String(), d.ModuleGetFunction(fn, *mod, k.String())); err != nil {
			return err
		}
		var v [5]int32
		for _, a := range []int32{funcMaxThreads, funcSharedBytes, funcLocalBytes, funcRegisters} {
			x := new(int32)
			if err := d.check(fmt.Sprintf("cuFuncGetAttribute %s (%d)", k, a), d.FuncGetAttribute(x, a, *fn)); err != nil {
				return err
			}
			v[a] = *x
		}
		verdict := "ok"
		if int(v[funcMaxThreads]) < kernelThreads[k] {
			verdict = "FAIL: launched with more threads than the device allows it"
			bad = append(bad, fmt.Sprintf("%s (%d threads, launched with %d)", k, v[funcMaxThreads], kernelThreads[k]))
		} else if v[funcLocalBytes] > 0 {
			verdict = "ok (spills to local memory)"
		}
		p.say("module: %-16s %5d %6dB %6dB %8d %8d  %s", k, v[funcRegisters], v[funcLocalBytes], v[funcSharedBytes],
			v[funcMaxThreads], kernelThreads[k], verdict)
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d kernels cannot be launched as folio launches them (their registers leave fewer threads a block): %s",
			len(bad), strings.Join(bad, ", "))
	}
	return nil
}

// errNotLaunched is the launch step's error for a kernel no op launched.
var errNotLaunched = errors.New("not launched by any of preflight's ops")
