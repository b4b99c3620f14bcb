package cuda

import (
	"runtime"
	"unsafe"
)

// CUDA graphs for the steps that repeat (decode): launching a small
// model's ~250 kernels one by one costs more CPU time than the GPU takes
// to run them. A step is the ops between two Downloads. Each eager step is
// recorded; once stableSteps steps in a row launched the same kernels with
// the same parameters, they become a graph, and the next steps only match
// their ops against it, launching nothing until Download launches the
// graph. Per-step values (positions, slots, block tables, token ids) live
// in device buffers whose contents the ops upload before the graph runs,
// which is safe because no kernel of the step reads a buffer before the
// step uploads it (checked; a step that does is never made a graph). Any
// other op (cuBLAS, copies, uploads, allocations) or an op that differs
// from the graph ends the match: the kernels matched so far are launched
// eagerly, in order, and the step goes on eagerly.
//
// Off unless Options.Graphs (FOLIO_CUDA_GRAPHS=1), until measured on a GPU.

// stableSteps is how many identical eager steps make a graph.
const stableSteps = 3

// maxRecorded bounds a recorded step; a longer one is not made a graph.
const maxRecorded = 4096

// launchRec is one launch: kernel, geometry, parameter values.
type launchRec struct {
	k    kernel
	d    dims
	n    int
	vals [maxArgs]uint64
}

// equal compares whole value arrays: args.reset zeroes the unused slots.
func (r *launchRec) equal(k kernel, d dims, a *args) bool {
	return r.k == k && r.d == d && r.n == a.n && r.vals == a.vals
}

// uses reports whether the launch has p among its parameters.
func (r *launchRec) uses(p uint64) bool {
	for _, v := range r.vals[:r.n] {
		if v == p {
			return true
		}
	}
	return false
}

type graphState struct {
	on          bool
	rec, prev   []launchRec // this eager step's launches; the last step's
	recOK       bool        // this step can become a graph
	stable      int         // steps in a row equal to the one before
	graph, exec uintptr     // prev as a graph, 0 for none
	deferring   bool        // this step's ops are matched against exec
	pos         int         // the next launch of prev to match
	launched    int         // graphs launched: for tests and reports
}

// GraphLaunches is how many steps ran as a graph.
func (b *Backend) GraphLaunches() int { return b.g.launched }

// graphsAvailable reports whether the driver has the graph calls.
func (d *driver) graphsAvailable() bool {
	return d.GraphCreate != nil && d.GraphAddKernelNode != nil && d.GraphInstantiate != nil &&
		d.GraphLaunch != nil && d.GraphExecDestroy != nil && d.GraphDestroy != nil
}

// launchOrDefer is launch with graphs on.
func (b *Backend) launchOrDefer(k kernel, d dims) {
	g := &b.g
	if g.deferring {
		if g.pos < len(g.prev) && g.prev[g.pos].equal(k, d, &b.a) {
			g.pos++
			return
		}
		b.flush()
	}
	b.launchNow(k, d, &b.a)
	if len(g.rec) < maxRecorded {
		g.rec = append(g.rec, launchRec{k: k, d: d, n: b.a.n, vals: b.a.vals})
	} else {
		g.recOK = false
	}
}

// graphUpload is called before an op uploads into the device buffer at p.
func (b *Backend) graphUpload(p uint64) {
	g := &b.g
	if !g.on {
		return
	}
	if g.deferring {
		for i := range g.pos {
			if g.prev[i].uses(p) {
				b.flush()
				break
			}
		}
		return
	}
	for i := range g.rec {
		if g.rec[i].uses(p) {
			g.recOK = false
			return
		}
	}
}

// graphBreak is called before an op that a graph cannot hold.
func (b *Backend) graphBreak() {
	if !b.g.on {
		return
	}
	if b.g.deferring {
		b.flush()
	}
	b.g.recOK = false
}

// flush launches the kernels matched so far eagerly, in order, and ends
// the match; the graph is dropped, as the steps no longer repeat. Their
// parameters go through b.replay, never b.a: flush runs inside ops (an
// upload or an allocation breaks the match), possibly while b.a holds the
// op's list half built.
func (b *Backend) flush() {
	g := &b.g
	g.deferring = false
	matched := g.prev[:g.pos]
	g.rec = append(g.rec[:0], matched...)
	for i := range matched {
		r := &matched[i]
		b.replay.reset()
		for _, v := range r.vals[:r.n] {
			b.replay.put(v)
		}
		b.launchNow(r.k, r.d, &b.replay)
	}
	g.recOK, g.stable = false, 0
	b.dropGraph()
}

// stepEnd is called by Download, before its copy: it launches the graph
// of a matched step, or judges an eager one.
func (b *Backend) stepEnd() {
	g := &b.g
	if !g.on {
		return
	}
	if g.deferring {
		if g.pos == len(g.prev) {
			b.d.must("cuGraphLaunch", b.d.GraphLaunch(g.exec, b.stream))
			g.launched++
			g.pos = 0 // the next step is matched too
			return
		}
		b.flush()
	}
	same := g.recOK && len(g.rec) > 0 && len(g.rec) == len(g.prev)
	for i := 0; same && i < len(g.rec); i++ {
		same = g.rec[i] == g.prev[i]
	}
	if same {
		g.stable++
	} else {
		g.stable = 0
	}
	g.prev, g.rec = g.rec, g.prev[:0]
	g.recOK = true
	if g.stable+1 >= stableSteps && b.buildGraph() {
		g.deferring, g.pos = true, 0
	}
}

// buildGraph makes prev a graph, each kernel after the one before; false
// (and eager steps) if the driver refuses.
func (b *Backend) buildGraph() bool {
	g := &b.g
	b.dropGraph()
	gr := new(uintptr)
	if b.d.GraphCreate(gr) != 0 {
		return false
	}
	g.graph = *gr
	var ptrs [maxArgs + 1]unsafe.Pointer
	vals := new([maxArgs]uint64)
	node, prev := new(uintptr), uintptr(0)
	for i := range g.prev {
		r := &g.prev[i]
		*vals = r.vals
		ptrs = [maxArgs + 1]unsafe.Pointer{}
		for j := range r.n {
			ptrs[j] = unsafe.Pointer(&vals[j])
		}
		p := &kernelNodeParams{fn: b.fn[r.k], grid: r.d.grid, block: r.d.block, params: unsafe.Pointer(&ptrs[0])}
		res := b.d.GraphAddKernelNode(node, g.graph, prev, p)
		// The driver reads the parameters and writes the node during the
		// call, through pointers the garbage collector does not see.
		runtime.KeepAlive(p)
		runtime.KeepAlive(vals)
		runtime.KeepAlive(node)
		if res != 0 {
			b.dropGraph()
			return false
		}
		prev = *node
	}
	exec := new(uintptr)
	if b.d.GraphInstantiate(exec, g.graph) != 0 {
		b.dropGraph()
		return false
	}
	g.exec = *exec
	return true
}

func (b *Backend) dropGraph() {
	g := &b.g
	if g.exec != 0 {
		b.d.GraphExecDestroy(g.exec)
		g.exec = 0
	}
	if g.graph != 0 {
		b.d.GraphDestroy(g.graph)
		g.graph = 0
	}
	g.deferring = false
}
