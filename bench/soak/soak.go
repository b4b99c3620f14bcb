package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/server"
)

// Config is one soak run. Zero fields take the defaults of main's flags.
type Config struct {
	Duration time.Duration
	Clients  int
	Epochs   int // quiet points; 0: one per 30 s of Duration, at least 2
	Seed     uint64
	NumCtx   int
	KVTokens int
	Prompts  int
	Preset   string    // the synthetic model's shape (models/synth); "": tiny
	Progress io.Writer // a line per quiet point; nil: none
}

func (c *Config) defaults() {
	if c.Duration <= 0 {
		c.Duration = time.Minute
	}
	if c.Clients <= 0 {
		c.Clients = 64
	}
	if c.Epochs <= 0 {
		c.Epochs = max(2, int(c.Duration/(30*time.Second)))
	}
	if c.NumCtx <= 0 {
		c.NumCtx = 256
	}
	if c.KVTokens <= 0 {
		c.KVTokens = 4096
	}
	if c.Prompts <= 0 {
		c.Prompts = 48
	}
	if c.Preset == "" {
		c.Preset = "tiny"
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
}

// modelName is the synthetic model's name in the server's library.
const modelName = "folio-soak"

// rig is the server under test and what the clients share.
type rig struct {
	cfg    Config
	dir    string
	srv    *server.Server
	hs     *http.Server
	addr   string // 127.0.0.1:port
	client *http.Client
	logs   *logCounter
	jobs   []job
	refs   []answer // refs[i]: job i run alone
	// long are prompts over num_ctx that the server truncates;
	// longRefs[i] is long[i] run alone
	long     []job
	longRefs []answer

	// gate lets clients run (read side, one hold per request) until a
	// quiet point takes it (write side: it waits for requests in flight
	// and keeps new ones out).
	gate sync.RWMutex
	stop atomic.Bool
	// handlers counts requests the server is still handling: a client that
	// disconnected is done before its handler notices, and that handler
	// can still release the model (unloading it, after an unload request).
	handlers atomic.Int64

	rep *Report
}

// Run starts the server, computes the solo references, runs the clients
// for cfg.Duration with a quiet point after each epoch, shuts everything
// down and returns the figures. An error means the run could not be set
// up; the checks' outcomes are in the report.
func Run(cfg Config) (*Report, error) {
	cfg.defaults()
	rep := &Report{Config: cfg}
	rep.Goroutines.Start = settledGoroutines(0)
	r, err := start(cfg, rep)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(r.dir)
	if err := r.references(); err != nil {
		r.shutdown()
		return nil, err
	}
	// warm-up: a short burst, so that baselines are taken in the state
	// every later quiet point is in (model loaded, pools grown)
	r.clients(min(cfg.Duration/10, 5*time.Second))
	if err := r.quiet(0); err != nil {
		r.shutdown()
		return nil, err
	}
	begin := time.Now()
	epoch := cfg.Duration / time.Duration(cfg.Epochs)
	for i := 1; i <= cfg.Epochs; i++ {
		r.clients(epoch)
		if err := r.quiet(i); err != nil {
			r.shutdown()
			return nil, err
		}
	}
	rep.Elapsed = time.Since(begin)
	r.shutdown()
	rep.Goroutines.End = settledGoroutines(rep.Goroutines.Start)
	rep.Loads, rep.Unloads = r.logs.counts()
	rep.Warnings = r.logs.warnings()
	return rep, nil
}

// start writes the model and starts the server on 127.0.0.1:0.
func start(cfg Config, rep *Report) (*rig, error) {
	dir, err := os.MkdirTemp("", "folio-soak-")
	if err != nil {
		return nil, err
	}
	sc, err := synth.Preset(cfg.Preset)
	if err != nil {
		return nil, err
	}
	sc.Type, sc.Seed = gguf.TypeQ8_0, cfg.Seed
	sm, err := synth.New(sc)
	if err != nil {
		return nil, err
	}
	if err := sm.WriteFile(filepath.Join(dir, modelName+".gguf")); err != nil {
		return nil, err
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	logs := &logCounter{}
	// K/V bytes per token in f16: layers × K/V heads × head size × (K+V) × 2 bytes
	kvBytes := int64(cfg.KVTokens) * int64(sc.Layers*sc.HeadsKV*(sc.Embd/sc.Heads)*2*2)
	srv := server.New(server.Config{Registry: reg, Version: "soak", Log: slog.New(logs),
		Load: runner.LoadOptions{NumCtx: cfg.NumCtx, KVMemory: kvBytes}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.Clients
	r := &rig{cfg: cfg, dir: dir, srv: srv, addr: ln.Addr().String(),
		client: &http.Client{Transport: tr}, logs: logs, rep: rep}
	r.hs = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.handlers.Add(1)
		defer r.handlers.Add(-1)
		srv.ServeHTTP(w, req)
	})}
	go r.hs.Serve(ln)
	r.jobs = makeJobs(cfg.Prompts, cfg.NumCtx, cfg.Seed)
	r.long = makeLongJobs(4, cfg.NumCtx, cfg.Seed)
	return r, nil
}

// references runs every job alone, one at a time, on the idle server.
func (r *rig) references() error {
	r.refs = make([]answer, len(r.jobs))
	for i, j := range r.jobs {
		a, err := r.complete(context.Background(), j, true, false, nil)
		if err != nil {
			return fmt.Errorf("solo run of prompt %d: %w", i, err)
		}
		if a.text == "" && a.evalCount == 0 {
			return fmt.Errorf("solo run of prompt %d generated nothing", i)
		}
		r.refs[i] = a
	}
	r.longRefs = make([]answer, len(r.long))
	for i, j := range r.long {
		a, err := r.complete(context.Background(), j, true, false, nil)
		if err != nil {
			return fmt.Errorf("solo run of long prompt %d: %w", i, err)
		}
		r.longRefs[i] = a
	}
	return nil
}

// clients runs cfg.Clients clients for d, then waits for their last
// requests.
func (r *rig) clients(d time.Duration) {
	r.stop.Store(false)
	var wg sync.WaitGroup
	for c := range r.cfg.Clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(c)<<32|uint64(r.rep.Requests.Load())))
			for !r.stop.Load() {
				r.gate.RLock()
				r.one(rng)
				r.gate.RUnlock()
			}
		})
	}
	time.Sleep(d)
	r.stop.Store(true)
	wg.Wait()
}

