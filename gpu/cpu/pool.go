package cpu

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
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
	scores []float32 // attention scores of one (row, head), or of a SIMD unit
}

// grow returns (*buf)[:n], reallocating *buf only when it is too small.
func grow(buf *[]float32, n int) []float32 {
	if cap(*buf) < n {
		*buf = make([]float32, n)
	}
	return (*buf)[:n]
}

// minChunkCost is the least work (in multiply-adds of the Go kernels or
// so, about a nanosecond each) worth handing to another thread. Helpers
// spin between ops, so starting one costs well under a microsecond.
const minChunkCost = 1 << 12

// spinTime is how long a thread waits for the next op, or for the others
// to finish one, before it sleeps: longer than the gaps between the ops of
// a forward pass, short enough not to burn a core when the model is idle.
const spinTime = 200 * time.Microsecond

// yieldAfter is how long a thread spins before it starts to give its core
// away between checks.
const yieldAfter = 20 * time.Microsecond

// A sleeping thread looks again after helperRecheck (a helper) or
// callerRecheck (the caller, within an op) even if no one woke it. Each
// side's handshake (announce, then look) is sound under Go's memory
// model, but not under an emulator that keeps a weaker one: CI's arm64
// tests under qemu-user (as an arm64 container under emulation runs) once
// hung with the caller and every helper asleep, most likely because an
// arm64 store-release then load-acquire, translated for an x86 host with
// no fence between them, let the load pass the store, so that each side
// missed the other. There a recheck costs a late op; on hardware it never
// fires within an op, and an idle helper wakes 20 times a second.
const (
	helperRecheck = 50 * time.Millisecond
	callerRecheck = time.Millisecond
)

// pool is a fixed set of threads that split an op's work units between
// them. Goroutines start in newPool and stop in close; the calling
// goroutine takes part as workers[0], so a pool of one thread starts none.
//
// A pool runs one op at a time and belongs to the goroutine that calls the
// Backend (the Backend is not safe for concurrent use). It publishes an op
// by writing t, units and chunk and then bumping epoch; a helper that sees
// the new epoch (spinning on it, or woken on its channel after it went to
// sleep) takes chunks until none are left and counts pending down. The
// fields from t to each are read-only from the bump until pending is 0.
type pool struct {
	workers []*worker
	wake    []chan struct{} // wake[i] wakes helper i (workers[i+1]) when it sleeps
	asleep  []atomic.Bool   // asleep[i]: helper i sleeps or is about to
	exited  sync.WaitGroup  // helpers that have not returned
	closing atomic.Bool
	spin    bool // spin before sleeping: there are no more threads than Ps

	t     task
	units int
	chunk int
	sched schedule     // how chunks are sized
	next  atomic.Int64 // the next unit to hand out

	epoch   atomic.Uint64 // ops published so far
	pending atomic.Int32  // helpers not done with the current op
	waiting atomic.Bool   // the caller sleeps until pending is 0
	done    chan struct{} // wakes the caller

	timers []*time.Timer // timers[0] the caller's recheck, timers[i+1] helper i's
	// loseWakes (tests) drops every wake token, as the emulator's
	// reordering can: the rechecks alone must carry each op through.
	loseWakes bool

	// When the machine is busier than the pool (other programs hold the
	// cores), a helper may not run for a scheduler slice while the caller
	// waits for it. The caller sums the time it worked and the time it
	// waited over windows of contentionWindow ops, and counts the stalls:
	// waits past stallTime for a helper that had not begun the op when
	// the caller finished its share (a descheduled helper, not a chunk
	// taking longer than the caller's). After a window where waiting
	// exceeded working over at least minStalls stalls, the next soloOps
	// ops run on the caller alone. (Waiting alone misled: in a serving
	// step's short ops the caller often waits a few µs more than it
	// works, and plain serve runs went solo for a fifth of their ops.)
	// Owned by the calling goroutine, but started, which helpers set.
	worked, waited time.Duration
	windowOps      int
	stalls         int
	solo           int         // ops left to run alone
	started        atomic.Bool // a helper has begun the current op

	ops uint64 // ops dispatched (and activations written without one) so far
}

