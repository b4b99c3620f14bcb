package cuda

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"unsafe"

	"folio/gpu"
	"folio/models/gguf"
)

// The preflight's steps on an open Backend: every kernel launched once
// through the ops, cuBLAS, and a graph. The Backend runs on a copy of the
// driver whose LaunchKernel records each launch (traceRec) first.

// traceRec is one launch as the driver was given it.
type traceRec struct {
	fn          uintptr
	grid, block [3]uint32
	vals        []uint64 // the parameters' 8-byte slots
}

// kernelOf is the kernel of a function handle of the Backend's module.
func (p *preflightRun) kernelOf(fn uintptr) (kernel, bool) {
	if p.b == nil {
		return 0, false
	}
	for k, f := range p.b.fn {
		if f == fn {
			return kernel(k), true
		}
	}
	return 0, false
}

func (p *preflightRun) openBackend() error {
	p.traced = *p.d
	launch := p.d.LaunchKernel
	p.traced.LaunchKernel = func(fn uintptr, g, bl [3]uint32, shmem uint32, s uintptr, params unsafe.Pointer) result {
		r := traceRec{fn: fn, grid: g, block: bl}
		for _, q := range (*[maxArgs]unsafe.Pointer)(params) {
			if q == nil {
				break
			}
			r.vals = append(r.vals, *(*uint64)(q))
		}
		p.rec = append(p.rec, r)
		name := fmt.Sprintf("function %#x", fn)
		if k, ok := p.kernelOf(fn); ok {
			p.ran[k], name = true, k.String()
		}
		if p.tracing {
			p.say("launch:   %-14s grid %d×%d×%d block %d×%d×%d", name, g[0], g[1], g[2], bl[0], bl[1], bl[2])
		}
		return launch(fn, g, bl, shmem, s, params)
	}
	p.say("backend: opening cuda:0, each launch synchronized …")
	b, err := open(&p.traced, p.nv, Options{CacheDir: p.cacheDir, NoBLAS: true, Sync: true})
	if err != nil {
		return err
	}
	p.b = b
	if !b.Cached {
		p.say("backend: the kernels were compiled again: the cache did not serve the compile step's")
	} else {
		p.say("backend: %s, the kernels from the cache", b.Name())
	}
	return nil
}

// preflightOp is a tiny op that launches one or more kernels.
type preflightOp struct {
	name string
	run  func()
}

