package store

import (
	"context"
	"path/filepath"
	"sync"
)

// The write-behind path: SaveBlock, LoadBlock (deletions and last-use
// updates) and Flush push to the queue; one writer goroutine, started by
// Open, takes batches from it and writes each in one transaction, then
// enforces the budget in the same transaction.

type opKind uint8

const (
	opSave   opKind = iota // insert a block unless its key is stored
	opDelete               // delete a block that failed verification
)

// op is one queued write.
type op struct {
	kind     opKind
	seq      uint64 // position in the queue (queue.enq at push)
	key      key
	id       int64 // opDelete: the row LoadBlock read (0: any row of key)
	parent   [32]byte
	tokens   []byte // little-endian int32
	data     []byte
	dtype    string
	lastUsed int64 // unix ns
}

// queue is the write-behind queue. All fields are guarded by mu; cond
// (on mu) is broadcast when work is pushed, a batch is finished, Flush
// asks for the pending last-use updates, or Close begins.
type queue struct {
	mu   sync.Mutex
	cond sync.Cond

	ops     []op
	bytes   int64            // data bytes in ops and in the batch being written
	max     int64            // bound on bytes
	batch   int64            // data bytes a batch takes at most (batchBytes)
	pending map[key]struct{} // saves in ops or in the batch being written
	touches map[int64]int64  // row id -> last use (unix ns), not yet written
	enq     uint64           // pushes and touches so far
	done    uint64           // every push and touch numbered <= done is written (or failed)
	closing bool             // Close has begun: pushes are refused
	exited  bool             // the writer has returned
}

func (q *queue) init(max, batch int64) {
	if max <= 0 {
		max = defaultQueue
	}
	q.cond.L = &q.mu
	q.max = max
	q.batch = batch
	q.pending = map[key]struct{}{}
	q.touches = map[int64]int64{}
}

// push queues o, whose data is n bytes. It reports false, queuing
// nothing, when the queue is closing or would exceed its bound. A save of
// a key already queued is a no-op that reports true.
func (q *queue) push(o op, n int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing {
		return false
	}
	if o.kind == opSave {
		if _, ok := q.pending[o.key]; ok {
			return true
		}
		if q.bytes+n > q.max {
			return false
		}
		q.pending[o.key] = struct{}{}
	}
	q.bytes += n
	q.enq++
	o.seq = q.enq
	q.ops = append(q.ops, o)
	q.cond.Broadcast()
	return true
}

// touch records a last use of row id. It does not wake the writer: the
// update rides along with the next batch, or Flush, or Close.
func (q *queue) touch(id, now int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closing {
		return
	}
	q.touches[id] = now
	q.enq++
}

// flush waits until everything pushed or touched before the call is done.
func (q *queue) flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	target := q.enq
	q.cond.Broadcast() // the writer may be asleep with touches pending
	for q.done < target && !q.exited {
		q.cond.Wait()
	}
}

// batch is what the writer takes from the queue at once.
type batch struct {
	ops     []op
	touches map[int64]int64
	bytes   int64
	seq     uint64 // done becomes seq once the batch is written
}

// take waits for work and removes a batch of at most q.batch bytes of
// data (at least one op) and all touches. It reports false when the queue
// is closing and empty; the writer then returns.
func (q *queue) take() (batch, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ops) == 0 && len(q.touches) == 0 && !q.closing {
		q.cond.Wait()
	}
	if len(q.ops) == 0 && len(q.touches) == 0 {
		q.exited = true
		q.cond.Broadcast()
		return batch{}, false
	}
	var b batch
	n := 0
	for n < len(q.ops) && (n == 0 || b.bytes+int64(len(q.ops[n].data)) <= q.batch) {
		b.bytes += int64(len(q.ops[n].data))
		n++
	}
	b.ops = q.ops[:n:n]
	q.ops = q.ops[n:]
	b.touches, q.touches = q.touches, map[int64]int64{}
	if len(q.ops) == 0 {
		b.seq = q.enq
	} else {
		b.seq = b.ops[n-1].seq
	}
	return b, true
}

// finish marks b written: its bytes leave the bound, its keys leave
// pending (the index has them by now) and Flush waiters wake.
func (q *queue) finish(b batch) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bytes -= b.bytes
	for _, o := range b.ops {
		if o.kind == opSave {
			delete(q.pending, o.key)
		}
	}
	q.done = max(q.done, b.seq)
	q.cond.Broadcast()
}

func (s *KVStore) touch(id int64) {
	s.q.touch(id, s.now().UnixNano())
}

