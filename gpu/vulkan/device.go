package vulkan

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// The loader is opened once per process; libErr says why it could not be.
var (
	libOnce sync.Once
	theLib  *lib
	libErr  error
)

func loadLib() (*lib, error) {
	libOnce.Do(func() { theLib, libErr = openLib() })
	return theLib, libErr
}

// Device describes one Vulkan physical device.
type Device struct {
	Index  int    // in the loader's order: what FOLIO_VULKAN_DEVICE's number names
	Name   string // "NVIDIA GeForce RTX 4090", "llvmpipe (LLVM 15.0.6, 256 bits)"
	Type   string // "discrete GPU", "integrated GPU", "virtual GPU", "CPU", "other"
	API    string // the Vulkan version the device implements: "1.3.230"
	Driver string // the driver's name and version: "llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)"
	// MemoryBytes is the size of the device-local memory heaps.
	MemoryBytes int64
	// Compute is whether a queue family computes: a device without one
	// is listed but never chosen.
	Compute bool
	// SubgroupSize is the invocations of a subgroup (Vulkan 1.1's
	// VkPhysicalDeviceSubgroupProperties: 32 on NVIDIA, 64 on older AMD,
	// 8 on lavapipe with AVX2), and SubgroupArithmetic whether compute
	// shaders have the basic and arithmetic subgroup operations
	// (subgroupAdd, subgroupMax), which the reductions use when the size
	// suits them (subgroupsFit).
	SubgroupSize       int
	SubgroupArithmetic bool

	typ     uint32 // VkPhysicalDeviceType
	version uint32 // the device's apiVersion
}

// Info is what `folio gpu info` prints of Vulkan.
type Info struct {
	Loader  string // the instance version the loader implements: "1.3.239"
	Devices []Device
}

// instance is a VkInstance with the loader's entry points.
type instance struct {
	l       *lib
	h       uintptr // VkInstance
	version uint32  // the loader's instance version
}

// minVersion is the Vulkan version folio asks for: 1.1 has
// vkGetPhysicalDeviceProperties2 and storage-buffer access every compute
// shader here needs.
var minVersion = makeVersion(1, 1, 0)

// newInstance makes an instance of the highest version up to 1.3 the
// loader implements, with no layers and no extensions.
func newInstance() (*instance, error) {
	l, err := loadLib()
	if err != nil {
		return nil, err
	}
	var ps pins
	defer ps.unpin()
	v := new(uint32)
	if err := check("vkEnumerateInstanceVersion", call(l.enumerateInstanceVersion, arg(&ps, v))); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoLoader, err)
	}
	if *v < minVersion {
		return nil, fmt.Errorf("%w: the loader implements Vulkan %s and folio needs 1.1", ErrNoLoader, versionString(*v))
	}
	app := &applicationInfo{sType: stApplicationInfo, pApplicationName: cString(&ps, "folio"),
		pEngineName: cString(&ps, "folio"), apiVersion: min(*v, makeVersion(1, 3, 0))}
	ci := &instanceCreateInfo{sType: stInstanceCreateInfo, pApplicationInfo: ptr(&ps, app)}
	h := new(uintptr)
	if err := check("vkCreateInstance", call(l.createInstance, arg(&ps, ci), 0, arg(&ps, h))); err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoLoader, err)
	}
	return &instance{l: l, h: *h, version: *v}, nil
}

func (in *instance) destroy() { call(in.l.destroyInstance, in.h, 0) }

// physicalDevice is one device's handle with what folio reads of it.
type physicalDevice struct {
	h      uintptr // VkPhysicalDevice
	props  physicalDeviceProperties
	mem    physicalDeviceMemoryProperties
	family int // a queue family with compute, -1 when there is none
	dev    Device
}

// devices lists the instance's physical devices.
func (in *instance) devices() ([]*physicalDevice, error) {
	var ps pins
	defer ps.unpin()
	n := new(uint32)
	if err := check("vkEnumeratePhysicalDevices", call(in.l.enumeratePhysicalDevices, in.h, arg(&ps, n), 0)); err != nil {
		return nil, err
	}
	if *n == 0 {
		return nil, nil
	}
	hs := make([]uintptr, *n)
	if err := check("vkEnumeratePhysicalDevices", call(in.l.enumeratePhysicalDevices, in.h, arg(&ps, n), uintptr(slicePtr(&ps, hs)))); err != nil {
		return nil, err
	}
	out := make([]*physicalDevice, 0, *n)
	for i, h := range hs[:*n] {
		out = append(out, in.describe(i, h))
	}
	return out, nil
}

