package runner

import (
	"errors"
	"fmt"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/gpu/cuda"
	"folio/gpu/place"
	"folio/gpu/vulkan"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/tokenizer"
	"folio/paged"
)

// ErrNoMemory is wrapped when a model with its K/V cache does not fit.
var ErrNoMemory = errors.New("runner: not enough memory")

// ErrKVType is wrapped when the backend has no K/V cache of the type asked
// for that suits the model (a Q8_0 cache needs heads of a multiple of 32
// elements, and runs on the CPU only): F16 would load.
var ErrKVType = errors.New("runner: K/V cache type unsupported here")

// LoadOptions say how a model is loaded. The zero value gives the defaults.
type LoadOptions struct {
	NumCtx    int    // longest sequence (prompt + output) in tokens; default min(4096, the model's)
	NumBatch  int    // tokens per forward pass; default 512
	BlockSize int    // tokens per K/V block; default paged.DefaultBlockSize
	KVType    string // "f16" (default), "q8_0" (half the memory) or "f32"
	MaxSeqs   int    // sequences computed at once; default 64 (at most num_batch)
	// KVMemory is the bytes of the K/V cache, allocated at load and never
	// grown past (FOLIO_KV_MEMORY). 0: room for poolStart(num_ctx) tokens
	// at load (fewer where memory is short: fitPool), grown for a
	// request's larger num_ctx or for more sequences up to Model.KVBudget.
	KVMemory int64
	Threads  int // CPU threads; default all
	// Device is where the model computes (FOLIO_GPU): "cpu", "cuda",
	// "vulkan", or "auto" (the default, ""): a GPU when one can (CUDA
	// first, then Vulkan), else the CPU.
	Device string
	CUDA   cuda.Options   // how CUDA's backend is opened (kernel cache, sync, graphs)
	Vulkan vulkan.Options // how Vulkan's is (FOLIO_VULKAN_DEVICE)
	// Vet is the first-load check of a GPU (gpu/vet's Checker.Check): a
	// device that fails it is not used. nil: none.
	Vet place.Vet
}

// ParseKVType is the K/V cache type a name (f16, q8_0 or f32, any case)
// gives, or an error listing them.
func ParseKVType(name string) (gguf.TensorType, error) {
	t, err := gguf.ParseTensorType(name)
	if err != nil || (t != gguf.TypeF16 && t != gguf.TypeF32 && t != gguf.TypeQ8_0) {
		return 0, fmt.Errorf("runner: K/V cache type %q: use f16, q8_0 (half the memory of f16) or f32", name)
	}
	return t, nil
}

// DefaultNumCtx is num_ctx when none is given, or the model's context
// when that is shorter.
const DefaultNumCtx = 4096

func (o *LoadOptions) defaults(modelCtx int) {
	if o.NumCtx <= 0 {
		o.NumCtx = DefaultNumCtx
		if modelCtx > 0 {
			o.NumCtx = min(o.NumCtx, modelCtx)
		}
	}
	if o.NumBatch <= 0 {
		o.NumBatch = 512
	}
	if o.BlockSize <= 0 {
		o.BlockSize = paged.DefaultBlockSize
	}
	if o.KVType == "" {
		o.KVType = "f16"
	}
	if o.MaxSeqs <= 0 {
		o.MaxSeqs = 64
	}
	o.MaxSeqs = min(o.MaxSeqs, o.NumBatch)
}

// Model is a loaded model: file, weights on a backend, tokenizer and K/V
// pool.
type Model struct {
	File *gguf.File
	Arch *arch.Model
	Tok  *tokenizer.Tokenizer
	KV   gpu.KVCache // the first layer group's cache: every layer's, for a model without sliding windows
	// Groups are the model's layer groups (arch.LayerGroups of its
	// windows), and Caches[g] holds group g's K/V; Caches[0] is KV. A
	// sliding group's cache holds windows, not contexts.
	Groups *arch.Groups
	Caches []gpu.KVCache
	bufs   []gpu.Batch // Forward's batches of the other groups
	Opt    LoadOptions
	Bytes  MemoryNeed // at load; the K/V pool may grow since (KV.Spec().Bytes())
	// KVBudget is the most bytes the K/V pool may grow to: its size when
	// KVMemory fixed it or the backend cannot grow it, else
	// DefaultKVBudget of the memory available at load (a GPU's: its
	// memory free once the model is on it, the pool counted as free).
	KVBudget int64
	// Notice says, when it is not "", why the model is not where Device
	// asked: on the CPU instead of the GPU, or split between them. The
	// caller logs it with the load.
	Notice string
}

