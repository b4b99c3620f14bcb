// Package cpu is the always-available compute backend: gpu.Backend on the
// host's cores.
//
// Weights stay in their GGUF encoding, in the caller's memory (the mmap'd
// file), Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, Q8_0, F16 and BF16 ones also in a repacked copy
// (repack.go). The
// hot loops (MatMul for Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, F16 and BF16 weights,
// and Attention) run as C kernels with intrinsics (simd_*.c, through cgo),
// AVX2 or AVX-512 chosen at start-up from CPUID, so one binary runs on any
// x86-64 machine. As ggml does, MatMul quantizes the activations once per
// call to the weight type's partner (8-bit blocks, F16 or BF16; xquant.go) and
// takes integer dot products per block. Without cgo, off amd64, on a CPU
// without AVX2, or for other weight types, the plain Go kernels run: they
// dequantize one weight row (or a tile of four) at a time into a thread's
// scratch and use it against every activation row, so no dequantized copy
// of a weight ever exists. They are also the reference the C kernels are
// tested against.
//
// Every op splits its rows over a pool of threads started once by New; the
// calling goroutine works too and returns when the op is done. Scratch
// buffers are per thread and grow to the largest op seen, so a forward pass
// in steady state neither starts goroutines nor allocates.
//
// A Backend is not safe for concurrent use: one goroutine (the runner's)
// issues its ops.
package cpu

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

var _ gpu.Backend = (*Backend)(nil)

// Backend runs the ops of gpu.Backend on the CPU.
type Backend struct {
	pool    *pool
	closed  bool
	k       *kernels // the kernels of bestLevel (lower in tests), chosen in New
	weights arena    // the repacked weights
	wbytes  int64    // WeightBytesRead's count

	// The ops' kernels, filled in before each dispatch and cleared after,
	// kept here so that handing one to the pool allocates nothing.
	matmul     matmulTask
	matmulX    simdMatmulTask
	quant      quantTask
	embed      embedTask
	rmsnorm    rmsNormTask
	add        addTask
	silumul    siluMulTask
	rope       ropeTask
	softmax    softmaxTask
	gather     gatherTask
	argmax     argmaxTask
	writekv    writeKVTask
	attention  attentionTask
	attentionX simdAttentionTask
	copies     copyBlocksTask
	attend     attendTask
	elem       funcTask // the elementwise ops of ops_families.go
	experts    expertTask
	expertSum  expertSumTask

	ropeAngles ropeAngles // Rope: the angles of the last positions rotated

	lnW, lnB  []float32  // LayerNorm: its weight and bias as float32
	sinks     []float32  // Attention: AttnOpts.Sinks as float32
	rowSeq    []int32    // Attention: the sequence of each row, -1 for none
	xq        []byte     // MatMul: the activations quantized for the SIMD kernels
	mmParts   []mmPart   // MatMul(s): the weights of the op
	xqOf      xqKey      // what xq holds
	attnTiles []attnTile // Attention: the SIMD units' tiles of rows

	xg          []byte       // ExpertMatMuls: x's quantized rows in the spans' order
	expertX     []float32    // ExpertMatMuls (Go kernels): a span's rows of x
	expertParts []expertPart // ExpertMatMuls: the units' (span, weight) pairs

	attendSpans []rowSpan // Attend: the rows its first phase prepares
	attendWhole []bool    // Attend: which tiles are their sequence's whole
}

// ThreadCount is the threads New(threads) computes on: threads, or one
// per logical CPU (runtime.NumCPU) when threads ≤ 0.
func ThreadCount(threads int) int {
	if threads <= 0 {
		return runtime.NumCPU()
	}
	return threads
}

// New starts a backend on ThreadCount(threads) threads.
func New(threads int) *Backend {
	threads = ThreadCount(threads)
	initF16Table()
	spin := threads <= runtime.GOMAXPROCS(0)
	return &Backend{pool: newPool(threads, spin), k: kernelsAt(bestLevel)}
}