// writeLoop is the writer goroutine: the only one that writes kvcache.db.
// Its first task, trim, is the queue's first sequence number (openKV
// counts it), so a Flush after Open waits for it.
func (s *KVStore) writeLoop(ctx context.Context) {
	defer close(s.writerDone)
	s.trim(ctx)
	s.q.finish(batch{seq: 1})
	for {
		b, ok := s.q.take()
		if !ok {
			return
		}
		s.writeBatch(ctx, b)
		s.q.finish(b)
	}
}

// written is a block a batch stored (or found stored).
type written struct {
	key  key
	info blockInfo
}

// writeBatch writes b in one transaction, retrying twice if another
// process holds the write lock past the busy timeout, checkpoints the
// WAL and updates the index. A batch that fails is dropped (counted and
// logged).
func (s *KVStore) writeBatch(ctx context.Context, b batch) {
	saves := 0
	sums := make([][8]byte, len(b.ops))
	for i, o := range b.ops {
		if o.kind == opSave {
			sums[i] = checksum(o.tokens, o.data) // before BEGIN: the lock is held briefly
			saves++
		}
	}
	var (
		added, evicted []written
		err            error
	)
	for attempt := 0; attempt < 3; attempt++ {
		added, evicted, err = s.writeTx(ctx, b, sums)
		if err == nil || !isBusy(err) {
			break
		}
	}
	if err != nil {
		s.dropped.Add(int64(saves))
		if isCorrupt(err) {
			s.markDamaged(err)
		}
		switch {
		case ctx.Err() != nil:
		case isFull(err):
			// once per episode: every batch fails while the disk is full
			if !s.diskFull.Swap(true) {
				s.log.Warn("store: the disk holding the persisted K/V cache is full; new prefix blocks are dropped (requests go on, computing their prompts): free disk space or lower FOLIO_KV_STORE_MAX",
					"file", filepath.Join(s.home, kvFile), "err", err)
			}
		default:
			s.log.Warn("store: persisted K/V write failed; blocks dropped", "blocks", saves, "err", err)
		}
		return
	}
	s.checkpoint(ctx)
	if s.diskFull.Swap(false) {
		s.log.Info("store: persisted K/V writes resumed after a full disk")
	}
	s.idxMu.Lock()
	for _, w := range added {
		addToIndex(s.idx, w.key, w.info)
	}
	for _, w := range evicted {
		removeFromIndex(s.idx, w.key)
	}
	s.idxMu.Unlock()
	if len(evicted) > 0 {
		s.log.Debug("store: evicted persisted K/V blocks over budget", "blocks", len(evicted), "budget", s.kvMax)
	}
}

// writeTx is one batch's transaction: inserts, deletions, last-use
// updates, then eviction of the least recently used blocks while the
// pages in use exceed the budget (kvbudget.go). It returns the blocks
// stored and evicted.
func (s *KVStore) writeTx(ctx context.Context, b batch, sums [][8]byte) (added, evicted []written, err error) {
	tx, err := s.kv.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	insBlock, err := tx.PrepareContext(ctx, `INSERT INTO kv_blocks
		(fingerprint, hash, parent, dtype, bytes, last_used, checksum, tokens)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`)
	if err != nil {
		return nil, nil, err
	}
	insData, err := tx.PrepareContext(ctx, "INSERT INTO kv_data (id, data) VALUES (?, ?)")
	if err != nil {
		return nil, nil, err
	}
	for i, o := range b.ops {
		switch o.kind {
		case opSave:
			r, err := insBlock.ExecContext(ctx, o.key.fp, o.key.hash[:], o.parent[:], o.dtype,
				len(o.data), o.lastUsed, sums[i][:], o.tokens)
			if err != nil {
				return nil, nil, err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				id, _ := r.LastInsertId()
				if _, err := insData.ExecContext(ctx, id, o.data); err != nil {
					return nil, nil, err
				}
			}
			// Stored now, by this batch or before it by another process.
			added = append(added, written{o.key, blockInfo{int64(len(o.data)), int32(len(o.tokens) / 4)}})
		case opDelete:
			_, err := tx.ExecContext(ctx, "DELETE FROM kv_blocks WHERE fingerprint = ?1 AND hash = ?2 AND (?3 = 0 OR id = ?3)",
				o.key.fp, o.key.hash[:], o.id)
			if err != nil {
				return nil, nil, err
			}
		}
	}
	for id, t := range b.touches {
		if _, err := tx.ExecContext(ctx, "UPDATE kv_blocks SET last_used = ?1 WHERE id = ?2 AND last_used < ?1", t, id); err != nil {
			return nil, nil, err
		}
	}
	if evicted, err = s.evict(ctx, tx); err != nil {
		return nil, nil, err
	}
	return added, evicted, tx.Commit()
}