// launches runs tiny ops that launch every kernel once or more, each
// launch synchronized (a failure names its kernel), and checks that none
// was left out.
func (p *preflightRun) launches() error {
	p.tracing = true
	defer func() { p.tracing = false }()
	for _, op := range p.tinyOps() {
		p.say("launch: %s", op.name)
		op.run()
	}
	if err := p.b.Sync(); err != nil {
		return err
	}
	var missing []string
	for k := range numKernels {
		if !p.ran[k] {
			missing = append(missing, k.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", errNotLaunched, strings.Join(missing, ", "))
	}
	p.say("launch: all %d kernels launched and synchronized", numKernels)
	return nil
}

// preflightTypes are the weight types with kernels, in kernel order.
var preflightTypes = []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeMXFP4}

// tinyOps are the launch step's ops: the smallest shapes that take each
// kernel (a K-quant block is 256 wide).
func (p *preflightRun) tinyOps() []preflightOp {
	b := p.b
	r := rand.New(rand.NewPCG(1, 2))
	vals := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = 2*r.Float32() - 1
		}
		return v
	}
	const k, m, cols = 256, 64, 64
	var ops []preflightOp
	for _, typ := range preflightTypes {
		wb := weightBytes(typ, m, k, vals(m*k))
		for _, n := range []int{1, matvecMaxN} { // matvec, then the tiled kernel (cuBLAS is not loaded yet)
			x := vals(n * k)
			ops = append(ops, preflightOp{fmt.Sprintf("MatMul %v [%d×%d]·[%d×%d]ᵀ", typ, n, k, m, k), func() {
				b.MatMul(act(b, n, m, make([]float32, n*m)), act(b, n, k, x), weight(b, typ, m, k, wb))
			}})
		}
		ops = append(ops, preflightOp{fmt.Sprintf("Embed %v, 2 rows of %d", typ, k), func() {
			b.Embed(act(b, 2, k, make([]float32, 2*k)), weight(b, typ, m, k, wb), []int32{5, 0})
		}}, preflightOp{fmt.Sprintf("dequant %v [%d×%d] (as MatMul does before cuBLAS)", typ, m, k), func() {
			b.dequantForPreflight(weight(b, typ, m, k, wb).(*Tensor))
		}})
	}
	x, w := vals(2*cols), weightBytes(gguf.TypeF32, 1, cols, vals(cols))
	ops = append(ops,
		preflightOp{"RMSNorm [2×64]", func() {
			b.RMSNorm(act(b, 2, cols, make([]float32, 2*cols)), act(b, 2, cols, x), weight(b, gguf.TypeF32, 1, cols, w), 1e-5)
		}},
		preflightOp{"Add [2×64] + [1×64]", func() {
			t := act(b, 2, cols, x)
			b.Add(t, t, weight(b, gguf.TypeF32, 1, cols, w))
		}},
		preflightOp{"SiLUMul [2×64]", func() {
			t := act(b, 2, cols, x)
			b.SiLUMul(t, t, act(b, 2, cols, x))
		}},
		preflightOp{"Softmax [2×64]", func() { b.Softmax(act(b, 2, cols, x)) }},
		preflightOp{"Rope [2×64], one head of 64", func() {
			b.Rope(act(b, 2, cols, x), []int32{0, 7}, &gpu.Rope{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1})
		}},
		preflightOp{"Scale [2×64]", func() {
			t := act(b, 2, cols, x)
			b.Scale(t, t, 0.5)
		}},
		preflightOp{"Softcap [2×64]", func() { b.Softcap(act(b, 2, cols, x), 30) }},
		preflightOp{"GELUMul [2×64]", func() {
			t := act(b, 2, cols, x)
			b.GELUMul(t, t, act(b, 2, cols, x))
		}},
		preflightOp{"SwiGLUOAI [2×64]", func() {
			t := act(b, 2, cols, x)
			b.SwiGLUOAI(t, t, act(b, 2, cols, x), 1.702, 7)
		}},
		preflightOp{"SigmoidMul [2×64]", func() {
			t := act(b, 2, cols, x)
			b.SigmoidMul(t, t, act(b, 2, cols, x))
		}},
		preflightOp{"MixRows, MatchNorm, MulRow and SparsifyRows [2×64]", func() {
			t, u := act(b, 2, cols, x), act(b, 2, cols, x)
			gpu.MixRows(b, t, t, []gpu.Tensor{u, u, u, u}, act(b, 2, cols, x), []int{0, 1, 2, 3}, 0)
			gpu.MatchNorm(b, t, t, u)
			gpu.MulRow(b, t, t, x[:cols])
			gpu.SparsifyRows(b, t, 1.6)
		}},
		preflightOp{"LayerNorm [2×64] with weight and bias", func() {
			t := act(b, 2, cols, x)
			b.LayerNorm(t, t, weight(b, gguf.TypeF32, 1, cols, w), weight(b, gguf.TypeF32, 1, cols, w), 1e-5)
		}},
	)
	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32} {
		ops = append(ops, preflightOp{fmt.Sprintf("WriteKV and Attention (causal, then in a window, soft-capped, then with sinks; then a head of 512), %v K/V, 2 rows, 2 heads over 1 of 64", typ), func() {
			spec := gpu.KVSpec{Layers: 1, Blocks: 2, BlockSize: 16, KVHeads: 1, HeadDim: 64, Type: typ}
			kv, err := b.NewKVCache(spec)
			if err != nil {
				panic(err)
			}
			batch := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Start: 0, Len: 2, Pos: 0, Blocks: []int32{1}}}}
			b.WriteKV(kv, 0, act(b, 2, 64, x), act(b, 2, 64, x), batch.Slots(nil))
			q := act(b, 2, 128, vals(2*128))
			b.Attention(act(b, 2, 128, make([]float32, 2*128)), q, kv, 0, batch, gpu.AttnOpts{Scale: 0.125})
			// A window of 2 and a soft-cap at positions 17 and 18 (16 is
			// the zeroed pool's), over a table whose first block left the window.
			swa := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Start: 0, Len: 2, Pos: 17, Blocks: []int32{-1, 0}}}}
			b.WriteKV(kv, 0, act(b, 2, 64, x), act(b, 2, 64, x), []int32{1, 2})
			b.Attention(act(b, 2, 128, make([]float32, 2*128)), q, kv, 0, swa, gpu.AttnOpts{Scale: 0.125, SoftCap: 50, Window: 2})
			// With sinks (gpt-oss), a logit per query head.
			sinks := weight(b, gguf.TypeF32, 1, 2, gpu.QuantizeRows(gguf.TypeF32, 1, 2, []float32{0.5, -1}))
			b.Attention(act(b, 2, 128, make([]float32, 2*128)), q, kv, 0, batch, gpu.AttnOpts{Scale: 0.125, Sinks: sinks})
			// A head of 512 (Gemma 4's global layers): the _wide kernel.
			wspec := gpu.KVSpec{Layers: 1, Blocks: 2, BlockSize: 16, KVHeads: 1, HeadDim: 512, Type: typ}
			wkv, err := b.NewKVCache(wspec)
			if err != nil {
				panic(err)
			}
			b.WriteKV(wkv, 0, act(b, 2, 512, vals(2*512)), act(b, 2, 512, vals(2*512)), batch.Slots(nil))
			b.Attention(act(b, 2, 512, make([]float32, 2*512)), act(b, 2, 512, vals(2*512)), wkv, 0, batch, gpu.AttnOpts{Scale: 0.05})
		}})
	}
	return ops
}