// NewReference is New for checking other backends against: its attention
// is float32 at every level. At amx, attention over half and Q8_0 caches
// rounds to bfloat16 (simd_attn_amx.c), about the error a device check
// bounds, so the reference runs avx512 there, whose matmuls equal amx's
// bit for bit.
func NewReference(threads int) *Backend {
	b := New(threads)
	if b.k.level == levelAMX || b.k.level == levelAVX512BF16 {
		b.k = kernelsAt(levelAVX512)
	}
	return b
}

// SpareProc raises GOMAXPROCS to threads+1 when it is at most threads
// and the kernels are SIMD ones; the program calls it once, before any
// backend, unless the user set GOMAXPROCS (a library leaves the process's
// GOMAXPROCS alone). The
// pool's threads spend most of a forward pass in cgo calls, each holding
// its P; when no P is idle, the runtime's monitor takes a P from a thread
// that has been in a call for 20 µs and starts another thread to look for
// work, dozens of times a millisecond, and on a machine with as many cores
// as pool threads those threads take the cores from the kernels (decode
// speeds: bench/results/2026-12-02-comment-numbers.md). One idle P stops it: the monitor leaves a P in a call of under 10 ms alone
// while another P is idle.
func SpareProc(threads int) {
	if bestLevel > levelScalar && runtime.GOMAXPROCS(0) <= threads {
		runtime.GOMAXPROCS(threads + 1)
	}
}

// Threads is the number of threads the backend computes on.
func (b *Backend) Threads() int { return len(b.pool.workers) }

// Name is "cpu".
func (b *Backend) Name() string { return "cpu" }

// Close stops the backend's threads. The backend, its tensors and its K/V
// caches must not be used afterwards; the memory is the garbage collector's
// to take back once the caller drops them.
func (b *Backend) Close() error {
	if !b.closed {
		b.closed = true
		b.pool.close()
	}
	return nil
}