const (
	contentionWindow = 64
	minStalls        = 4
	stallTime        = 20 * time.Microsecond
	soloOps          = 1024
)

// newPool starts threads-1 helpers; they spin between ops when spin
// (there are no more threads than Ps), else sleep at once.
func newPool(threads int, spin bool) *pool {
	p := &pool{workers: make([]*worker, threads), done: make(chan struct{}, 1), spin: spin}
	for i := range p.workers {
		p.workers[i] = new(worker)
	}
	p.wake = make([]chan struct{}, threads-1)
	p.asleep = make([]atomic.Bool, threads-1)
	p.timers = make([]*time.Timer, threads)
	for i := range p.timers {
		p.timers[i] = time.NewTimer(time.Hour)
		p.timers[i].Stop()
	}
	for i := range p.wake {
		p.wake[i] = make(chan struct{}, 1)
		p.exited.Add(1)
		go p.helper(i, p.workers[i+1])
	}
	return p
}

// spinUntil calls cond until it holds, for up to spinTime (only once
// without p.spin), and reports whether it held.
func (p *pool) spinUntil(cond func() bool) bool {
	if !p.spin {
		return cond()
	}
	var start time.Time
	for i := 0; ; i++ {
		if cond() {
			return true
		}
		if i&127 == 127 {
			if start.IsZero() {
				start = time.Now()
				continue
			}
			d := time.Since(start)
			if d > spinTime {
				return false
			}
			// A wait this long means the machine is busier than the pool
			// thinks: the thread waited for may be ready to run but
			// without a core.
			if d > yieldAfter {
				osYield()
			}
		}
	}
}

func (p *pool) helper(i int, w *worker) {
	defer p.exited.Done()
	// A helper keeps its thread, asleep or not: the scheduler otherwise
	// moved it from thread to thread, and on as many cores as pool
	// threads the extra runnable threads preempted the kernels
	// (bench/results/2026-12-02-comment-numbers.md).
	runtime.LockOSThread()
	var seen uint64 // not epoch.Load(): an op may be published before this goroutine runs
	for {
		if !p.spinUntil(func() bool { return p.epoch.Load() != seen }) {
			// Sleep. Announce it first, then look again: the caller bumps
			// the epoch before it looks at asleep, so one of the two sees
			// the other. A wake token left over from an op seen while
			// announcing only makes a later sleep end early.
			p.asleep[i].Store(true)
			for p.epoch.Load() == seen && !p.closing.Load() {
				if sleep(p.wake[i], p.timers[i+1], helperRecheck) {
					break
				}
			}
			p.asleep[i].Store(false)
		}
		if p.closing.Load() {
			return
		}
		if e := p.epoch.Load(); e != seen {
			seen = e
			p.started.Store(true)
			p.work(w)
			if p.pending.Add(-1) == 0 && p.waiting.Load() && !p.loseWakes {
				select {
				case p.done <- struct{}{}:
				default:
				}
			}
		}
	}
}

// work takes chunks of units until none are left. Chunks are guided: each
// takes 1/n of what is left (at least p.chunk units), so that the first
// ones are long runs of rows (weights stream from memory best that way)
// and the last ones short, which balances the threads at the end. With
// schedEach, every chunk is p.chunk units; with schedFine, 1/(2n).
func (p *pool) work(w *worker) {
	n := int64(len(p.workers))
	switch p.sched {
	case schedFine:
		n *= 2
	case schedEach:
		n = math.MaxInt32
	}
	for {
		lo := p.next.Load()
		left := int64(p.units) - lo
		if left <= 0 {
			return
		}
		size := min(left, max(int64(p.chunk), (left+n-1)/n))
		if !p.next.CompareAndSwap(lo, lo+size) {
			continue
		}
		p.t.run(w, int(lo), int(lo+size))
	}
}

