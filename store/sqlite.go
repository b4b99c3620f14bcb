package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// driverName is go-sqlite3 with a hook that bounds the WAL file
// (sqlite_cgo.go).
const driverName = "sqlite3_folio"

// ErrNoSQLite is Open's error in a build without cgo, which has no SQLite.
var ErrNoSQLite = errors.New("store: built without cgo: no SQLite, so no folio.db or kvcache.db; build folio with CGO_ENABLED=1 and a C compiler")

// kvPageSize is kvcache.db's page size (the largest SQLite allows): block
// data lives in overflow pages, and fewer, larger pages per block cut the
// CPU cost of saving and loading a block (bench/results/2026-12-02-comment-numbers.md).
const kvPageSize = 65536

var (
	errNewerSchema   = errors.New("database written by a newer folio")
	errMarkedDamaged = errors.New("marked damaged by an earlier run")
	errCheckFailed   = errors.New("quick_check failed")
)

// damagedSuffix names the marker file written next to kvcache.db when a
// statement reports corruption; the next Open moves the cache aside.
const damagedSuffix = ".damaged"

// openDB opens a database in WAL mode with a busy timeout, foreign keys
// and write transactions that take the write lock at BEGIN (so a busy
// writer waits instead of failing on its first write). sync is
// PRAGMA synchronous; pageSize applies only when the file is new. A new
// file is created 0600 (and so are its -wal and -shm).
func openDB(path, sync string, pageSize int) (*sql.DB, error) {
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	dsn := fmt.Sprintf("%s?_busy_timeout=%d&_synchronous=%s&_foreign_keys=on&_txlock=immediate",
		path, busyTimeout.Milliseconds(), sync)
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	defer c.Close()
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, err
	}
	if mode != "wal" {
		// A new file: the page size must be set before the first write,
		// which switching to WAL is.
		if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA page_size = %d", pageSize)); err != nil {
			db.Close()
			return nil, err
		}
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil {
			db.Close()
			return nil, err
		}
		if mode != "wal" {
			db.Close()
			return nil, fmt.Errorf("store: %s: journal_mode is %q, want wal", path, mode)
		}
	}
	return db, nil
}

// quickCheck runs PRAGMA quick_check, on one table and its indexes when
// table is not "".
func quickCheck(db *sql.DB, table string) error {
	q := "PRAGMA quick_check"
	if table != "" {
		q = fmt.Sprintf("PRAGMA quick_check(%s)", table)
	}
	rows, err := db.Query(q)
	if err != nil {
		return err
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			return err
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		return fmt.Errorf("%w: %s", errCheckFailed, strings.Join(msgs, "; "))
	}
	return nil
}

