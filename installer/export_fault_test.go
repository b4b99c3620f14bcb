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
