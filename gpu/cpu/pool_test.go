package cpu

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"folio/models/gguf"
)

// TestPoolHandOff runs ops on a spinning pool (as when there are no more
// threads than cores) and on a sleeping one, back to back and after pauses
// long enough for the helpers to go to sleep: every op must see its units
// done exactly once, whichever way the helpers were woken.
func TestPoolHandOff(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	const n, k, m = 3, 256, 4096 // enough weight rows for several chunks
	data, wf := quantWeight(t, r, gguf.TypeQ4_K, m, k)
	xf := randFloats(r, n*k, 1)
	for _, spin := range []bool{true, false} {
		b := &Backend{pool: newPool(3, spin), k: kernelsAt(bestLevel)}
		w := newWeight(t, b, gguf.TypeQ4_K, m, k, data)
		x := newAct(t, b, n, k, xf)
		var want []float32
		for i := range 40 {
			dst := newAct(t, b, n, m, nil)
			b.MatMul(dst, x, w)
			got := download(b, dst)
			if want == nil {
				want = got
				xs := xf
				if kind, ok := kernelFor(gguf.TypeQ4_K, b.k.level); ok {
					xs = nil
					for row := range n {
						xs = append(xs, dequantizeXRef(kind, quantizeXRef(kind, xf[row*k:(row+1)*k]), k)...)
					}
				}
				checkDots(t, got, xs, wf, n, k, m, matmulTol)
			}
			for j := range got {
				if got[j] != want[j] {
					t.Fatalf("spin %v, op %d: element %d is %v, was %v", spin, i, j, got[j], want[j])
				}
			}
			if i%8 == 7 {
				time.Sleep(2 * spinTime) // the helpers go to sleep
			}
		}
		b.Close()
	}
}

// countTask counts the times each unit ran and the chunks it ran in.
type countTask struct {
	runs   []atomic.Int32
	chunks atomic.Int32
}

func (c *countTask) run(_ *worker, lo, hi int) {
	c.chunks.Add(1)
	for u := lo; u < hi; u++ {
		c.runs[u].Add(1)
	}
}

// Both ways of chunking run every unit once; runEach hands out one unit
// at a time.
func TestPoolRunEach(t *testing.T) {
	p := newPool(3, true)
	defer p.close()
	for _, each := range []bool{false, true} {
		for _, units := range []int{1, 2, 7, 100} {
			c := &countTask{runs: make([]atomic.Int32, units)}
			if each {
				p.runEach(c, units, minChunkCost)
			} else {
				p.run(c, units, minChunkCost)
			}
			for u := range c.runs {
				if n := c.runs[u].Load(); n != 1 {
					t.Fatalf("each %v, %d units: unit %d ran %d times", each, units, u, n)
				}
			}
			if each && units > 1 && int(c.chunks.Load()) != units {
				t.Fatalf("runEach over %d units ran %d chunks", units, c.chunks.Load())
			}
		}
	}
}

// With every wake token lost (as an emulator whose memory model is weaker
// than Go's can lose them: pool.go, helperRecheck), sleeping helpers and
// a sleeping caller still find each op by looking again: every op ends,
// with each of its units run once.
func TestPoolLostWakes(t *testing.T) {
	p := newPool(3, false) // helpers sleep between ops
	p.loseWakes = true
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for op := range 6 {
			c := &countTask{runs: make([]atomic.Int32, 50)}
			p.runEach(c, len(c.runs), minChunkCost)
			for u := range c.runs {
				if n := c.runs[u].Load(); n != 1 {
					t.Errorf("op %d: unit %d ran %d times", op, u, n)
					return
				}
			}
			time.Sleep(time.Millisecond) // the helpers go back to sleep
		}
	}()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatal("an op did not end in 20 s with its wake tokens lost")
	}
	p.close()
}
