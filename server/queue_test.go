package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"folio/internal/fixtures"
	"folio/runner"
)

// newQueueManager is a manager over a library of four models, a, b, c and
// d (copies of stories260K, so four files, four slots).
func newQueueManager(t *testing.T, maxLoaded, maxQueue int) *manager {
	t.Helper()
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c", "d"} {
		if err := os.WriteFile(filepath.Join(dir, n+".gguf"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	cfg := &Config{Registry: reg, Load: runner.LoadOptions{NumCtx: 256}, MaxLoaded: maxLoaded, MaxQueue: maxQueue,
		KeepAlive: time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}
	m := newManager(cfg)
	t.Cleanup(m.closeAll)
	return m
}

// loadedNames are the models m holds, sorted.
func (m *manager) loadedNames() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for _, l := range m.loaded {
		names = append(names, strings.TrimSuffix(l.entry.Name, ":latest"))
	}
	slices.Sort(names)
	return names
}

func (m *manager) queued() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue.waiters)
}

// eventually fails t unless cond holds within 10 s (it polls state; the
// fix makes each wait end at once, the bugs it checks for never).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still not %s after 10 s", what)
		}
	}
}

type acquired struct {
	release func()
	err     error
}

// acquireAsync acquires name in a goroutine; the result comes on the channel.
func acquireAsync(ctx context.Context, m *manager, name string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		_, release, err := m.acquire(ctx, name, nil)
		ch <- acquired{release, err}
	}()
	return ch
}

func must(t *testing.T, m *manager, name string) func() {
	t.Helper()
	_, release, err := m.acquire(context.Background(), name, nil)
	if err != nil {
		t.Fatalf("acquire %s: %v", name, err)
	}
	return release
}

func got(t *testing.T, ch <-chan acquired, name string) func() {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("queued acquire of %s: %v", name, r.err)
		}
		return r.release
	case <-time.After(10 * time.Second):
		t.Fatalf("queued acquire of %s did not end 10 s after its slot freed", name)
	}
	return nil
}

// TestQueueWaitsForSlot: with FOLIO_MAX_LOADED_MODELS models busy, a
// request for another model waits (it used to get 503 at once) and loads
// when one goes idle; meanwhile no new request starts on the model it will
// unload (the least recently used), while the other loaded model serves
// new requests at once.
func TestQueueWaitsForSlot(t *testing.T) {
	m := newQueueManager(t, 2, 0)
	relA := must(t, m, "a")
	relB := must(t, m, "b")

	c := acquireAsync(context.Background(), m, "c")
	eventually(t, "queued for c", func() bool { return m.queued() == 1 })
	a2 := acquireAsync(context.Background(), m, "a") // a is c's to unload: it waits too
	eventually(t, "queued for a", func() bool { return m.queued() == 2 })
	must(t, m, "b")() // b serves at once
	if names := m.loadedNames(); !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("loaded %v while c waits, want [a b]", names)
	}

	relA() // a goes idle: c unloads it and loads
	relC := got(t, c, "c")
	if names := m.loadedNames(); !slices.Equal(names, []string{"b", "c"}) {
		t.Fatalf("loaded %v after a went idle, want [b c]", names)
	}
	// the request for a now waits first, on b (the least recently used)
	eventually(t, "a first in the queue", func() bool { return m.queued() == 1 })
	relB()
	relA2 := got(t, a2, "a")
	if names := m.loadedNames(); !slices.Equal(names, []string{"a", "c"}) {
		t.Fatalf("loaded %v after b went idle, want [a c]", names)
	}
	relA2()
	relC()
	if n := m.queued(); n != 0 {
		t.Errorf("%d still queued", n)
	}
}

// TestQueueFullAndCancel: a full queue (FOLIO_MAX_QUEUE) answers 503 with
// the right counts, and a request that ends while queued leaves the queue.
func TestQueueFullAndCancel(t *testing.T) {
	m := newQueueManager(t, 1, 1)
	relA := must(t, m, "a")

	ctx, cancel := context.WithCancel(context.Background())
	b := acquireAsync(ctx, m, "b")
	eventually(t, "queued for b", func() bool { return m.queued() == 1 })

	_, _, err := m.acquire(context.Background(), "c", nil)
	want := "1 of FOLIO_MAX_LOADED_MODELS=1 models are loaded or loading, none idle, and the queue of FOLIO_MAX_QUEUE=1 requests"
	if !errors.Is(err, runner.ErrBusy) || !strings.Contains(err.Error(), want) {
		t.Fatalf("acquire with the queue full: %v; want ErrBusy saying %q", err, want)
	}

	cancel()
	if r := <-b; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled queued acquire: %v, want context.Canceled", r.err)
	}
	eventually(t, "out of the queue", func() bool { return m.queued() == 0 })

	c := acquireAsync(context.Background(), m, "c") // its place is free again
	eventually(t, "queued for c", func() bool { return m.queued() == 1 })
	relA()
	got(t, c, "c")()
	if names := m.loadedNames(); !slices.Equal(names, []string{"c"}) {
		t.Errorf("loaded %v, want [c]", names)
	}
}

// TestQueueEndsOnClose: requests waiting for a model when the server
// closes end with ErrClosed instead of loading a model after the close.
func TestQueueEndsOnClose(t *testing.T) {
	m := newQueueManager(t, 1, 0)
	relA := must(t, m, "a")
	defer relA()
	b := acquireAsync(context.Background(), m, "b")
	eventually(t, "queued for b", func() bool { return m.queued() == 1 })
	m.closeAll()
	if r := <-b; !errors.Is(r.err, runner.ErrClosed) {
		t.Errorf("waiter after close: %v, want ErrClosed", r.err)
	}
	if names := m.loadedNames(); len(names) != 0 {
		t.Errorf("loaded %v after close", names)
	}
}