// moveAside renames path and its -wal and -shm files to
// path.corrupt-<unix time>[-wal|-shm], removing earlier corrupt copies
// (only the newest is kept for inspection), and removes the damaged
// marker. It returns the new name of path.
func moveAside(path string, now time.Time) (string, error) {
	old, _ := filepath.Glob(path + ".corrupt-*")
	for _, f := range old {
		os.Remove(f)
	}
	aside := fmt.Sprintf("%s.corrupt-%d", path, now.Unix())
	for _, suffix := range []string{"", "-wal", "-shm"} {
		err := os.Rename(path+suffix, aside+suffix)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	if err := os.Remove(path + damagedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	return aside, nil
}

// corruptKeep is how long a copy of a damaged kvcache.db is kept for
// inspection; Open removes older ones.
const corruptKeep = 7 * 24 * time.Hour

// removeOldCopies removes path.corrupt-<unix time>[-wal|-shm] files
// moved aside more than corruptKeep before now, and returns their names.
// A name whose time does not parse is left alone.
func removeOldCopies(path string, now time.Time) (removed []string, err error) {
	copies, _ := filepath.Glob(path + ".corrupt-*")
	for _, f := range copies {
		stamp, _, _ := strings.Cut(strings.TrimPrefix(f, path+".corrupt-"), "-")
		sec, perr := strconv.ParseInt(stamp, 10, 64)
		if perr != nil || now.Sub(time.Unix(sec, 0)) <= corruptKeep {
			continue
		}
		if rerr := os.Remove(f); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
			continue
		}
		removed = append(removed, f)
	}
	return removed, err
}

// migrate brings a database to len(steps): step i (0-based) takes
// user_version i to i+1. All pending steps run in one transaction; a
// database already current is not written to (so opening never waits for
// another process's writer).
func migrate(db *sql.DB, steps []string) error {
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v == len(steps) {
		return nil
	}
	if v > len(steps) {
		return fmt.Errorf("%w (schema version %d, this folio knows %d): upgrade folio", errNewerSchema, v, len(steps))
	}
	tx, err := db.Begin() // BEGIN IMMEDIATE: one process migrates, the others wait
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	if v > len(steps) {
		return fmt.Errorf("%w (schema version %d, this folio knows %d): upgrade folio", errNewerSchema, v, len(steps))
	}
	for i := v; i < len(steps); i++ {
		if _, err := tx.Exec(steps[i]); err != nil {
			return fmt.Errorf("store: migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", len(steps))); err != nil {
		return err
	}
	return tx.Commit()
}

// registryMigrations are folio.db's schema steps. Times are unix
// nanoseconds. Append only; never edit a step that has shipped.
var registryMigrations = []string{
	1: `
CREATE TABLE models (
	name           TEXT PRIMARY KEY,
	digest         TEXT NOT NULL DEFAULT '',
	path           TEXT NOT NULL DEFAULT '',
	size           INTEGER NOT NULL DEFAULT 0,
	format         TEXT NOT NULL DEFAULT '',
	family         TEXT NOT NULL DEFAULT '',
	parameter_size TEXT NOT NULL DEFAULT '',
	quantization   TEXT NOT NULL DEFAULT '',
	template       TEXT NOT NULL DEFAULT '',
	parameters     TEXT NOT NULL DEFAULT '',
	created        INTEGER NOT NULL,
	modified       INTEGER NOT NULL
);
CREATE TABLE blobs (
	digest  TEXT PRIMARY KEY,
	path    TEXT NOT NULL,
	size    INTEGER NOT NULL,
	created INTEGER NOT NULL
);
-- Reserved for conversations: tokens is little-endian int32.
CREATE TABLE sessions (
	id      TEXT PRIMARY KEY,
	model   TEXT NOT NULL,
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	tokens  BLOB
);
CREATE INDEX sessions_model ON sessions(model);
`,
	2: `
CREATE TABLE conversations (
	id      TEXT PRIMARY KEY,
	title   TEXT NOT NULL,
	model   TEXT NOT NULL,
	system  TEXT NOT NULL DEFAULT '',
	options TEXT NOT NULL DEFAULT '{}', -- JSON object of model options
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL
);
CREATE TABLE messages (
	id            TEXT PRIMARY KEY,
	conversation  TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
	seq           INTEGER NOT NULL, -- the order of the conversation's messages
	role          TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
	content       TEXT NOT NULL,
	thinking      TEXT NOT NULL DEFAULT '',
	stopped       INTEGER NOT NULL DEFAULT 0,
	prompt_tokens INTEGER, -- a reply's figures; NULL for a user message
	cached_tokens INTEGER,
	eval_tokens   INTEGER,
	eval_ns       INTEGER,
	created       INTEGER NOT NULL,
	UNIQUE (conversation, seq)
);
`,
	3: `
-- of a reply's cached prompt tokens, those loaded from kvcache.db
ALTER TABLE messages ADD COLUMN restored_tokens INTEGER;
`,
}[1:]

// kvMigrations are kvcache.db's schema steps. A block's metadata
// (kv_blocks) and its bytes (kv_data) are separate tables so that loading
// the index, checking the metadata, LRU updates and eviction scans touch
// small rows only, never the overflow pages of the data.
var kvMigrations = []string{
	1: `
CREATE TABLE kv_blocks (
	id          INTEGER PRIMARY KEY,
	fingerprint TEXT NOT NULL,    -- model + K/V settings, from the runner
	hash        BLOB NOT NULL,    -- chained 32-byte block hash
	parent      BLOB NOT NULL,    -- the previous block's hash (zeros for the first)
	dtype       TEXT NOT NULL,
	bytes       INTEGER NOT NULL, -- length of kv_data.data
	last_used   INTEGER NOT NULL, -- unix ns, Options.Now
	checksum    BLOB NOT NULL,    -- CRC-32C || CRC-32 (IEEE) of tokens || data, big-endian
	tokens      BLOB NOT NULL,    -- little-endian int32
	UNIQUE (fingerprint, hash)
);
CREATE INDEX kv_blocks_last_used ON kv_blocks(last_used);
CREATE TABLE kv_data (
	id   INTEGER PRIMARY KEY REFERENCES kv_blocks(id) ON DELETE CASCADE,
	data BLOB NOT NULL
);
-- Running totals, kept by triggers, so the budget is checked in O(1)
-- and holds across processes.
CREATE TABLE kv_totals (
	one    INTEGER PRIMARY KEY CHECK (one = 1),
	blocks INTEGER NOT NULL,
	bytes  INTEGER NOT NULL
);
INSERT INTO kv_totals VALUES (1, 0, 0);
CREATE TRIGGER kv_blocks_insert AFTER INSERT ON kv_blocks BEGIN
	UPDATE kv_totals SET blocks = blocks + 1, bytes = bytes + NEW.bytes;
END;
CREATE TRIGGER kv_blocks_delete AFTER DELETE ON kv_blocks BEGIN
	UPDATE kv_totals SET blocks = blocks - 1, bytes = bytes - OLD.bytes;
END;
`,
}[1:]
