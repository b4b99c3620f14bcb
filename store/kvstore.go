package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// KVOptions configure OpenKV. The zero value is usable.
type KVOptions struct {
	// MaxBytes is the budget of the persisted K/V cache's files on disk
	// (kvcache.db and its -wal and -shm; see kvbudget.go); least recently
	// used blocks are deleted beyond it. 0: min(10% of the free disk space
	// at home plus the cache's own size, 20 GB). Otherwise at least 1 MiB.
	// The caller takes it from FOLIO_KV_STORE_MAX.
	MaxBytes int64
	// QueueBytes bounds the block data waiting in the write-behind queue;
	// SaveBlock drops blocks beyond it. 0: 256 MiB.
	QueueBytes int64
	// Log receives one line per recovery or failed write. nil: slog.Default().
	Log *slog.Logger
	// Now is the clock for last_used (LRU) and timestamps. nil: time.Now.
	Now func() time.Time
	// Remote is the shared tier behind this file (OpenRemote); the
	// KVStore owns it from then on and closes it. nil: none.
	Remote *RemoteKV
}

// KVStore is the persisted prefix K/V, kvcache.db in the home directory:
// full K/V blocks kept across restarts. It is disposable: a damaged file
// is moved aside and replaced by an empty one. Its methods are safe for
// concurrent use; see the package doc for the locks. Several processes
// may open one home directory (SQLite WAL and a busy timeout keep it
// consistent). A KVStore whose file could not be used (a newer schema, a
// nearly full disk) stays open and off: it holds nothing and saves
// nothing, and KVBudget says so.
type KVStore struct {
	home string
	log  *slog.Logger
	now  func() time.Time

	kv     *sql.DB   // kvcache.db; nil when the store is off
	remote *RemoteKV // the shared tier; nil: none

	kvMax    int64     // budget of kvcache.db's files, fixed at OpenKV
	loadStmt *sql.Stmt // LoadBlock's query, prepared on kv

	idxMu sync.RWMutex
	idx   map[string]*fpIndex // guarded by idxMu: the blocks this process knows are stored

	q         queue        // write-behind queue, guarded by q.mu
	dropped   atomic.Int64 // blocks SaveBlock dropped (queue full) or the writer failed to write
	corrupted atomic.Int64 // blocks LoadBlock found damaged (logged once, then counted)
	diskFull  atomic.Bool  // the writer's last batch failed for a full disk (logged once)

	cancel     context.CancelFunc // stops the writer's statements when Close gives up waiting
	writerDone chan struct{}      // closed when the writer goroutine returns
	closeOnce  sync.Once
	closeErr   error
}

// OpenKV opens (creating if needed) the home directory and kvcache.db,
// loads the index of its blocks and starts the writer. The home is made
// and tightened as OpenRegistry does. A damaged kvcache.db is moved aside
// and replaced by an empty one.
func OpenKV(home string, opt KVOptions) (*KVStore, error) {
	if opt.MaxBytes != 0 {
		if err := checkKVMax(opt.MaxBytes); err != nil {
			return nil, err
		}
	}
	s := &KVStore{home: home, log: opt.Log, now: opt.Now, idx: map[string]*fpIndex{}, remote: opt.Remote}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if err := openHome(home, s.log); err != nil {
		s.closeRemote()
		return nil, err
	}
	if err := s.openKV(opt); err != nil {
		s.closeRemote()
		return nil, err
	}
	return s, nil
}

