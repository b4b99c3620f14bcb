//go:build linux || darwin

package store

import "syscall"

// FreeBytes is the disk space available to an unprivileged user at dir.
func FreeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
