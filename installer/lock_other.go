//go:build !unix

package installer

import "os"

// Without flock, locks between processes are not taken: two processes
// pulling the same blob at once may both download it (the last rename
// wins, and both copies are verified), and a prune in one process may run
// during a pull in another.

func tryLock(f *os.File, exclusive bool) (bool, error) { return true, nil }

func lock(f *os.File, exclusive bool) error { return nil }
