package installer

import (
	"fmt"
	"io"

	"folio/store"
)

// freeSpace reports the free bytes of the disk holding dir
// (SetFreeSpace fakes it in tests).
var freeSpace = store.FreeBytes

// reserveCheck is the most bytes a reserveWriter lets through between two
// looks at the free space (a statfs per 16 MiB costs nothing beside the
// writes): each look asks for that much room above the reserve.
const reserveCheck = 16 << 20

// reserveWriter writes to w until the disk holding dir would have less
// than reserve bytes free, then fails with ErrDiskFull: an upload of any
// size (POST /api/blobs, a create's files) stops short of filling the
// disk, whose last bytes SQLite's journals and the K/V store need. When
// the free space is unknown, or reserve is negative, it only writes.
type reserveWriter struct {
	w       io.Writer
	dir     string
	reserve int64
	written int64 // bytes so far
	checked int64 // written at the last look
}

func (r *reserveWriter) Write(p []byte) (int, error) {
	if r.reserve >= 0 && (r.written == 0 || r.written-r.checked+int64(len(p)) > reserveCheck) {
		r.checked = r.written
		// The next reserveCheck bytes must fit above the reserve.
		if free, err := freeSpace(r.dir); err == nil && free-max(int64(len(p)), reserveCheck) < r.reserve {
			return 0, fmt.Errorf("%w: %s written, %s free on the disk of %s, and folio keeps %s of it free: free disk space (folio rm removes models you no longer use) or set FOLIO_HOME to a disk with room; nothing was kept",
				ErrDiskFull, mib(r.written), mib(free), r.dir, mib(r.reserve))
		}
	}
	n, err := r.w.Write(p)
	r.written += int64(n)
	return n, err
}

// mib writes a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
