package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"folio/models/template"
	"folio/runner"
)

// loaded is a model in memory with its engine.
type loaded struct {
	entry    ModelEntry
	model    *runner.Model
	engine   *runner.Engine
	template string             // tokenizer.chat_template, "" when the file has none
	parsed   *template.Template // template, parsed at load; nil when it has none or does not parse
	loadTime time.Duration

	// guarded by manager.mu
	refs      int           // requests using it
	keepAlive time.Duration // after the last request; < 0: forever
	expires   time.Time     // zero while refs > 0 or keepAlive < 0
	timer     *time.Timer
	lastUse   time.Time
}

// manager loads models on first use, keeps them for keep_alive after
// their last request, and holds at most cfg.MaxLoaded at once; a request
// that needs another model while all are busy waits in queue (queue.go).
type manager struct {
	cfg *Config

	mu      sync.Mutex               // guards loaded, loading, queue and every loaded's mutable fields
	loaded  map[string]*loaded       // by file path
	loading map[string]chan struct{} // closed when the load in progress ends
	queue   slotQueue                // requests waiting for a model to unload
	closed  bool                     // closeAll ran: nothing loads again

	metrics *promMetrics // GET /metrics: its counters take every engine's finished requests
}

func newManager(cfg *Config) *manager {
	m := &manager{cfg: cfg, loaded: map[string]*loaded{}, loading: map[string]chan struct{}{}}
	m.metrics = newMetrics(m)
	return m
}

// keepAliveOf is the keep_alive a request asked for, or the default.
func (m *manager) keepAliveOf(d *time.Duration) time.Duration {
	if d == nil {
		return m.cfg.KeepAlive
	}
	if *d < 0 || *d >= time.Duration(math.MaxInt64) {
		return -1
	}
	return *d
}

// acquire returns the model of name, loading it if needed; release must
// be called when the request is done. keepAlive applies from then. When
// MaxLoaded models are loaded and busy, it waits in the queue until one
// can be unloaded, or until ctx ends.
func (m *manager) acquire(ctx context.Context, name string, keepAlive *time.Duration) (*loaded, func(), error) {
	ent, err := resolveModel(ctx, m.cfg, name)
	if err != nil {
		return nil, nil, err
	}
	ka := m.keepAliveOf(keepAlive)
	var w *waiter // this request's place in the queue while it has one
	for {
		m.mu.Lock()
		if m.closed {
			m.leaveLocked(w)
			m.mu.Unlock()
			return nil, nil, runner.ErrClosed
		}
		if l, ok := m.loaded[ent.Path]; ok && l.engine.Err() != nil { // a backend fault: load it again
			if l.refs > 0 {
				m.leaveLocked(w)
				m.mu.Unlock()
				return nil, nil, fmt.Errorf("%w: %s is being reloaded after a failure (%v): retry", runner.ErrBusy, ent.Name, l.engine.Err())
			}
			m.cfg.Log.Error("model failed; loading it again", "model", l.entry.Name, "err", l.engine.Err())
			m.unloadLocked(l)
		}
		l, isLoaded := m.loaded[ent.Path]
		if isLoaded && (l != m.queue.drain || m.firstLocked(w)) {
			if l == m.queue.drain {
				m.queue.drain = nil
			}
			m.leaveLocked(w)
			m.useLocked(l, ka)
			m.mu.Unlock()
			return l, func() { m.release(l) }, nil
		}
		if ch, ok := m.loading[ent.Path]; ok { // another request loads it
			m.leaveLocked(w)
			w = nil
			m.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		}
		if !isLoaded && m.firstLocked(w) && m.roomLocked() {
			m.leaveLocked(w)
			ch := make(chan struct{})
			m.loading[ent.Path] = ch
			m.mu.Unlock()

			l, err := m.load(ent)

			m.mu.Lock()
			delete(m.loading, ent.Path)
			close(ch)
			m.signalLocked() // the first waiter looks again: at a free slot, or at a model to drain
			if err == nil && m.closed {
				l.engine.Close()
				l.model.Close()
				err = runner.ErrClosed
			}
			if err != nil {
				m.mu.Unlock()
				return nil, nil, err
			}
			m.loaded[ent.Path] = l
			m.useLocked(l, ka)
			m.mu.Unlock()
			return l, func() { m.release(l) }, nil
		}
		if w == nil {
			if w, err = m.joinLocked(ent.Path); err != nil {
				m.mu.Unlock()
				return nil, nil, err
			}
		}
		changed := m.waitLocked(w)
		m.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			m.mu.Lock()
			m.leaveLocked(w)
			m.mu.Unlock()
			return nil, nil, ctx.Err()
		}
	}
}

// useLocked counts a request on l and holds it loaded until release.
func (m *manager) useLocked(l *loaded, keepAlive time.Duration) {
	l.refs++
	l.lastUse = m.cfg.Now()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.keepAlive, l.expires = keepAlive, time.Time{}
}