// run calls t.run over units 0 … units-1, split into chunks spread over
// the threads, and returns when all are done. unitCost is a unit's work,
// roughly in multiply-adds of the Go kernels: no chunk holds less than
// minChunkCost of it, and an op of one such chunk runs on the calling
// goroutine alone.
func (p *pool) run(t task, units, unitCost int) {
	p.dispatch(t, units, unitCost, schedGuided)
}

// runFine is run with guided chunks of 1/(2n) of what is left: for ops of
// long units (a MatMul of many activation rows), where a thread that
// starts late (the activations a core away, a helper just woken) still
// holds a big chunk when the other runs out, which left the caller
// waiting a fifth of such ops. Decode's short MatMuls keep run: smaller
// chunks there cost more in starts than they saved.
func (p *pool) runFine(t task, units, unitCost int) {
	p.dispatch(t, units, unitCost, schedFine)
}

// runEach is run with every chunk the least it may hold (a single unit
// when a unit is worth a hand-off): for ops whose units differ much in
// cost, given costliest first (attention over sequences of different
// lengths), where a guided chunk of the first half could leave one thread
// working alone at the end.
func (p *pool) runEach(t task, units, unitCost int) {
	p.dispatch(t, units, unitCost, schedEach)
}

// schedule is how a pool sizes an op's chunks.
type schedule uint8

const (
	schedGuided schedule = iota // 1/n of what is left, at least p.chunk
	schedFine                   // 1/(2n) of what is left, at least p.chunk
	schedEach                   // p.chunk units
)

func (p *pool) dispatch(t task, units, unitCost int, sched schedule) {
	p.ops++
	if units <= 0 {
		return
	}
	n := len(p.workers)
	chunk := max(1, minChunkCost/max(1, unitCost)) // the least a chunk holds
	chunks := (units + chunk - 1) / chunk
	if p.closing.Load() {
		panic("cpu: backend used after Close")
	}
	if n == 1 || chunks == 1 || p.solo > 0 {
		p.solo = max(0, p.solo-1)
		t.run(p.workers[0], 0, units)
		return
	}
	p.t, p.units, p.chunk, p.sched = t, units, chunk, sched
	p.next.Store(0)
	p.pending.Store(int32(n - 1))
	p.started.Store(false)
	p.epoch.Add(1)
	for i := range p.wake {
		if p.asleep[i].Load() && !p.loseWakes {
			select {
			case p.wake[i] <- struct{}{}:
			default:
			}
		}
	}
	t0 := time.Now()
	p.work(p.workers[0])
	t1 := time.Now()
	absent := !p.started.Load()
	if !p.spinUntil(func() bool { return p.pending.Load() == 0 }) {
		// Sleep until the last helper sends a token. One left over from
		// an earlier op (sent after that op's check) only costs a turn.
		p.waiting.Store(true)
		for p.pending.Load() != 0 {
			sleep(p.done, p.timers[0], callerRecheck)
		}
		p.waiting.Store(false)
	}
	p.t = nil
	wait := time.Since(t1)
	p.worked += t1.Sub(t0)
	p.waited += wait
	if absent && wait > stallTime {
		p.stalls++
	}
	if p.windowOps++; p.windowOps == contentionWindow {
		if p.waited > p.worked && p.stalls >= minStalls {
			p.solo = soloOps
		}
		p.worked, p.waited, p.windowOps, p.stalls = 0, 0, 0, 0
	}
}

// sleep waits for a token on c for up to d (t is the sleeper's own timer)
// and reports whether one came.
func sleep(c chan struct{}, t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}

// close stops the helpers and waits for them to return.
func (p *pool) close() {
	p.closing.Store(true)
	for _, c := range p.wake {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	p.exited.Wait()
}