// quiet is a quiet point: no request is in flight. It checks the block
// pool (every block free once cached prefixes are dropped), goroutines
// and heap against the baseline of quiet point 0, then unloads the model
// (the next request loads it again).
func (r *rig) quiet(n int) error {
	r.gate.Lock()
	defer r.gate.Unlock()
	if err := r.drain(30 * time.Second); err != nil {
		return fmt.Errorf("quiet point %d: %w", n, err)
	}
	e := r.srv.Engine(modelName)
	if e == nil { // unloaded by an unload request: load it to check a live pool
		if err := r.post(context.Background(), "/api/generate", fmt.Sprintf(`{"model":%q}`, modelName), 200); err != nil {
			return fmt.Errorf("quiet point %d: load: %w", n, err)
		}
		if e = r.srv.Engine(modelName); e == nil {
			return fmt.Errorf("quiet point %d: the model is not loaded after a load request", n)
		}
	}
	st := e.Stats()
	e.DropPrefixCache()
	free := e.FreeBlocks()
	q := Quiet{N: n, Blocks: st.Blocks, Free: free, Queued: st.Queued, PeakBlocks: st.PeakBlocks}
	r.client.CloseIdleConnections()
	if n == 0 {
		q.Goroutines = settledGoroutines(0)
		r.rep.Goroutines.Loaded = q.Goroutines
	} else {
		q.Goroutines = settledGoroutines(r.rep.Goroutines.Loaded)
	}
	q.Heap = heapAfterGC()
	if r.srv.Engine(modelName) != e {
		return fmt.Errorf("quiet point %d: the model unloaded while its goroutines and heap were measured", n)
	}
	if n == 0 {
		r.rep.HeapBase = q.Heap
	}
	if err := r.post(context.Background(), "/api/generate", fmt.Sprintf(`{"model":%q,"keep_alive":0}`, modelName), 200); err != nil {
		return fmt.Errorf("quiet point %d: unload: %w", n, err)
	}
	q.Unloaded = r.srv.Engine(modelName) == nil
	r.rep.Quiets = append(r.rep.Quiets, q)
	fmt.Fprintf(r.cfg.Progress, "quiet %2d: %6d served, blocks %d/%d free, queued %d, goroutines %d, heap %.1f MiB, unloaded %v\n",
		n, r.rep.Served.Load(), free, st.Blocks, st.Queued, q.Goroutines, float64(q.Heap)/(1<<20), q.Unloaded)
	return nil
}

// drain waits up to limit for the server's handlers to finish (the
// clients have all returned by the time a quiet point runs).
func (r *rig) drain(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for r.handlers.Load() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d requests still being handled %v after every client returned", r.handlers.Load(), limit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// shutdown stops the HTTP server and unloads every model.
func (r *rig) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.hs.Shutdown(ctx)
	r.srv.Close()
	r.client.CloseIdleConnections()
}

// settledGoroutines waits up to 10 s for the goroutine count to come down
// to want (0: take it as it is after a short settle) and returns it.
func settledGoroutines(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	n := runtime.NumGoroutine()
	for (want == 0 || n > want) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		if want == 0 && runtime.NumGoroutine() == n {
			return n
		}
		n = runtime.NumGoroutine()
	}
	return n
}

// heapAfterGC is the live heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// logCounter is the server's log: it counts model loads and unloads and
// keeps warnings and errors.
type logCounter struct {
	mu             sync.Mutex // guards the fields below
	loads, unloads int
	warns          []string
}

func (h *logCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCounter) Handle(_ context.Context, rec slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case rec.Message == "model loaded":
		h.loads++
	case rec.Message == "model unloaded":
		h.unloads++
	case rec.Level >= slog.LevelWarn:
		var b strings.Builder
		b.WriteString(rec.Message)
		rec.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
		h.warns = append(h.warns, b.String())
	}
	return nil
}

func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }

func (h *logCounter) counts() (loads, unloads int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.loads, h.unloads
}

func (h *logCounter) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.warns...)
}
