package vulkan

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

var _ gpu.Backend = (*Backend)(nil)

// Backend runs gpu.Backend's ops on one Vulkan device.
type Backend struct {
	l       *lib
	in      *instance
	phys    uintptr // VkPhysicalDevice
	device  uintptr // VkDevice
	queue   uintptr // VkQueue
	family  int     // the queue's family
	dev     Device
	limits  physicalDeviceLimits
	mem     physicalDeviceMemoryProperties
	unified bool // tensors live in host-mapped device memory
	kernels [numKernels]pipeline
	stream  stream
	staging staging
	s       *scratch // pinned by pin until Close
	pin     runtime.Pinner
	buffers map[*buffer]struct{} // every buffer, for Close
	used    int64                // Σ buffers' bytes
	closed  bool
	ids     intBuf // Embed's row ids
	rows    intBuf // Gather's (apart from ids: a pass uploads each once)
	slots   intBuf // WriteKV's
	meta    intBuf // Attention's rows: table offset, first and last position
	tables  intBuf // Attention's block tables
	angles  intBuf // Rope's cos and sin (float bits), for ropeAt
	scales  intBuf // MulRow's weights (float bits)
	ropeAt  ropeKey
}

// Options say how Open makes a backend; the zero value gives the defaults.
type Options struct {
	// Device names the device (FOLIO_VULKAN_DEVICE): its index or part of
	// its name; "" picks the first discrete GPU, else integrated, virtual,
	// CPU (see Pick).
	Device string
	// Staging keeps tensors in device memory the host does not map and
	// copies through a staging buffer, as on a discrete GPU, even where
	// the device's memory is the host's: tests run both paths on lavapipe.
	Staging bool
	// NoSubgroups makes the kernels that reduce across a workgroup sum in
	// shared memory even where the device's subgroup operations would do
	// (tests run both paths on lavapipe).
	NoSubgroups bool
}

// Open makes a backend on the device opt names: an instance, a logical
// device with one compute queue, the kernels' pipelines and a command
// buffer. Without a loader the error wraps ErrNoLoader; without a device
// that computes, ErrNoDevice.
func Open(opt Options) (b *Backend, err error) {
	in, err := newInstance()
	if err != nil {
		return nil, err
	}
	pds, err := in.devices()
	if err != nil {
		in.destroy()
		return nil, err
	}
	devs := make([]Device, len(pds))
	for i, pd := range pds {
		devs[i] = pd.dev
	}
	i, err := Pick(devs, opt.Device)
	if err != nil {
		in.destroy()
		return nil, err
	}
	pd := pds[i]
	if pd.props.apiVersion < minVersion {
		in.destroy()
		return nil, fmt.Errorf("%w: %s implements Vulkan %s and folio needs 1.1", ErrNoDevice, pd.dev.Name, pd.dev.API)
	}
	b = &Backend{l: in.l, in: in, phys: pd.h, family: pd.family, dev: pd.dev, limits: pd.props.limits, mem: pd.mem,
		buffers: map[*buffer]struct{}{}, s: new(scratch)}
	b.unified = !opt.Staging && unifiedMemory(pd.props.deviceType, &pd.mem)
	b.pin.Pin(b.s)
	b.s.init()
	defer func() {
		if err != nil {
			b.Close()
			b = nil
		}
	}()
	if err := b.newDevice(); err != nil {
		return b, err
	}
	if err := b.newStream(); err != nil {
		return b, err
	}
	if err := b.newPipelines(opt.NoSubgroups); err != nil {
		return b, err
	}
	return b, nil
}

// newDevice makes the logical device with one queue of b.family and
// takes the queue.
func (b *Backend) newDevice() error {
	var ps pins
	defer ps.unpin()
	prio := new(float32)
	*prio = 1
	qci := &deviceQueueCreateInfo{sType: stDeviceQueueCreateInfo, queueFamilyIndex: uint32(b.family), queueCount: 1, pQueuePriorities: ptr(&ps, prio)}
	dci := &deviceCreateInfo{sType: stDeviceCreateInfo, queueCreateInfoCount: 1, pQueueCreateInfos: ptr(&ps, qci)}
	h := new(uintptr)
	if err := check("vkCreateDevice", call(b.l.createDevice, b.phys, arg(&ps, dci), 0, arg(&ps, h))); err != nil {
		return fmt.Errorf("vulkan: %s: %w", b.dev.Name, err)
	}
	b.device = *h
	q := new(uintptr)
	call(b.l.getDeviceQueue, b.device, uintptr(b.family), 0, arg(&ps, q))
	b.queue = *q
	return nil
}

