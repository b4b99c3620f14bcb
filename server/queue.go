package server

import (
	"fmt"
	"slices"

	"folio/runner"
)

// When MaxLoaded models are loaded or loading and every one has requests,
// a request for another model waits in a queue, in arrival order, as
// Ollama's scheduler queues it, instead of being refused. Only the first
// waiter may take a slot that frees (an idle model it unloads, or a load
// that failed). While it waits, no new request starts on the least
// recently used loaded model (the drain): that model's requests run out,
// it goes idle and the first waiter unloads it, so a model kept busy by a
// stream of requests cannot hold the queue forever. Requests for the
// other loaded models run as they come. A queue of MaxQueue waiters
// (FOLIO_MAX_QUEUE) answers 503; a waiter whose request ends leaves it.

// waiter is a request's place in the queue. (Not an empty struct:
// pointers to those need not differ.)
type waiter struct{ path string }

// slotQueue is the manager's queue; manager.mu guards it.
type slotQueue struct {
	waiters []*waiter     // in arrival order: waiters[0] takes the next free slot
	drain   *loaded       // the model waiters[0] waits on to unload; nil: none chosen yet
	changed chan struct{} // closed when a slot may have freed; nil until someone waits
}

// firstLocked reports whether the request holding w may take a free
// slot: w is first in the queue, or w is nil (not queued) and nobody
// waits.
func (m *manager) firstLocked(w *waiter) bool {
	if w == nil {
		return len(m.queue.waiters) == 0
	}
	return m.queue.waiters[0] == w
}

// roomLocked unloads idle models, least recently used first, until a
// model can load under MaxLoaded, and reports whether one can.
func (m *manager) roomLocked() bool {
	for len(m.loaded)+len(m.loading) >= m.cfg.MaxLoaded {
		victim := m.lruLocked(func(l *loaded) bool { return l.refs == 0 })
		if victim == nil {
			return false
		}
		m.unloadLocked(victim)
	}
	return true
}

// lruLocked is the least recently used loaded model that ok accepts, or nil.
func (m *manager) lruLocked(ok func(*loaded) bool) *loaded {
	var lru *loaded
	for _, l := range m.loaded {
		if ok(l) && (lru == nil || l.lastUse.Before(lru.lastUse)) {
			lru = l
		}
	}
	return lru
}

// joinLocked queues a request for the model at path at the end, or refuses it when MaxQueue
// requests wait already.
func (m *manager) joinLocked(path string) (*waiter, error) {
	if m.cfg.MaxQueue > 0 && len(m.queue.waiters) >= m.cfg.MaxQueue {
		return nil, fmt.Errorf("%w: %d of FOLIO_MAX_LOADED_MODELS=%d models are loaded or loading, none idle, and the queue of FOLIO_MAX_QUEUE=%d requests waiting for one to unload is full: retry later, or raise FOLIO_MAX_QUEUE or FOLIO_MAX_LOADED_MODELS",
			runner.ErrBusy, len(m.loaded)+len(m.loading), m.cfg.MaxLoaded, m.cfg.MaxQueue)
	}
	w := &waiter{path}
	m.queue.waiters = append(m.queue.waiters, w)
	return w, nil
}

// waitLocked returns the channel on which w waits for its next look; for
// the first waiter it first picks the model to drain.
func (m *manager) waitLocked(w *waiter) <-chan struct{} {
	if m.firstLocked(w) && m.queue.drain == nil {
		m.queue.drain = m.lruLocked(func(*loaded) bool { return true })
	}
	if m.queue.changed == nil {
		m.queue.changed = make(chan struct{})
	}
	return m.queue.changed
}

// leaveLocked takes w out of the queue; nil is no place.
func (m *manager) leaveLocked(w *waiter) {
	i := slices.Index(m.queue.waiters, w)
	if w == nil || i < 0 {
		return
	}
	m.queue.waiters = slices.Delete(m.queue.waiters, i, i+1)
	if i == 0 { // the next waiter picks its own drain
		m.queue.drain = nil
		m.signalLocked()
	}
}

// signalLocked wakes every waiter to look again: a model went idle or
// unloaded, a load failed, or the first waiter left.
func (m *manager) signalLocked() {
	if m.queue.changed != nil {
		close(m.queue.changed)
		m.queue.changed = nil
	}
}
