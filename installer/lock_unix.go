//go:build unix

package installer

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an advisory lock on f without waiting: exclusive or
// shared. It reports false when another open file holds a conflicting
// one (in this process or another). The kernel drops the lock when the
// file is closed or the process dies, so a killed pull never leaves a
// stale lock behind.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// lock waits for a shared or exclusive lock on f.
func lock(f *os.File, exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
