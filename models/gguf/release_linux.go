package gguf

import (
	"os"
	"syscall"
	"unsafe"
)

// dropPages takes the whole pages within b, a slice of a read-only file
// mapping, out of the process's resident memory (MADV_DONTNEED): the
// page cache keeps them and a later read faults them back in, unchanged.
func dropPages(b []byte) {
	ps := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + ps - 1) &^ (ps - 1)
	hi := (start + uintptr(len(b))) &^ (ps - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo-start:hi-start], syscall.MADV_DONTNEED)
}