// MemoryNeed is what a model takes, computed before anything is loaded.
// Weights are read from the mapped file; on the CPU, Repacked is the copy
// the kernels take of some of them (cpu.RepackedBytes), in place of the
// file's RepackedFrom bytes of those weights, which then stay unread.
type MemoryNeed struct {
	Weights, KV, Scratch   int64
	Repacked, RepackedFrom int64
}

// Total is the memory the model holds: the weights read from the file,
// the repacked copies, the K/V cache and scratch.
func (m MemoryNeed) Total() int64 {
	return m.Weights - m.RepackedFrom + m.Repacked + m.KV + m.Scratch
}

// Load opens the GGUF file at path and loads it onto the CPU. The memory it
// needs is computed first: a model that does not fit is refused with the
// numbers and the knob to turn.
func Load(path string, opt LoadOptions) (*Model, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := load(f, opt)
	if err != nil {
		f.Close()
		return nil, err
	}
	return m, nil
}

func load(f *gguf.File, opt LoadOptions) (*Model, error) {
	cfg, err := arch.ReadConfig(f)
	if err != nil {
		return nil, err
	}
	opt.defaults(cfg.Context)
	if cfg.Encoder {
		// its rows attend every position: a whole input goes in one pass
		opt.NumBatch = max(opt.NumBatch, opt.NumCtx)
	}
	kvType, err := ParseKVType(opt.KVType)
	if err != nil {
		return nil, err
	}
	if opt.KVMemory < 0 {
		return nil, fmt.Errorf("runner: a K/V cache of %d bytes: give a positive size, or 0 for a pool sized by num_ctx and grown as needed", opt.KVMemory)
	}
	tok, err := tokenizer.New(f)
	if err != nil {
		return nil, err
	}
	avail, _, memKnown := hostMemory() // before the model takes any
	groups := cfg.LayerGroups()
	base := gpu.KVSpec{Layers: cfg.Layers, BlockSize: opt.BlockSize,
		KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, Type: kvType, SharedKV: cfg.SharedKV(),
		Blocks: ceilDiv(poolStart(opt.NumCtx), opt.BlockSize)}
	specs := groupSpecs(groups, base, opt.MaxSeqs, opt.NumBatch, opt.NumCtx, opt.KVMemory)
	aopt := arch.Options{MaxRows: opt.NumBatch, MaxOut: opt.MaxSeqs, Context: opt.NumCtx}
	need := MemoryNeed{Scratch: arch.ScratchBytes(cfg, aopt)}
	for _, t := range f.Tensors {
		need.Weights += t.Bytes
	}
	if opt.KVMemory == 0 && memKnown {
		fitPool(specs, DefaultKVBudget(avail, need.Weights+need.Scratch, 0), opt.NumCtx)
	}
	spec := specs[0]
	if opt.KVMemory > 0 {
		if spec.Tokens() < opt.NumCtx {
			q8 := ""
			if kvType != gguf.TypeQ8_0 && cfg.HeadDim%32 == 0 {
				q8 = ", or use a q8_0 K/V cache (FOLIO_KV_CACHE_TYPE, --kv-type), which holds 64/34 the tokens of f16"
			}
			return nil, fmt.Errorf("%w: a K/V cache of %d bytes holds %d tokens, less than num_ctx %d: raise FOLIO_KV_MEMORY (--kv-memory) or lower num_ctx%s",
				ErrNoMemory, opt.KVMemory, spec.Tokens(), opt.NumCtx, q8)
		}
	}
	// before the weights load: a type the model cannot take (sizes are
	// checked later, with the knobs to turn); placed by the widest heads
	// of the groups' caches (Gemma 4's are not all alike)
	widest := spec
	for _, sp := range specs {
		if err := sp.Check(); errors.Is(err, gpu.ErrUnsupported) {
			return nil, kvTypeErr(err, sp)
		}
		need.KV += sp.Bytes()
		if sp.HeadDim > widest.HeadDim {
			widest = sp
		}
	}
	be, notice, err := newBackend(f, widest, &need, opt)
	if err != nil {
		return nil, kvTypeErr(err, widest)
	}
	am, err := arch.Load(f, be, aopt)
	if err != nil {
		be.Close()
		return nil, err
	}
	if _, grows := be.(gpu.KVGrower); grows && opt.KVMemory == 0 {
		need.KV -= startSliding(groups, specs, opt)
	}
	caches, err := newCaches(be, groups, specs)
	if err != nil {
		be.Close()
		return nil, err
	}
	budget := spec.Bytes()
	if _, grows := be.(gpu.KVGrower); grows && opt.KVMemory == 0 {
		if fm, dev := be.(gpu.FreeMemory); dev { // a GPU: its memory free after the model, its pools as they are
			if free, err := fm.Free(); err == nil {
				for _, c := range caches {
					free += c.Spec().Bytes()
				}
				budget = DefaultKVBudget(free, 0, spec.Bytes())
			}
		} else if memKnown {
			budget = DefaultKVBudget(avail, need.Total()-need.KV, spec.Bytes())
		}
	}
	return &Model{File: f, Arch: am, Tok: tok, KV: caches[0], Groups: groups, Caches: caches,
		Opt: opt, Bytes: need, KVBudget: budget, Notice: notice}, nil
}

