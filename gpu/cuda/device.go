package cuda

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
)

//go:embed kernels/*.cu
var kernelFS embed.FS

// kernelSource is the program NVRTC compiles: common.cu, then the other
// files in name order.
func kernelSource() string {
	names, _ := fs.Glob(kernelFS, "kernels/*.cu")
	slices.SortFunc(names, func(a, b string) int {
		if a == "kernels/common.cu" {
			return -1
		}
		if b == "kernels/common.cu" {
			return 1
		}
		return strings.Compare(a, b)
	})
	var sb strings.Builder
	for _, n := range names {
		data, _ := kernelFS.ReadFile(n)
		fmt.Fprintf(&sb, "// ---- %s\n", n)
		sb.Write(data)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// The driver is loaded and initialized once per process; loadErr says why
// it could not be.
var (
	loadOnce  sync.Once
	theDriver *driver
	loadErr   error
	// openDriver is loadDriver, replaced by tests.
	openDriver = loadDriver
)

// initDriver returns the process's driver, initialized.
func initDriver() (*driver, error) {
	loadOnce.Do(func() {
		d, err := openDriver()
		if err != nil {
			loadErr = err
			return
		}
		if err := d.check("cuInit", d.Init(0)); err != nil {
			loadErr = fmt.Errorf("%w (%v)", ErrNoDriver, err)
			return
		}
		theDriver = d
	})
	return theDriver, loadErr
}

// Device describes one GPU.
type Device struct {
	Ordinal      int
	Name         string
	TotalBytes   int64
	FreeBytes    int64 // 0 when the context could not be made
	Major, Minor int   // compute capability
	SMs          int
	// MemBandwidth is the theoretical memory bandwidth in bytes/s from the
	// bus width and memory clock (0 when the driver does not say).
	MemBandwidth float64
}

// Info is what `folio gpu info` prints.
type Info struct {
	DriverVersion int // 12080 is 12.8
	Devices       []Device
}

// DriverString is the driver's CUDA version as "13.0".
func (i Info) DriverString() string {
	return fmt.Sprintf("%d.%d", i.DriverVersion/1000, i.DriverVersion%1000/10)
}

// Probe lists the GPUs. Without a driver it returns an error wrapping
// ErrNoDriver.
func Probe() (Info, error) {
	d, err := initDriver()
	if err != nil {
		return Info{}, err
	}
	return probe(d)
}

func probe(d *driver) (Info, error) {
	var info Info
	v, n := new(int32), new(int32)
	if err := d.check("cuDriverGetVersion", d.DriverGetVersion(v)); err != nil {
		return info, err
	}
	info.DriverVersion = int(*v)
	if err := d.check("cuDeviceGetCount", d.DeviceGetCount(n)); err != nil {
		return info, err
	}
	for i := range int(*n) {
		dev, err := describe(d, i)
		if err != nil {
			return info, err
		}
		info.Devices = append(info.Devices, dev)
	}
	return info, nil
}

// describe reads device ordinal's name, memory and capability.
func describe(d *driver, ordinal int) (Device, error) {
	dv := Device{Ordinal: ordinal}
	h := new(int32)
	if err := d.check("cuDeviceGet", d.DeviceGet(h, int32(ordinal))); err != nil {
		return dv, err
	}
	name := make([]byte, 256)
	if err := d.check("cuDeviceGetName", d.DeviceGetName(name, *h)); err != nil {
		return dv, err
	}
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	dv.Name = string(name)
	total := new(uint64)
	if err := d.check("cuDeviceTotalMem", d.DeviceTotalMem(total, *h)); err != nil {
		return dv, err
	}
	dv.TotalBytes = int64(*total)
	attr := func(a int32) (int, error) {
		v := new(int32)
		err := d.check("cuDeviceGetAttribute", d.DeviceGetAttribute(v, a, *h))
		return int(*v), err
	}
	var err error
	if dv.Major, err = attr(attrComputeMajor); err != nil {
		return dv, err
	}
	if dv.Minor, err = attr(attrComputeMinor); err != nil {
		return dv, err
	}
	if dv.SMs, err = attr(attrSMCount); err != nil {
		return dv, err
	}
	bus, err1 := attr(attrMemBusWidth)
	clk, err2 := attr(attrMemClockKHz)
	if err1 == nil && err2 == nil {
		dv.MemBandwidth = 2 * float64(clk) * 1e3 * float64(bus) / 8 // double data rate
	}
	// The free memory needs the context current on this thread (current
	// is per thread) until it is read; then no thread is left with it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ctx := new(uintptr)
	if d.PrimaryCtxRetain(ctx, *h) == 0 {
		if d.CtxSetCurrent(*ctx) == 0 {
			free, tot := new(uint64), new(uint64)
			if d.MemGetInfo(free, tot) == 0 {
				dv.FreeBytes = int64(*free)
			}
			d.CtxSetCurrent(0)
		}
		d.PrimaryCtxRelease(*h)
	}
	return dv, nil
}

// CompilerVersion is NVRTC's version as "13.0", or why it does not load;
// toolkit is Options.Toolkit.
func CompilerVersion(toolkit []string) (string, error) {
	nv, err := loadNVRTC(toolkit)
	if err != nil {
		return "", err
	}
	maj, min := nv.Version()
	return fmt.Sprintf("%d.%d", maj, min), nil
}
