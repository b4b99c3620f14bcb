package models

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// FileDigest is the sha256 of the file at path, as hex, and its size.
func FileDigest(path string) (digest string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