// load loads ent into the slot acquire reserved for it.
func (m *manager) load(ent ModelEntry) (*loaded, error) {
	if m.cfg.LoadModelHook != nil {
		m.cfg.LoadModelHook(ent)
	}
	start := time.Now()
	rm, err := runner.Load(ent.Path, m.cfg.Load)
	if errors.Is(err, runner.ErrKVType) && m.cfg.KVTypeFallback {
		// FOLIO_KV_CACHE_TYPE is the server's for every model; one it does
		// not suit (or a GPU without such a cache) gets F16, as Ollama's
		// OLLAMA_KV_CACHE_TYPE falls back
		m.cfg.Log.Warn("the K/V cache type does not suit this model here; using f16", "model", ent.Name,
			"kv_type", m.cfg.Load.KVType, "err", err)
		opt := m.cfg.Load
		opt.KVType = "f16"
		rm, err = runner.Load(ent.Path, opt)
	}
	if err != nil {
		return nil, err
	}
	if rm.Notice != "" {
		m.cfg.Log.Info(rm.Notice, "model", ent.Name) // where the model computes: news, not a fault
	}
	eopt := runner.EngineOptions{MaxQueue: m.cfg.MaxQueue, Finished: m.metrics.finished(ent.Name)}
	if m.cfg.Store != nil {
		eopt.Store, eopt.Fingerprint = m.cfg.Store, runner.Fingerprint(ent.Digest, rm)
	}
	e, err := runner.NewEngine(rm, eopt)
	if err != nil {
		rm.Close()
		return nil, err
	}
	spec := rm.KV.Spec()
	m.cfg.Log.Info("model loaded", "model", ent.Name, "path", ent.Path, "seconds", time.Since(start).Seconds(),
		"kv_type", spec.Type.String(), "kv_tokens", spec.Tokens(), "kv_bytes", rm.Bytes.KV)
	l := &loaded{entry: ent, model: rm, engine: e, template: rm.File.String("tokenizer.chat_template"),
		loadTime: time.Since(start), lastUse: m.cfg.Now()}
	if l.template != "" {
		if l.parsed, err = template.Parse(l.template); err != nil {
			m.cfg.Log.Warn("the model's chat template does not parse; chat will report it", "model", ent.Name, "err", err)
		}
	}
	return l, nil
}

func (m *manager) release(l *loaded) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l.refs--
	l.lastUse = m.cfg.Now()
	if l.refs == 0 && l.engine.Err() != nil {
		m.cfg.Log.Error("model failed; it loads again on the next request", "model", l.entry.Name, "err", l.engine.Err())
		m.unloadLocked(l)
		return
	}
	if l.refs > 0 {
		return
	}
	m.signalLocked() // a waiter may unload it now
	if l.keepAlive < 0 {
		return
	}
	if l.keepAlive == 0 {
		m.unloadLocked(l)
		return
	}
	l.expires = m.cfg.Now().Add(l.keepAlive)
	l.timer = time.AfterFunc(l.keepAlive, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if l.refs == 0 && !l.expires.IsZero() && m.loaded[l.entry.Path] == l {
			m.unloadLocked(l)
		}
	})
}

// unload ends a model now, or when its requests end (keep_alive 0 on a
// request without a prompt); a model that is not loaded stays so.
func (m *manager) unload(ctx context.Context, name string) error {
	ent, err := resolveModel(ctx, m.cfg, name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.loaded[ent.Path]; ok {
		if l.refs > 0 {
			l.keepAlive = 0
			return nil
		}
		m.unloadLocked(l)
	}
	return nil
}

func (m *manager) unloadLocked(l *loaded) {
	if m.loaded[l.entry.Path] != l {
		return
	}
	delete(m.loaded, l.entry.Path)
	if l.timer != nil {
		l.timer.Stop()
	}
	if m.queue.drain == l {
		m.queue.drain = nil
	}
	l.engine.Close()
	l.model.Close()
	m.cfg.Log.Info("model unloaded", "model", l.entry.Name)
	m.signalLocked() // its slot is free
}

// running lists the loaded models, most recently used first.
func (m *manager) running() []*loaded {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*loaded
	for _, l := range m.loaded {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *loaded) int { return b.lastUse.Compare(a.lastUse) })
	return out
}

// expiry is when l unloads: far future when kept forever, now + keep
// alive while busy.
func (m *manager) expiry(l *loaded) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case l.keepAlive < 0:
		return time.Date(2318, 11, 4, 0, 0, 0, 0, time.UTC)
	case l.expires.IsZero():
		return m.cfg.Now().Add(l.keepAlive)
	}
	return l.expires
}

// closeAll unloads every model; requests still waiting for one end
// with runner.ErrClosed.
func (m *manager) closeAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, l := range m.loaded {
		m.unloadLocked(l)
	}
	m.signalLocked()
}
