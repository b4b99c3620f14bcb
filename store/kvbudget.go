package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// The budget (KVOptions.MaxBytes, FOLIO_KV_STORE_MAX) bounds kvcache.db's
// files on disk: kvcache.db, kvcache.db-wal and kvcache.db-shm together.
//
//   - Pages, not block bytes, are counted: at the end of every write
//     transaction the writer evicts least recently used blocks until the
//     pages in use (page_count - freelist_count) fit pageBudget. Freed
//     pages are reused by later writes, so the file stays within the pages
//     in use plus what one transaction adds before its eviction runs: one
//     batch.
//   - A batch carries at most batchBytes of block data (1/16 of the
//     budget, at most 64 MiB), and after each batch the WAL is
//     checkpointed and truncated to zero bytes, so the WAL holds one
//     transaction at most.
//   - pageBudget is the max less two batches (the file's growth inside a
//     transaction and the WAL) and the -shm (32 KiB while the WAL holds
//     fewer than ~4000 frames, 250 MiB of 64 KiB pages; it holds one
//     batch).
//
// Between writes the three files are within the max. While a batch is
// written they may exceed it by the metadata pages (kv_blocks, its
// indexes, the free list, the header) that the batch's transaction
// writes to the WAL beside its block data: 9 to 13 pages of 64 KiB for a
// batch of four 60 KiB blocks (TestKVFilesWithinBudget), never more than
// all the metadata there is (a few hundred bytes a block).

const (
	maxBatchBytes = 64 << 20 // block data per write transaction, for budgets of 1 GiB and more
	shmBytes      = 32 << 10 // kvcache.db-shm: one 32 KiB wal-index region
	// minKVMax is the smallest budget Open accepts: the schema takes
	// six 64 KiB pages and a batch one more.
	minKVMax = 1 << 20
)

// batchBytes is the most block data one write transaction carries: 1/16
// of the budget, at most 64 MiB, at least one page. SaveBlock drops
// blocks larger than this.
func batchBytes(kvMax int64) int64 {
	return max(min(kvMax/16, maxBatchBytes), kvPageSize)
}

// pageBudget is the bytes of pages in use that kvcache.db is kept within.
func pageBudget(kvMax int64) int64 {
	return kvMax - 2*batchBytes(kvMax) - shmBytes
}

// pagesInUse is the bytes of kvcache.db's pages that hold data (the
// free list excluded), as q (a transaction or the database) sees them.
func pagesInUse(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (used, file int64, err error) {
	var pages, free int64
	if err := q.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return 0, 0, err
	}
	if err := q.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return 0, 0, err
	}
	return (pages - free) * kvPageSize, pages * kvPageSize, nil
}

// evict deletes the least recently used blocks (by last_used, then by
// age) until the pages in use fit pageBudget. Pages are kvcache.db's own,
// so the budget counts every process's blocks. Each round deletes the
// oldest blocks whose bytes cover the excess, then measures again
// (a block's pages exceed its bytes by its rounding to whole pages).
func (s *KVStore) evict(ctx context.Context, tx *sql.Tx) ([]written, error) {
	limit := pageBudget(s.kvMax)
	var victims []written
	for {
		used, _, err := pagesInUse(ctx, tx)
		if err != nil {
			return nil, err
		}
		if used <= limit {
			return victims, nil
		}
		round, ids, err := oldestBlocks(ctx, tx, used-limit)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return victims, nil // nothing left to evict: the schema alone is over
		}
		for _, id := range ids {
			// kv_data goes with it (ON DELETE CASCADE).
			if _, err := tx.ExecContext(ctx, "DELETE FROM kv_blocks WHERE id = ?", id); err != nil {
				return nil, err
			}
		}
		victims = append(victims, round...)
	}
}

// oldestBlocks is the least recently used blocks whose bytes (data and
// tokens) add up to at least excess, at least one if any is stored.
func oldestBlocks(ctx context.Context, tx *sql.Tx, excess int64) ([]written, []int64, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, fingerprint, hash, bytes, length(tokens) FROM kv_blocks ORDER BY last_used, id")
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		victims []written
		ids     []int64
		freed   int64
	)
	for freed < excess && rows.Next() {
		var (
			id, n, tlen int64
			fp          string
			hash        []byte
		)
		if err := rows.Scan(&id, &fp, &hash, &n, &tlen); err != nil {
			return nil, nil, err
		}
		victims = append(victims, written{key{fp, [32]byte(hash)}, blockInfo{n, int32(tlen / 4)}})
		ids = append(ids, id)
		freed += n + tlen
	}
	return victims, ids, rows.Err()
}

// checkpoint copies the WAL into kvcache.db and truncates it to zero
// bytes. A reader of another process holding an old snapshot past the
// busy timeout leaves it as it is until the next batch.
func (s *KVStore) checkpoint(ctx context.Context) {
	var busy, frames, done int
	err := s.kv.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
	if err != nil || busy != 0 {
		s.log.Debug("store: persisted K/V checkpoint did not finish; retried after the next write", "busy", busy, "err", err)
	}
}

// trim is the writer's first task: evict to the budget (it may be lower
// than the last run's), checkpoint, and, when the file is still larger
// than the budget less the -shm (it never shrinks by itself: freed pages
// are reused, not returned to the disk), rewrite it with VACUUM, with
// one log line. VACUUM rewrites the pages in use, at most the budget. A
// file at its usual size, within the budget less a batch, never comes
// near that threshold.
func (s *KVStore) trim(ctx context.Context) {
	s.writeBatch(ctx, batch{})
	_, file, err := pagesInUse(ctx, s.kv)
	if err != nil || file <= s.kvMax-shmBytes {
		return
	}
	path := filepath.Join(s.home, kvFile)
	if _, err := s.kv.ExecContext(ctx, "VACUUM"); err != nil {
		s.log.Warn("store: cannot shrink the persisted K/V cache to its budget", "file", path, "bytes", file, "budget", s.kvMax, "err", err)
		return
	}
	s.checkpoint(ctx)
	after := int64(-1)
	if fi, err := os.Stat(path); err == nil {
		after = fi.Size()
	}
	s.log.Info("store: shrank the persisted K/V cache to its budget (FOLIO_KV_STORE_MAX)", "file", path, "from", file, "to", after, "budget", s.kvMax)
}

// checkKVMax refuses a budget too small to hold a block.
func checkKVMax(kvMax int64) error {
	if kvMax < minKVMax {
		return fmt.Errorf("store: FOLIO_KV_STORE_MAX is %d bytes, below the %d the persisted K/V cache needs for its own pages and one batch of blocks: raise it", kvMax, minKVMax)
	}
	return nil
}

// KVBudget is where the persisted prefix K/V cache is and the budget of
// its files (FOLIO_KV_STORE_MAX, or the default OpenKV chose); file is ""
// when K/V persistence is off for this process.
func (s *KVStore) KVBudget() (file string, budget int64) {
	if s.kv == nil {
		return "", 0
	}
	return filepath.Join(s.home, kvFile), s.kvMax
}
