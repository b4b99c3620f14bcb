package store

import (
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Errors returned by the store, wrapped with what was asked for.
var (
	// ErrNotFound: no such model, blob or persisted block.
	ErrNotFound = errors.New("store: not found")
	// ErrCorrupt: a persisted block failed verification (its tokens, its
	// length or its checksum) and was deleted; the caller recomputes it.
	ErrCorrupt = errors.New("store: corrupt block")
)

const (
	registryFile = "folio.db"   // the model registry: precious
	kvFile       = "kvcache.db" // persisted prefix K/V: disposable

	busyTimeout  = 5 * time.Second // how long a statement waits for another writer
	maxDefaultKV = 20 << 30        // the default budget never exceeds 20 GB
	fallbackKV   = 2 << 30         // the budget when free disk space is unknown
	defaultQueue = 256 << 20       // bytes of blocks waiting to be written
	closeWait    = 10 * time.Second
)

// RegistryOptions configure OpenRegistry. The zero value is usable.
type RegistryOptions struct {
	// Log receives a line when the home's permissions are tightened.
	// nil: slog.Default().
	Log *slog.Logger
	// Now is the clock of the entries' timestamps. nil: time.Now.
	Now func() time.Time
}

// Registry is the model registry, folio.db in the home directory: the
// models and blobs folio has entered. It is precious: a damaged one is
// reported, never replaced. Its methods are safe for concurrent use.
// Several processes may open one home directory (SQLite WAL and a busy
// timeout keep it consistent).
type Registry struct {
	home string
	now  func() time.Time
	db   *sql.DB // folio.db; *sql.DB is safe for concurrent use
}

// OpenRegistry opens (creating if needed) the home directory and
// folio.db. The home is this user's only (home.go): created 0700, and
// folio's folders and files in it tightened to 0700 and 0600. A damaged
// folio.db is an error, never replaced.
func OpenRegistry(home string, opt RegistryOptions) (*Registry, error) {
	log := opt.Log
	if log == nil {
		log = slog.Default()
	}
	if err := openHome(home, log); err != nil {
		return nil, err
	}
	r := &Registry{home: home, now: opt.Now}
	if r.now == nil {
		r.now = time.Now
	}
	db, err := openRegistry(filepath.Join(home, registryFile))
	if err != nil {
		return nil, err
	}
	r.db = db
	return r, nil
}

// Close closes folio.db.
func (r *Registry) Close() error { return r.db.Close() }

// openHome creates the home if needed and tightens folio's entries in it,
// logging what it changed or could not.
func openHome(home string, log *slog.Logger) error {
	if home == "" {
		return errors.New("store: no home directory (set FOLIO_HOME)")
	}
	if err := haveSQLite(); err != nil {
		return err
	}
	if err := makeHome(home); err != nil {
		return err
	}
	n, err := tightenHome(home)
	if n > 0 {
		log.Info("store: made FOLIO_HOME's permissions owner-only (folders 0700, files 0600)", "home", home, "changed", n)
	}
	if err != nil {
		log.Warn("store: cannot make all of FOLIO_HOME owner-only; check who owns its files", "home", home, "err", err)
	}
	return nil
}

// openRegistry opens folio.db and checks it. It never moves or deletes
// the file: a damaged registry is reported with what to do.
func openRegistry(path string) (*sql.DB, error) {
	db, err := openDB(path, "FULL", 4096)
	if err == nil {
		err = quickCheck(db, "")
	}
	if err == nil {
		err = migrate(db, registryMigrations)
	}
	if err == nil {
		return db, nil
	}
	if db != nil {
		db.Close()
	}
	if isCorrupt(err) {
		return nil, fmt.Errorf("store: %s is damaged (%v); it is the model registry, which folio never replaces on its own: restore it from a backup, or move it aside to start with an empty registry (models must then be pulled or created again)", path, err)
	}
	return nil, fmt.Errorf("store: open %s: %w", path, err)
}
