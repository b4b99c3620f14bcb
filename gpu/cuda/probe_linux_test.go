//go:build linux

package cuda

import (
	"runtime"
	"sync"
	"syscall"
	"testing"
)

// Probe reads a device's free memory on the thread where it made the
// context current, and leaves no released context current. The fake
// driver keeps the current context per thread, as CUDA does, and moves the
// caller to another thread inside cuCtxSetCurrent unless it is locked to
// its own: a goroutine that ends locked to its thread ends the thread.
func TestProbeKeepsItsThreadAndLeavesNoContextCurrent(t *testing.T) {
	f := newFakeGPU()
	d := f.driver()
	var mu sync.Mutex
	current := map[int]uintptr{} // by thread
	retained := 0
	d.PrimaryCtxRetain = func(c *uintptr, _ int32) result {
		mu.Lock()
		defer mu.Unlock()
		*c = 7
		retained++
		return 0
	}
	d.PrimaryCtxRelease = func(int32) result {
		mu.Lock()
		defer mu.Unlock()
		retained--
		return 0
	}
	d.CtxSetCurrent = func(c uintptr) result {
		mu.Lock()
		current[syscall.Gettid()] = c
		mu.Unlock()
		for range 4 {
			done := make(chan struct{})
			go func() {
				runtime.LockOSThread()
				close(done)
			}()
			<-done
		}
		return 0
	}
	d.MemGetInfo = func(free, total *uint64) result {
		mu.Lock()
		defer mu.Unlock()
		if current[syscall.Gettid()] == 0 {
			return 201 // CUDA_ERROR_INVALID_CONTEXT
		}
		*free, *total = 40<<30, 140<<30
		return 0
	}
	info, err := probe(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Devices) != 1 || info.Devices[0].FreeBytes != 40<<30 {
		t.Errorf("devices %+v: want 40 GiB free, read on the context's thread", info.Devices)
	}
	mu.Lock()
	defer mu.Unlock()
	for tid, c := range current {
		if c != 0 && retained == 0 {
			t.Errorf("thread %d keeps context %#x current after its release", tid, c)
		}
	}
}