// kvTypeErr marks err with ErrKVType when it is a backend refusing spec's
// K/V type where F16 might load.
func kvTypeErr(err error, spec gpu.KVSpec) error {
	if errors.Is(err, gpu.ErrUnsupported) && spec.Type != gguf.TypeF16 {
		return fmt.Errorf("%w: %w", ErrKVType, err)
	}
	return err
}

// newBackend is a GPU's backend when opt.Device (cpu, cuda, vulkan, or
// auto, the default) allows it: the whole model there, or as many layers
// as fit with the rest on the CPU; else the CPU's.
func newBackend(f *gguf.File, spec gpu.KVSpec, need *MemoryNeed, opt LoadOptions) (gpu.Backend, string, error) {
	kinds := []place.Kind{cuda.Kind(opt.CUDA, f, spec, need.Scratch), vulkan.Kind(opt.Vulkan, f, spec, need.Scratch)}
	g, notice, err := place.Choose(opt.Device, kinds, func() gpu.Backend { return cpu.New(opt.Threads) }, opt.Vet)
	if err != nil {
		return nil, "", err
	}
	if g != nil {
		return g, notice, nil
	}
	for _, t := range f.Tensors {
		if len(t.Shape) == 2 && !arch.LookupOnly(f, t.Name) {
			if n := cpu.RepackedBytes(t.Type, int(t.Shape[1]), int(t.Shape[0])); n > 0 {
				need.Repacked += n
				need.RepackedFrom += t.Bytes
			}
		}
	}
	if err := checkHostMemory(*need, opt); err != nil {
		return nil, "", err
	}
	return cpu.New(opt.Threads), notice, nil
}

// checkHostMemory refuses a model whose K/V cache and scratch do not fit in
// the available RAM, or whose weights (mapped from the file, read through
// the page cache) exceed the machine's RAM.
func checkHostMemory(need MemoryNeed, opt LoadOptions) error {
	avail, total, ok := hostMemory()
	if !ok {
		return nil
	}
	if alloc := need.KV + need.Scratch + need.Repacked; alloc > avail {
		return fmt.Errorf("%w: the K/V cache for num_ctx %d (%s), scratch (%s) and the weights repacked for the CPU kernels (%s) need %s, %s is available: lower num_ctx or num_batch, use a q8_0 K/V cache (FOLIO_KV_CACHE_TYPE) or a smaller model",
			ErrNoMemory, opt.NumCtx, gib(need.KV), gib(need.Scratch), gib(need.Repacked), gib(alloc), gib(avail))
	}
	if need.Total() > total {
		return fmt.Errorf("%w: the model needs %s (weights %s, of which %s repacked, K/V cache %s, scratch %s) and this machine has %s: use a smaller quantization or lower num_ctx",
			ErrNoMemory, gib(need.Total()), gib(need.Weights), gib(need.Repacked), gib(need.KV), gib(need.Scratch), gib(total))
	}
	return nil
}

// Close frees the backend and unmaps the file.
func (m *Model) Close() error {
	err := m.Arch.Backend().Close()
	return errors.Join(err, m.File.Close())
}
