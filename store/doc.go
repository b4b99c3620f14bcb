// Package store keeps folio's durable state in SQLite, in two files of
// the home directory (FOLIO_HOME, default ~/.folio), each behind its own
// type, opened on its own. It is the only importer of the SQLite driver
// (github.com/mattn/go-sqlite3).
//
//   - folio.db, the Registry (OpenRegistry): models, blobs, the chat
//     page's conversations and their messages (conversations.go), and
//     (reserved) sessions. It is precious: opened with synchronous=FULL,
//     checked with quick_check at open, and never moved or deleted by
//     folio; a damaged one is an error that says what to do.
//   - kvcache.db, the KVStore (OpenKV): persisted prefix K/V blocks,
//     disposable, and optional (a caller without K/V persistence does not
//     open it; folio serve opens both). synchronous=
//     NORMAL (a crash loses at most the last writes, never consistency).
//     A file that fails to open or its metadata check is moved aside
//     (kvcache.db.corrupt-<unix time>, only the newest kept, removed by
//     the first OpenKV 7 days later) and replaced by an empty cache with
//     one log line.
//
// Both openers create the home 0700 and the databases 0600, tighten what it
// finds looser under the home (folders 0700, files 0600; home.go), and
// refuse a home they cannot write, naming the cause.
//
// Both are in WAL mode with a 5 s busy timeout and foreign keys on; write
// transactions begin IMMEDIATE. Schemas are numbered migrations in code
// (PRAGMA user_version), applied in one transaction at open. Two processes
// may share a home directory.
//
// # Persisted K/V blocks
//
// A block is keyed by (fingerprint, hash): the fingerprint names the
// model and its K/V settings, the hash is the chained block hash; both
// come from the runner. A row stores the block's token IDs, its bytes,
// the K/V dtype and a checksum: CRC-32C || CRC-32 (IEEE) of tokens||data.
// LoadBlock returns a block only if its stored token IDs equal the
// caller's, its length equals the caller's buffer and its checksum
// matches; otherwise ErrCorrupt, and the row is deleted. The first such
// block since OpenKV is logged as a warning; the rest are counted
// (KVStats.Corrupt) and Close logs the count.
//
// Metadata (kv_blocks) and data (kv_data) are separate tables, so the
// index load at OpenKV, the check at OpenKV and LRU updates read small rows,
// never the data's overflow pages. quick_check at OpenKV covers the
// metadata tables; the data is verified per block on load, so a 20 GB
// cache is not read at every start. SQLite reporting the file damaged
// at run time writes kvcache.db.damaged, and the next OpenKV replaces it.
//
// Writes are behind the request path: SaveBlock queues (bounded by
// KVOptions.QueueBytes; full means dropped and counted, never blocking),
// and one writer goroutine writes batches (1/16 of the budget, at most
// 64 MiB) in one transaction each, together with the deletions and the
// last-use updates that LoadBlock queued, then enforces the budget in
// that transaction: while the pages in use (the file's own count, so it
// counts every process's blocks) exceed the budget less two batches and
// the -shm, the least recently used block (last_used, then insertion
// order) is deleted; after the commit the WAL is checkpointed and
// truncated. KVOptions.MaxBytes thus bounds kvcache.db with its -wal and
// -shm (kvbudget.go says how, and the small excess while a batch is
// written). kv_totals, kept by triggers, sums the blocks' bytes.
//
// # Concurrency
//
// All methods are safe for concurrent use.
//   - KVStore.idxMu guards KVStore.idx, the in-memory index of stored blocks
//     (per fingerprint: hash -> size and token count, and totals) that
//     HasBlocks and KVStats read. It holds the blocks stored at OpenKV
//     plus what this process wrote or evicted since; another process's
//     changes are not seen, so HasBlocks may report a block that
//     LoadBlock then does not find (ErrNotFound: a miss).
//   - queue.mu guards the write-behind queue (ops, pending keys, last-use
//     updates, sequence numbers); queue.cond, on it, wakes the writer and
//     Flush. The writer never holds queue.mu while writing to SQLite, and
//     never holds idxMu and queue.mu together.
//   - The writer goroutine is the only writer of kvcache.db in a process;
//     reads run on database/sql's pool, concurrently, and WAL readers
//     never wait for the writer.
//   - The registry has no Go lock: each method is one SQL statement or
//     one transaction (a message and its conversation's updated time).
package store
