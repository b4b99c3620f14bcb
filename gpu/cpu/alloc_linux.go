package cpu

import "syscall"

// adviseHuge asks Linux to back b (whole huge pages, not yet touched) with
// transparent huge pages. It matters where THP is in "madvise" mode, the
// default of many distributions; errors (THP off, an old kernel) leave
// the 4 KiB pages.
func adviseHuge(b []byte) {
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
