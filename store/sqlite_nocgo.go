//go:build !cgo

package store

import (
	"errors"
	"syscall"
)

// haveSQLite is ErrNoSQLite: go-sqlite3 is C, so a build without cgo has
// no driver. The rest of the tree still builds, so that it is checked on
// every platform.
func haveSQLite() error { return ErrNoSQLite }

// isCorrupt, isFull and isBusy see only folio's own errors and the
// system's: there are no SQLite errors without SQLite.
func isCorrupt(err error) bool {
	return errors.Is(err, errCheckFailed) || errors.Is(err, errMarkedDamaged)
}

func isFull(err error) bool { return errors.Is(err, syscall.ENOSPC) }

func isBusy(error) bool { return false }