// Tensor is the CPU's gpu.Tensor: a weight in its GGUF encoding, in the
// caller's memory, or an F32 activation in Go memory.
type Tensor struct {
	name       string
	typ        gguf.TensorType
	rows, cols int
	weight     bool // read-only: data (and f32, when set) alias the caller's bytes

	data     []byte // weights: rows · rowBytes bytes, not copied
	rowBytes int
	// f32 holds the elements of an F32 tensor: the activations, the
	// backend's copy of an F32 weight (own), and a lookup-only F32
	// weight's bytes read in place as float32s (aligned, on a
	// little-endian machine). Nil for every other weight.
	f32 []float32
	// own is set on an F32 weight that f32 holds a copy of: as with a
	// packed one, the backend never reads data again.
	own bool

	// packed is the weight repacked for the SIMD kernels (repack.go), nil
	// when its type or the SIMD level has no packed kernel.
	packed *packedWeight

	views []*Tensor // Slice's views of this tensor, one per row count asked for
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

// Bytes returns a weight's encoded bytes (the slice Weight was given), nil
// for an activation.
func (t *Tensor) Bytes() []byte { return t.data }

var _ gpu.RepackedWeight = (*Tensor)(nil)

// Repacked reports whether the backend reads only its own copy of the
// weight (repacked for the kernels, whose rows Embed and Gather decode
// too, or an F32 weight copied), never the bytes Weight was given.
func (t *Tensor) Repacked() bool { return t.packed != nil || t.own }

// littleEndian reports whether the machine stores a float32 as GGUF does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Weight wraps data, a rows × cols tensor of typ in its GGUF encoding;
// every type with packed kernels at the backend's level gets a repacked
// copy for them (repack.go), and an F32 weight a copy, so that data is not
// read again (gpu.RepackedWeight) and its pages can leave memory. Other
// weights are read in place.
func (b *Backend) Weight(name string, typ gguf.TensorType, rows, cols int, data []byte) (gpu.Tensor, error) {
	return b.weight(name, typ, rows, cols, data, true)
}

// LookupWeight is Weight without the repacked copy: for a weight only
// Embed reads (its rows, in the GGUF encoding), such as untied token
// embeddings, which a copy would only double in memory.
func (b *Backend) LookupWeight(name string, typ gguf.TensorType, rows, cols int, data []byte) (gpu.Tensor, error) {
	return b.weight(name, typ, rows, cols, data, false)
}

func (b *Backend) weight(name string, typ gguf.TensorType, rows, cols int, data []byte, repack bool) (gpu.Tensor, error) {
	if !gguf.CanDequantize(typ) {
		return nil, fmt.Errorf("%w: cpu: weight %s has type %v, which folio cannot compute with; use a model quantized to F16, Q8_0, Q4_K or Q6_K",
			gpu.ErrUnsupported, name, typ)
	}
	if rows <= 0 || cols <= 0 || cols%typ.BlockSize() != 0 {
		return nil, fmt.Errorf("cpu: weight %s: shape [%d, %d] does not fit type %v (rows must be whole blocks of %d)",
			name, rows, cols, typ, typ.BlockSize())
	}
	rb := typ.RowBytes(int64(cols))
	if int64(len(data)) != int64(rows)*rb {
		return nil, fmt.Errorf("cpu: weight %s: %v [%d, %d] takes %d bytes, got %d", name, typ, rows, cols, int64(rows)*rb, len(data))
	}
	t := &Tensor{name: name, typ: typ, rows: rows, cols: cols, weight: true, data: data, rowBytes: int(rb)}
	switch {
	case typ == gguf.TypeF32 && repack:
		// Norms, biases, routers: read whole at every step, and on a file
		// mapping each read also maps the page cache's neighbouring pages
		// (fault-around, large folios), which holds the other weights'
		// released bytes in the process's memory twice.
		if err := copyFits(name, "copy", int64(len(data))); err != nil {
			return nil, err
		}
		buf := b.weights.alloc(len(data))
		t.f32, t.own = unsafe.Slice((*float32)(unsafe.Pointer(&buf[0])), rows*cols), true
		if err := gguf.Dequantize(typ, data, t.f32); err != nil {
			return nil, fmt.Errorf("cpu: weight %s: %w", name, err)
		}
	case typ == gguf.TypeF32 && littleEndian && uintptr(unsafe.Pointer(&data[0]))%4 == 0:
		t.f32 = unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), rows*cols)
	}
	if kind, ok := b.k.packedKind(typ); ok && repack {
		if err := copyFits(name, "repacked copy", packedSize(kind, rows, cols)); err != nil {
			return nil, err
		}
		t.packed = b.repack(t, kind)
	}
	return t, nil
}

// copyFits refuses a copy (what) of n bytes of weight name that is larger
// than the machine's memory.
func copyFits(name, what string, n int64) error {
	if ram := physicalMemory(); ram > 0 && n > ram {
		return fmt.Errorf("%w: cpu: weight %s: its %s takes %d bytes, more than this machine's %d",
			gpu.ErrOutOfMemory, name, what, n, ram)
	}
	return nil
}

// NewTensor allocates a zeroed F32 rows × cols activation.
func (b *Backend) NewTensor(rows, cols int) (gpu.Tensor, error) {
	if rows <= 0 || cols <= 0 {
		return nil, fmt.Errorf("cpu: tensor shape [%d, %d] has a dimension ≤ 0", rows, cols)
	}
	n, ok := mulInts(rows, cols)
	if !ok || n > maxElems {
		return nil, fmt.Errorf("%w: cpu: tensor [%d, %d] is too large", gpu.ErrOutOfMemory, rows, cols)
	}
	if ram := physicalMemory(); ram > 0 && 4*int64(n) > ram {
		return nil, fmt.Errorf("%w: cpu: tensor [%d, %d] takes %d bytes, more than this machine's %d", gpu.ErrOutOfMemory, rows, cols, 4*int64(n), ram)
	}
	return &Tensor{typ: gguf.TypeF32, rows: rows, cols: cols, f32: make([]float32, n)}, nil
}

// maxElems bounds one allocation (2^40 elements: 4 TiB of float32s), far
// past any machine, so that a size is refused with an error rather than a
// runtime panic.
const maxElems = 1 << 40