// dequantForPreflight launches w's dequant kernel into the cuBLAS scratch,
// as matmulBLAS does: the launch step reaches every dequant kernel without
// cuBLAS, F32's too, which MatMul never needs.
func (b *Backend) dequantForPreflight(w *Tensor) {
	b.enter()
	defer b.leave()
	dst := b.grow(&b.wbuf, 4*int64(w.rows)*int64(w.cols), "a weight dequantized")
	b.a.reset().ptr(w.ptr).i64(w.rowBytes).ptr(dst).i32(w.rows).i32(w.cols)
	dk := dequantKernel(w.typ)
	b.launch(dk, elementwiseDims(dk, int64(w.rows)*ceilDiv64(int64(w.cols), 8)))
}

func (p *preflightRun) loadBLAS() error {
	b := p.b
	p.say("cublas: loading cuBLAS and cublasCreate …")
	b.enter()
	bl, tried, err := p.env.blas(b.stream)
	b.leave()
	p.sayTried("cublas", tried)
	if err != nil {
		return err
	}
	b.blas, b.blasNote = bl, ""
	p.sayMapped("cublas", "libcublas")
	v := 0
	if bl.Version != nil {
		v = bl.Version()
	}
	p.say("cublas: version %d.%d.%d (%d), handle on the backend's stream, TF32 math", v/10000, v/100%100, v%100, v)
	return nil
}

// sgemmTolerance bounds the NMSE of a 16-deep product in TF32 (10-bit
// mantissas, about 1e-7 here); a wrong transpose or leading dimension
// gives about 1.
const sgemmTolerance = 1e-5

func (p *preflightRun) sgemm() error {
	b := p.b
	const n = 16
	r := rand.New(rand.NewPCG(3, 4))
	x, w := make([]float32, n*n), make([]float32, n*n)
	for i := range x {
		x[i], w[i] = 2*r.Float32()-1, 2*r.Float32()-1
	}
	want := make([]float32, n*n) // dst[i, o] = x[i, :] · w[o, :]
	for i := range n {
		for o := range n {
			var s float64
			for l := range n {
				s += float64(x[i*n+l]) * float64(w[o*n+l])
			}
			want[i*n+o] = float32(s)
		}
	}
	p.say("sgemm: [16×16]·[16×16]ᵀ in F32 through cuBLAS …")
	calls := b.blasCalls
	dst := act(b, n, n, make([]float32, n*n))
	b.MatMul(dst, act(b, n, n, x), weight(b, gguf.TypeF32, n, n, weightBytes(gguf.TypeF32, n, n, w)))
	got := read(b, dst)
	if b.blasCalls == calls {
		return fmt.Errorf("MatMul of 16 rows did not call cuBLAS (%s)", b.BLAS())
	}
	e := gpu.NMSE(got, want)
	p.say("sgemm: NMSE %.3g against the CPU (tolerance %.0e)", e, sgemmTolerance)
	if !(e <= sgemmTolerance) {
		return fmt.Errorf("cublasSgemm_v2's product differs from the CPU's: NMSE %.3g (tolerance %.0e)", e, sgemmTolerance)
	}
	return nil
}

