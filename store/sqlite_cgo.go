//go:build cgo

package store

import (
	"database/sql"
	"errors"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{
		ConnectHook: func(c *sqlite3.SQLiteConn) error {
			// After a checkpoint the WAL is truncated to this size, so a
			// large batch does not leave a large file behind.
			_, err := c.Exec("PRAGMA journal_size_limit = 67108864", nil)
			return err
		},
	})
}

// haveSQLite is nil: this build has the driver.
func haveSQLite() error { return nil }

// isCorrupt reports whether err means the file is damaged (as opposed to
// unreadable, locked or full).
func isCorrupt(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return true
	}
	return errors.Is(err, errCheckFailed) || errors.Is(err, errMarkedDamaged)
}

// isFull reports whether err is a full disk: SQLite's "database or disk
// is full" or the system's ENOSPC.
func isFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull || errors.Is(err, syscall.ENOSPC)
}

// isBusy reports whether err is another connection holding the lock past
// the busy timeout.
func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}