// Name is "vulkan:N", N the device's index.
func (b *Backend) Name() string { return fmt.Sprintf("vulkan:%d", b.dev.Index) }

// Device is the device the backend runs on.
func (b *Backend) Device() Device { return b.dev }

// Unified reports whether tensors live in device memory the host maps
// (an integrated GPU or lavapipe, without Options.Staging).
func (b *Backend) Unified() bool { return b.unified }

// Subgroups reports whether any kernel reduces with subgroup operations:
// the device has compute-stage subgroup arithmetic of a size the kernels
// take (Device's SubgroupSize and SubgroupArithmetic), and
// Options.NoSubgroups was not set.
func (b *Backend) Subgroups() bool {
	for _, kp := range b.kernels {
		if kp.subgroups {
			return true
		}
	}
	return false
}

// Used is the memory the backend's buffers take.
func (b *Backend) Used() int64 { return b.used }

// Submissions is how many times the queued commands were submitted.
func (b *Backend) Submissions() int { return b.stream.flushes }

// Close waits for the queue and frees every buffer, pipeline and the
// device.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	var errs []error
	if b.device != 0 {
		func() {
			defer func() {
				if r := recover(); r != nil {
					errs = append(errs, fmt.Errorf("%v", r))
				}
			}()
			b.flush()
		}()
		errs = append(errs, check("vkDeviceWaitIdle", call(b.l.deviceWaitIdle, b.device)))
		for buf := range b.buffers {
			b.freeBuffer(buf)
		}
		b.staging = staging{}
		b.destroyPipelines()
		b.destroyStream()
		call(b.l.destroyDevice, b.device, 0)
		b.device = 0
	}
	b.in.destroy()
	b.pin.Unpin()
	b.closed = true
	return errors.Join(errs...)
}

// Tensor is a device tensor: Rows × Cols of Type in buf, rowBytes apart.
type Tensor struct {
	name       string
	typ        gguf.TensorType
	rows, cols int
	rowBytes   int64
	buf        *buffer
	weight     bool
	views      []*Tensor
}

func (t *Tensor) Type() gguf.TensorType { return t.typ }
func (t *Tensor) Rows() int             { return t.rows }
func (t *Tensor) Cols() int             { return t.cols }

func (t *Tensor) String() string {
	if t.name != "" {
		return fmt.Sprintf("%s %v [%d, %d]", t.name, t.typ, t.rows, t.cols)
	}
	return fmt.Sprintf("%v [%d, %d]", t.typ, t.rows, t.cols)
}

func (t *Tensor) bytes() int64 { return int64(t.rows) * t.rowBytes }

// matmulTypes are the weight types MatMul's kernels read as they are
// (and Embed's getrows.comp).
var matmulTypes = map[gguf.TensorType]kernel{gguf.TypeF32: kMatMulF32, gguf.TypeF16: kMatMulF16, gguf.TypeQ8_0: kMatMulQ8_0,
	gguf.TypeQ4_0: kMatMulQ4_0, gguf.TypeQ4_K: kMatMulQ4_K, gguf.TypeQ5_K: kMatMulQ5_K, gguf.TypeQ6_K: kMatMulQ6_K,
	gguf.TypeMXFP4: kMatMulMXFP4}

// WeightBytes is the device memory Weight takes for a rows × cols weight
// of typ: the types the kernels read as stored (a one-row weight, a norm
// or a bias, as F32: the elementwise ops read it so), the others (BF16,
// Q4_1, Q5_0, Q5_1, Q2_K, Q3_K) as F32.
func WeightBytes(typ gguf.TensorType, rows, cols int) int64 {
	return native.WeightBytes(typ, rows, cols)
}

