package installer

import (
	"fmt"
	"io"

	"folio/store"
)

// freeSpace reports the free bytes of the disk holding dir
// (SetFreeSpace fakes it in tests).
var freeSpace = store.FreeBytes

// checkRoom refuses the download of f into dir, of which have bytes are
// on disk already, before anything more is written: a size no blob has
// (the server sent nonsense) is ErrRegistry, one that the disk has no
// room for is ErrDiskFull with both numbers. When the size or the free
// space is unknown, it refuses nothing.
func checkRoom(dir string, f fetch, have int64) error {
	if f.size > maxBlobSize {
		return fmt.Errorf("%w: %s claims %d bytes, more than any blob (%s); the server sent an invalid size", ErrRegistry, f.what(), f.size, sizeText(maxBlobSize))
	}
	need := f.size - have
	free, err := freeSpace(dir)
	if f.size < 0 || err != nil || need <= free {
		return nil
	}
	return fmt.Errorf("%w: %s needs %s more and the disk of %s has %s free: free disk space (folio rm removes models you no longer use) or set FOLIO_HOME to a disk with room, then pull again (a pull resumes where it stopped)",
		ErrDiskFull, f.what(), sizeText(need), dir, sizeText(free))
}

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

// sizeText writes a byte count in the largest binary unit under it.
func sizeText(n int64) string {
	switch {
	case n >= 1<<50:
		return fmt.Sprintf("%.1f PiB", float64(n)/(1<<50))
	case n >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return mib(n)
}
