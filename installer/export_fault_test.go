package installer

import (
	"io"
	"os"
)

// SetPartialWriter makes downloads write their partial files through
// wrap, for the fault tests of package installer_test, until restore.
func SetPartialWriter(wrap func(f *os.File) io.WriterAt) (restore func()) {
	old := partialWriter
	partialWriter = wrap
	return func() { partialWriter = old }
}

// SetFreeSpace makes uploads and pulls see the free disk space free reports, for
// the tests of package installer_test, until restore.
func SetFreeSpace(free func(dir string) (int64, error)) (restore func()) {
	old := freeSpace
	freeSpace = free
	return func() { freeSpace = old }
}