// describe reads device h's properties, memory and queue families.
func (in *instance) describe(index int, h uintptr) *physicalDevice {
	var ps pins
	defer ps.unpin()
	pd := &physicalDevice{h: h, family: -1}
	p2 := &physicalDeviceProperties2{sType: stPhysicalDeviceProperties2}
	sg := &physicalDeviceSubgroupProperties{sType: stPhysicalDeviceSubgroupProperties}
	drv := &physicalDeviceDriverProperties{sType: stPhysicalDeviceDriverProperties}
	call(in.l.getPhysicalDeviceProperties, h, arg(&ps, &p2.properties))
	if p2.properties.apiVersion >= minVersion { // the instance is 1.1 at least
		p2.pNext = ptr(&ps, sg)
		if p2.properties.apiVersion >= makeVersion(1, 2, 0) && in.version >= makeVersion(1, 2, 0) {
			sg.pNext = ptr(&ps, drv)
		}
		call(in.l.getPhysicalDeviceProperties2, h, arg(&ps, p2))
	}
	pd.props = p2.properties
	call(in.l.getPhysicalDeviceMemoryProperties, h, arg(&ps, &pd.mem))
	n := new(uint32)
	call(in.l.getPhysicalDeviceQueueFamilyProperties, h, arg(&ps, n), 0)
	fams := make([]queueFamilyProperties, *n)
	if *n > 0 {
		call(in.l.getPhysicalDeviceQueueFamilyProperties, h, arg(&ps, n), uintptr(slicePtr(&ps, fams)))
	}
	pd.family = computeFamily(fams[:*n])
	pr := &pd.props
	d := Device{Index: index, Name: cstr(pr.deviceName[:]), Type: typeName(pr.deviceType), API: versionString(pr.apiVersion),
		Compute: pd.family >= 0, typ: pr.deviceType, version: pr.apiVersion, SubgroupSize: int(sg.subgroupSize),
		SubgroupArithmetic: sg.supportedStages&stageCompute != 0 && sg.supportedOperations&(subgroupBasic|subgroupArithmetic) == subgroupBasic|subgroupArithmetic}
	if name := cstr(drv.driverName[:]); name != "" {
		d.Driver = name + ", " + cstr(drv.driverInfo[:])
	} else {
		d.Driver = fmt.Sprintf("version %#x", pr.driverVersion)
	}
	for _, hp := range pd.mem.memoryHeaps[:min(pd.mem.memoryHeapCount, 16)] {
		if hp.flags&1 != 0 { // VK_MEMORY_HEAP_DEVICE_LOCAL_BIT
			d.MemoryBytes += int64(hp.size)
		}
	}
	pd.dev = d
	return pd
}

// computeFamily is the queue family to compute on: one with compute and
// no graphics (an asynchronous compute queue) if there is one, else the
// first with compute; -1 when none computes.
func computeFamily(fams []queueFamilyProperties) int {
	best := -1
	for i, f := range fams {
		if f.queueFlags&queueCompute == 0 || f.queueCount == 0 {
			continue
		}
		if f.queueFlags&1 == 0 { // VK_QUEUE_GRAPHICS_BIT
			return i
		}
		if best < 0 {
			best = i
		}
	}
	return best
}

func typeName(t uint32) string {
	switch t {
	case typeDiscreteGPU:
		return "discrete GPU"
	case typeIntegratedGPU:
		return "integrated GPU"
	case typeVirtualGPU:
		return "virtual GPU"
	case typeCPU:
		return "CPU"
	}
	return "other"
}

// preference ranks device types for Open's default: discrete GPUs first,
// then integrated, virtual, other, and a CPU device (lavapipe) last.
func preference(t uint32) int {
	switch t {
	case typeDiscreteGPU:
		return 0
	case typeIntegratedGPU:
		return 1
	case typeVirtualGPU:
		return 2
	case typeOther:
		return 3
	}
	return 4
}

// Pick is the device sel names among devs: "" the most preferred type
// with a compute queue (discrete GPUs first, then integrated, virtual,
// other, CPU; in the loader's order within a type), a number that index,
// anything else the first whose name contains sel, ignoring case. The
// error lists the devices (for FOLIO_VULKAN_DEVICE).
func Pick(devs []Device, sel string) (int, error) {
	sel = strings.TrimSpace(sel)
	index, err := strconv.Atoi(sel)
	byIndex := err == nil
	best := -1
	for i, d := range devs {
		if !d.Compute {
			continue
		}
		switch {
		case sel == "":
			if best < 0 || preference(d.typ) < preference(devs[best].typ) {
				best = i
			}
		case byIndex && d.Index == index, !byIndex && strings.Contains(strings.ToLower(d.Name), strings.ToLower(sel)):
			return i, nil
		}
	}
	if best >= 0 {
		return best, nil
	}
	var names []string
	for _, d := range devs {
		note := ""
		if !d.Compute {
			note = ", no compute queue"
		}
		names = append(names, fmt.Sprintf("%d: %s (%s%s)", d.Index, d.Name, typeName(d.typ), note))
	}
	if len(names) == 0 {
		return -1, fmt.Errorf("%w: the loader lists no devices; install the GPU's Vulkan driver (or mesa-vulkan-drivers for lavapipe)", ErrNoDevice)
	}
	if sel == "" {
		return -1, fmt.Errorf("%w: none of the devices computes (%s)", ErrNoDevice, strings.Join(names, "; "))
	}
	return -1, fmt.Errorf("%w: FOLIO_VULKAN_DEVICE=%q names none of the devices that compute (%s)", ErrNoDevice, sel, strings.Join(names, "; "))
}

// Probe lists the Vulkan devices. Without a loader the error wraps
// ErrNoLoader.
func Probe() (Info, error) {
	in, err := newInstance()
	if err != nil {
		return Info{}, err
	}
	defer in.destroy()
	info := Info{Loader: versionString(in.version)}
	pds, err := in.devices()
	if err != nil {
		return info, err
	}
	for _, pd := range pds {
		info.Devices = append(info.Devices, pd.dev)
	}
	return info, nil
}

// Pick is the device sel names among i's (see the function Pick).
func (i Info) Pick(sel string) (int, error) { return Pick(i.Devices, sel) }