// Weight copies data, a rows × cols tensor of typ in its GGUF encoding,
// to the device. The types of matmulTypes stay encoded and are
// dequantized inside MatMul and Embed; a weight of another type that
// models/gguf decodes, and a one-row weight, is decoded to F32 here
// (WeightBytes counts it so). Types gguf cannot decode are refused with
// gpu.ErrUnsupported.
func (b *Backend) Weight(name string, typ gguf.TensorType, rows, cols int, data []byte) (gpu.Tensor, error) {
	typ, rb, data, err := gpu.UploadWeight("vulkan", name, typ, rows, cols, data, native.UploadType(typ, rows)) // WeightBytes counts what this uploads
	if err != nil {
		return nil, err
	}
	t := &Tensor{name: name, typ: typ, rows: rows, cols: cols, rowBytes: rb, weight: true}
	if t.buf, err = b.newBuffer(t.bytes(), false, "weight "+name); err != nil {
		return nil, err
	}
	if h := t.buf.host(); h != nil { // a new buffer: no queued command uses it
		copy(h, data)
	} else {
		b.write(t.buf, 0, data)
	}
	return t, nil
}

// NewTensor allocates a zeroed F32 rows × cols activation.
func (b *Backend) NewTensor(rows, cols int) (gpu.Tensor, error) {
	if rows <= 0 || cols <= 0 || int64(rows)*int64(cols) > 1<<40 {
		return nil, fmt.Errorf("vulkan: tensor shape [%d, %d] has a dimension ≤ 0 or is too large", rows, cols)
	}
	t := &Tensor{typ: gguf.TypeF32, rows: rows, cols: cols, rowBytes: 4 * int64(cols)}
	var err error
	if t.buf, err = b.newBuffer(t.bytes(), false, fmt.Sprintf("a [%d, %d] activation", rows, cols)); err != nil {
		return nil, err
	}
	b.zero(t.buf)
	return t, nil
}

// Slice is a view of t's first rows rows, kept on t for the next ask.
func (b *Backend) Slice(t gpu.Tensor, rows int) gpu.Tensor {
	vt := b.tensor(t)
	return gpu.View("vulkan", vt, rows, &vt.views, func(rows int) *Tensor {
		return &Tensor{name: vt.name, typ: vt.typ, rows: rows, cols: vt.cols, rowBytes: vt.rowBytes, buf: vt.buf, weight: vt.weight}
	})
}

// Upload copies src into the F32 activation dst, after the ops queued
// before it.
func (b *Backend) Upload(dst gpu.Tensor, src []float32) {
	d := b.act(dst)
	if len(src) != d.rows*d.cols {
		panic(fmt.Sprintf("vulkan: Upload of %d values into %v", len(src), d))
	}
	b.write(d.buf, 0, f32Bytes(src))
}

// Download copies the F32 tensor src into dst once every queued op is done.
func (b *Backend) Download(dst []float32, src gpu.Tensor) {
	s := b.f32(src)
	if len(dst) != s.rows*s.cols {
		panic(fmt.Sprintf("vulkan: Download of %v into %d values", s, len(dst)))
	}
	b.read(f32Bytes(dst), s.buf, 0)
}

// Sync waits for every queued op.
func (b *Backend) Sync() { b.flush() }

func f32Bytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

func i32Bytes(v []int32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

func (b *Backend) tensor(t gpu.Tensor) *Tensor { return gpu.Own[*Tensor]("vulkan", t) }

// act is t, which must be a writable F32 activation.
func (b *Backend) act(t gpu.Tensor) *Tensor {
	bt := b.tensor(t)
	gpu.MustAct("vulkan", bt, bt.typ == gguf.TypeF32, bt.weight)
	return bt
}

// f32 is t, which must be F32 (an activation or an F32 weight).
func (b *Backend) f32(t gpu.Tensor) *Tensor {
	bt := b.tensor(t)
	gpu.MustF32("vulkan", bt)
	return bt
}

func checkShape(op, what string, t *Tensor, rows, cols int) {
	gpu.CheckShape("vulkan", op, what, t, rows, cols)
}