// openKV opens kvcache.db, loads its index and starts the writer. A file
// that is damaged (or marked damaged by an earlier run) is moved aside and
// replaced by an empty cache, with one log line; the copy moved aside is
// removed by the first OpenKV 7 days later.
func (s *KVStore) openKV(opt KVOptions) error {
	path := filepath.Join(s.home, kvFile)
	removed, err := removeOldCopies(path, s.now())
	if len(removed) > 0 {
		s.log.Info("store: removed the copy of a damaged K/V cache moved aside more than 7 days ago", "files", removed)
	}
	if err != nil {
		s.log.Warn("store: cannot remove the copy of a damaged K/V cache moved aside more than 7 days ago", "err", err)
	}
	if _, statErr := os.Stat(path + damagedSuffix); statErr == nil {
		err = errMarkedDamaged
	} else {
		err = s.openKVFile(path)
	}
	if err != nil && isCorrupt(err) {
		aside, mvErr := moveAside(path, s.now())
		if mvErr != nil {
			return fmt.Errorf("store: %s is damaged (%v) and cannot be moved aside: %w", path, err, mvErr)
		}
		s.log.Warn("store: persisted K/V cache was damaged; moved it aside and started an empty one", "file", path, "moved_to", aside, "err", err)
		err = s.openKVFile(path)
	}
	if errors.Is(err, errNewerSchema) {
		s.log.Warn("store: persisted K/V cache is off for this process", "file", path, "err", err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: open %s: %w", path, err)
	}

	s.kvMax = opt.MaxBytes
	if s.kvMax == 0 {
		s.kvMax = s.defaultBudget(path)
	}
	if err := checkKVMax(s.kvMax); err != nil { // a default budget on a nearly full disk
		s.log.Warn("store: persisted K/V cache is off for this process: the disk is nearly full", "file", path, "err", err)
		s.loadStmt.Close()
		s.kv.Close()
		s.kv, s.idx = nil, map[string]*fpIndex{}
		return nil
	}
	s.q.init(opt.QueueBytes, batchBytes(s.kvMax))
	s.q.enq = 1 // the writer's first task, trim
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.writerDone = make(chan struct{})
	go s.writeLoop(ctx)
	return nil
}

// openKVFile opens and checks one kvcache.db and loads the index; on
// error nothing stays open.
func (s *KVStore) openKVFile(path string) (err error) {
	db, err := openDB(path, "NORMAL", kvPageSize)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			db.Close()
		}
	}()
	if err = migrate(db, kvMigrations); err != nil {
		return err
	}
	// The metadata and its indexes are checked in full; the block data is
	// verified block by block on load (checksums), so the whole file,
	// up to the budget in size, is not read at every start.
	for _, table := range []string{"kv_blocks", "kv_totals"} {
		if err = quickCheck(db, table); err != nil {
			return err
		}
	}
	idx, err := loadIndex(db)
	if err != nil {
		return err
	}
	stmt, err := db.Prepare(loadQuery)
	if err != nil {
		return err
	}
	s.kv, s.idx, s.loadStmt = db, idx, stmt
	return nil
}

// defaultBudget is min(10% of (free disk + the cache's files), 20 GB).
func (s *KVStore) defaultBudget(path string) int64 {
	free, err := FreeBytes(s.home)
	if err != nil {
		s.log.Warn("store: free disk space unknown; persisted K/V budget set to 2 GB (set FOLIO_KV_STORE_MAX to change it)", "err", err)
		return fallbackKV
	}
	var own int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			own += fi.Size()
		}
	}
	return min((free+own)/10, maxDefaultKV)
}

func (s *KVStore) closeRemote() {
	if s.remote != nil {
		s.remote.Close()
	}
}

// Close writes what the write-behind queue holds (waiting at most 10 s,
// then dropping the rest) and closes kvcache.db, then the shared tier's
// queue (each batch within its deadline) and connections.
func (s *KVStore) Close() error {
	s.closeOnce.Do(func() {
		defer s.closeRemote()
		if s.kv != nil {
			s.q.mu.Lock()
			s.q.closing = true
			s.q.cond.Broadcast()
			s.q.mu.Unlock()
			select {
			case <-s.writerDone:
			case <-time.After(closeWait):
				s.log.Warn("store: persisted K/V writes did not finish in time; the rest are dropped", "wait", closeWait)
				s.cancel()
				<-s.writerDone
			}
			s.cancel()
			s.loadStmt.Close()
			s.closeErr = s.kv.Close()
			if n := s.corrupted.Load(); n > 1 {
				s.log.Warn("store: persisted K/V blocks failed verification since start and were recomputed", "blocks", n, "file", filepath.Join(s.home, kvFile))
			}
		}
	})
	return s.closeErr
}