// graph records two launches of Add eagerly (y = a + bias, then y += bias),
// clears y, makes the two launches a graph, the second depending on the
// first, and launches it: y must be a + 2·bias again.
func (p *preflightRun) graph() error {
	b, d := p.b, p.d
	if !d.graphsAvailable() {
		p.say("graph: the driver has no CUDA graph calls: FOLIO_CUDA_GRAPHS=1 runs eagerly here")
		return nil
	}
	const n = 300
	r := rand.New(rand.NewPCG(5, 6))
	a, bias, want := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], bias[i] = 2*r.Float32()-1, 2*r.Float32()-1
		want[i] = a[i] + bias[i] + bias[i]
	}
	ta, tb, ty := act(b, 1, n, a), act(b, 1, n, bias), act(b, 1, n, make([]float32, n))
	p.rec = p.rec[:0]
	b.Add(ty, ta, tb)
	b.Add(ty, ty, tb)
	recs := append([]traceRec(nil), p.rec...)
	if len(recs) != 2 {
		return fmt.Errorf("two Adds made %d launches, want 2", len(recs))
	}
	b.Upload(ty, make([]float32, n))
	if err := b.Sync(); err != nil {
		return err
	}
	p.say("graph: cuGraphCreate, two kernel nodes (add, then add after it), cuGraphInstantiate …")
	b.enter()
	defer b.leave()
	gr, exec := new(uintptr), new(uintptr)
	if err := d.check("cuGraphCreate", d.GraphCreate(gr)); err != nil {
		return err
	}
	defer d.GraphDestroy(*gr)
	node, prev := new(uintptr), uintptr(0)
	for i, rc := range recs {
		vals := new([maxArgs]uint64)
		ptrs := new([maxArgs + 1]unsafe.Pointer)
		for j, v := range rc.vals {
			vals[j] = v
			ptrs[j] = unsafe.Pointer(&vals[j])
		}
		np := &kernelNodeParams{fn: rc.fn, grid: rc.grid, block: rc.block, params: unsafe.Pointer(&ptrs[0])}
		if err := d.check(fmt.Sprintf("cuGraphAddKernelNode (node %d)", i+1), d.GraphAddKernelNode(node, *gr, prev, np)); err != nil {
			return err
		}
		runtime.KeepAlive(vals)
		prev = *node
	}
	if err := d.check("cuGraphInstantiate", d.GraphInstantiate(exec, *gr)); err != nil {
		return err
	}
	defer d.GraphExecDestroy(*exec)
	p.say("graph: cuGraphLaunch and cuStreamSynchronize …")
	if err := d.check("cuGraphLaunch", d.GraphLaunch(*exec, b.stream)); err != nil {
		return err
	}
	if err := d.check("cuStreamSynchronize after cuGraphLaunch", d.StreamSynchronize(b.stream)); err != nil {
		return err
	}
	e := gpu.NMSE(read(b, ty), want)
	p.say("graph: y = a + 2·bias, NMSE %.3g against the CPU (tolerance %.0e)", e, graphTolerance)
	if !(e <= graphTolerance) {
		return fmt.Errorf("the graph's result differs from the eager launches': NMSE %.3g", e)
	}
	return nil
}

// graphTolerance bounds the graph's sums against the CPU's: the same
// float32 additions.
const graphTolerance = 1e-6

// The tensor helpers of every backend check, under this file's short names.
var (
	act         = gpu.Activation
	read        = gpu.Values
	weightBytes = gpu.QuantizeRows
	weight      = gpu.WeightOf
)
