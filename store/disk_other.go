//go:build !linux && !darwin

package store

import "errors"

func FreeBytes(dir string) (int64, error) {
	return 0, errors.New("store: free disk space is not known on this platform")
}
