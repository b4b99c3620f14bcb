package cuda

import (
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"folio/gpu"
)

func TestCheckNamesCallAndCode(t *testing.T) {
	d := newFakeGPU().driver()
	if err := d.check("cuMemAlloc", 0); err != nil {
		t.Fatalf("success became %v", err)
	}
	err := d.check("cuLaunchKernel rope", 1)
	var ce *Error
	if !errors.As(err, &ce) || ce.Call != "cuLaunchKernel rope" || ce.Name != "CUDA_ERROR_INVALID_VALUE" || ce.Code != 1 {
		t.Fatalf("got %v", err)
	}
	if want := "cuda: cuLaunchKernel rope: CUDA_ERROR_INVALID_VALUE (1)"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if err := d.check("cuMemAlloc", 2); !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Errorf("out of memory is %v, want it to wrap gpu.ErrOutOfMemory", err)
	}
	if err := d.check("cuInit", 999); !strings.Contains(err.Error(), "CUDA_ERROR_UNKNOWN_CODE (999)") {
		t.Errorf("a code without a name: %v", err)
	}
}

func TestMustPanicsWithTheError(t *testing.T) {
	d := newFakeGPU().driver()
	defer func() {
		err, _ := recover().(error)
		if err == nil || !strings.Contains(err.Error(), "cuStreamSynchronize: CUDA_ERROR_NO_DEVICE") {
			t.Fatalf("recovered %v", err)
		}
	}()
	d.must("cuStreamSynchronize", 100)
}

// On a machine without libcuda (CI), loading fails cleanly with
// ErrNoDriver; with one, it succeeds.
func TestLoadDriverWithoutLibcuda(t *testing.T) {
	d, err := loadDriver()
	if err == nil {
		if d.Init == nil || d.LaunchKernel == nil {
			t.Fatal("loaded driver has empty entries")
		}
		t.Skip("libcuda is present: nothing to check of its absence")
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("error %v does not wrap ErrNoDriver", err)
	}
}

func TestInitFailureIsNoDriver(t *testing.T) {
	f := newFakeGPU()
	f.fail["cuInit"] = 100
	resetDriver(t, func() (*driver, error) { return f.driver(), nil })
	_, err := Probe()
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "CUDA_ERROR_NO_DEVICE") {
		t.Fatalf("got %v", err)
	}
	if _, err := Open(Options{}); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open: %v", err)
	}
}

// resetDriver makes initDriver load through open for this test.
func resetDriver(t *testing.T, open func() (*driver, error)) {
	t.Helper()
	saved := openDriver
	reset := func() {
		loadOnce = sync.Once{}
		theDriver, loadErr = nil, nil
	}
	reset()
	openDriver = open
	t.Cleanup(func() { openDriver = saved; reset() })
}

func TestProbeDescribesDevices(t *testing.T) {
	f := newFakeGPU()
	resetDriver(t, func() (*driver, error) { return f.driver(), nil })
	info, err := Probe()
	if err != nil {
		t.Fatal(err)
	}
	if info.DriverString() != "13.0" || len(info.Devices) != 1 {
		t.Fatalf("info %+v", info)
	}
	d := info.Devices[0]
	if d.Name != "Fake H200" || d.Major != 9 || d.Minor != 0 || d.SMs != 132 || d.TotalBytes != 140<<30 || d.FreeBytes != 80<<30 {
		t.Errorf("device %+v", d)
	}
	if math.Abs(d.MemBandwidth-4.9e12) > 0.1e12 {
		t.Errorf("bandwidth %.3g, want about 4.9e12 from a 6144-bit bus at 3.2 GHz", d.MemBandwidth)
	}
}

// Every kernel the Go side launches is an extern "C" kernel of the
// embedded sources: a missing one would otherwise show only on a GPU.
func TestKernelNamesAreInTheSources(t *testing.T) {
	src := kernelSource()
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`extern "C" __global__ void (?:__launch_bounds__\(\d+\) )?(\w+)\(`).FindAllStringSubmatch(src, -1) {
		defined[m[1]] = true
	}
	for k := range numKernels {
		if !defined[k.String()] {
			t.Errorf("kernel %s is launched but not defined in kernels/*.cu", k)
		}
	}
	if len(defined) != int(numKernels) {
		t.Errorf("the sources define %d kernels, Go knows %d", len(defined), numKernels)
	}
	if !strings.HasPrefix(src, "// ---- kernels/common.cu") {
		t.Error("common.cu is not first in the program")
	}
	for _, f := range []string{"attention.cu", "matmul.cu", "ops.cu"} {
		if !strings.Contains(src, "// ---- kernels/"+f) {
			t.Errorf("%s is not in the program", f)
		}
	}
}

// The geometry constants of launch.go are the kernels' #defines.
func TestGeometryMatchesKernelDefines(t *testing.T) {
	src := kernelSource()
	for def, want := range map[string]int{"MV_WARPS": mvWarps, "MV_ROWS": mvRows, "TM": mmTile, "TN": mmTile, "ATT_WARPS": attWarps} {
		m := regexp.MustCompile(`#define ` + def + ` (\d+)`).FindStringSubmatch(src)
		if m == nil || m[1] != strconv.Itoa(want) {
			t.Errorf("#define %s is %v, Go uses %d", def, m, want)
		}
	}
	for def, head := range map[string]int{"ATT_HD": attHead, "ATT_HD_WIDE": attMaxHead} {
		m := regexp.MustCompile(`#define ` + def + ` (\d+)`).FindStringSubmatch(src)
		if m == nil || strconv.Itoa(head/32) != m[1] {
			t.Errorf("%s %v, Go's head of %d", def, m, head)
		}
	}
}
