//go:build !unix

package server

// openFileLimit: this platform has no RLIMIT_NOFILE.
func openFileLimit() (uint64, bool) { return 0, false }
