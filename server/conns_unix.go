//go:build unix

package server

import "syscall"

// openFileLimit is the process's soft RLIMIT_NOFILE (Go raises it to the
// hard limit at start).
func openFileLimit() (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, false
	}
	return uint64(lim.Cur), true
}