// mulInts returns the product of positive ints and whether it fits an int.
func mulInts(xs ...int) (int, bool) {
	p := 1
	for _, x := range xs {
		if x <= 0 {
			return 0, false
		}
		if p > (1<<62)/x {
			return 0, false
		}
		p *= x
	}
	return p, true
}

// Slice returns a view of the first rows rows of t, sharing its memory.
// Views are kept on t, so asking again for the same size allocates nothing.
func (b *Backend) Slice(t gpu.Tensor, rows int) gpu.Tensor {
	ct := b.tensor(t)
	return gpu.View("cpu", ct, rows, &ct.views, func(rows int) *Tensor {
		v := &Tensor{name: ct.name, typ: ct.typ, rows: rows, cols: ct.cols, weight: ct.weight, rowBytes: ct.rowBytes, own: ct.own}
		if ct.data != nil {
			v.data = ct.data[:rows*ct.rowBytes]
		}
		if ct.f32 != nil {
			v.f32 = ct.f32[:rows*ct.cols]
		}
		if p := ct.packed; p != nil { // the groups that hold the view's rows
			v.packed = &packedWeight{kind: p.kind, data: p.data[:(rows+packRows-1)/packRows*p.group], group: p.group, blocks: p.blocks}
		}
		return v
	})
}

// Upload copies src into the F32 activation dst.
func (b *Backend) Upload(dst gpu.Tensor, src []float32) {
	d := b.act(dst)
	if len(src) != len(d) {
		panic(fmt.Sprintf("cpu: Upload of %d values into %v", len(src), dst))
	}
	copy(d, src)
	b.pool.ops++ // a write no pool op saw
}

// Download copies the F32 tensor src into dst.
func (b *Backend) Download(dst []float32, src gpu.Tensor) {
	s := b.f32(src)
	if len(dst) != len(s) {
		panic(fmt.Sprintf("cpu: Download of %v into %d values", src, len(dst)))
	}
	copy(dst, s)
}

// tensor returns t as this package's Tensor, panicking on another
// backend's.
func (b *Backend) tensor(t gpu.Tensor) *Tensor { return gpu.Own[*Tensor]("cpu", t) }

// act returns the elements of t, which must be a writable F32 activation.
func (b *Backend) act(t gpu.Tensor) []float32 {
	ct := b.tensor(t)
	gpu.MustAct("cpu", ct, ct.f32 != nil, ct.weight)
	return ct.f32
}

// f32 returns the elements of an F32 tensor, activation or weight.
func (b *Backend) f32(t gpu.Tensor) []float32 {
	ct := b.tensor(t)
	if ct.f32 == nil {
		panic(fmt.Sprintf("cpu: %v is not an F32 tensor readable in place", ct))
	}
	return ct.f32
}

// rowInto decodes row r of t into out (len t.cols).
func (t *Tensor) rowInto(r int, out []float32) {
	if t.f32 != nil {
		copy(out, t.f32[r*t.cols:(r+1)*t.cols])
		return
	}
	if t.packed != nil {
		unpackRow(t.packed, r, out)
		return
	}
	src := t.data[r*t.rowBytes : (r+1)*t.rowBytes]
	switch t.typ {
	case gguf.TypeF16:
		f16RowToF32(src, out)
	case gguf.TypeBF16:
		for i := range out {
			out[i] = gguf.BF16ToF32(uint16(src[2*i]) | uint16(src[2*i+1])<<8)
		}
	default:
		if err := gguf.Dequantize(t.typ, src, out); err != nil {
			panic(fmt.Sprintf("cpu: %v: %v", t, err)) // Weight checked the type and shape
		}
	}
}

// rowView returns row r of t as float32s: the tensor's own memory when it
// is F32, else the row decoded into buf (grown as needed).
func (t *Tensor) rowView(r int, buf *[]float32) []float32 {
	if t.f32 != nil {
		return t.f32[r*t.cols : (r+1)*t.cols]
	}
	out := grow(buf, t.cols)
	t.rowInto(r, out)
	return out
}

// checkShape panics unless t is rows × cols.
func checkShape(op, what string, t *Tensor, rows, cols int) {
	gpu.CheckShape("cpu", op, what, t, rows, cols)
}
