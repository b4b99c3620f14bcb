package cpu

import (
	"sync"
	"sync/atomic"
)

// task is one op's kernel over a range of its work units (output rows,
// (row, head) pairs, ...). run must only touch the units lo … hi-1 of dst,
// and the scratch of w, so that workers never share memory they write.
type task interface {
	run(w *worker, lo, hi int)
}

// worker is the scratch one thread of the pool owns. Buffers grow to the
// largest size an op has asked for and are kept, so that the steady state
// allocates nothing.
type worker struct {
	rows   []float32 // dequantized weight rows (MatMul: a tile of them)
	row    []float32 // one dequantized row (Add's bias, RMSNorm's weight)
	scores []float32 // attention scores of one (row, head)
	rope   []float32 // cos, sin of one position's pairs
}

// grow returns (*buf)[:n], reallocating *buf only when it is too small.
func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// minChunkCost is the least work (in multiply-adds or so) worth handing to
// another thread: waking one costs a few microseconds.
const minChunkCost = 1 << 15

// pool is a fixed set of threads that split an op's work units between
// them. Goroutines start in newPool and stop in close; the calling
// goroutine takes part as workers[0], so a pool of one thread starts none.
//
// A pool runs one op at a time and belongs to the goroutine that calls the
// Backend (the Backend is not safe for concurrent use). The fields below
// workers are written by that goroutine before it wakes the helpers (the
// channel send orders the writes before their reads) and read-only until
// every helper has called done.Done.
type pool struct {
	workers []*worker
	wake    []chan struct{} // wake[i] starts helper i (workers[i+1])
	exited  sync.WaitGroup  // helpers that have not returned

	t     task
	units int
	chunk int
	next  atomic.Int64 // the next unit to hand out
	done  sync.WaitGroup
}

func newPool(threads int) *pool {
	p := &pool{workers: make([]*worker, threads)}
	for i := range p.workers {
		p.workers[i] = new(worker)
	}
	p.wake = make([]chan struct{}, threads-1)
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		w := p.workers[i+1]
		p.exited.Add(1)
		go p.helper(p.wake[i], w)
	}
	return p
}

func (p *pool) helper(wake <-chan struct{}, w *worker) {
	defer p.exited.Done()
	for range wake {
		p.work(w)
		p.done.Done()
	}
}

// work takes chunks of units until none are left.
func (p *pool) work(w *worker) {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.units {
			return
		}
		p.t.run(w, lo, min(lo+p.chunk, p.units))
	}
}

// run calls t.run over units 0 … units-1, split into chunks spread over
// the threads, and returns when all are done. unitCost is a unit's work,
// roughly in multiply-adds: it keeps chunks large enough to be worth a
// thread, while about four chunks per thread balance uneven units.
func (p *pool) run(t task, units, unitCost int) {
	if units <= 0 {
		return
	}
	n := len(p.workers)
	chunk := max(1, (units+4*n-1)/(4*n), minChunkCost/max(1, unitCost))
	chunks := (units + chunk - 1) / chunk
	if p.wake == nil && n > 1 {
		panic("cpu: backend used after Close")
	}
	if n == 1 || chunks == 1 {
		t.run(p.workers[0], 0, units)
		return
	}
	p.t, p.units, p.chunk = t, units, chunk
	p.next.Store(0)
	helpers := min(n, chunks) - 1
	p.done.Add(helpers)
	for i := range helpers {
		p.wake[i] <- struct{}{}
	}
	p.work(p.workers[0])
	p.done.Wait()
	p.t = nil
}

// close stops the helpers and waits for them to return.
func (p *pool) close() {
	for _, c := range p.wake {
		close(c)
	}
	p.exited.Wait()
	p.wake = nil
}
