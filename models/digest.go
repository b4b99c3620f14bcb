package models

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// FileDigest is the sha256 of the file at path, as hex, and its size.
func FileDigest(path string) (digest string, size int64, err error) {
	return FileDigestContext(context.Background(), path)
}

// FileDigestContext is FileDigest that stops when ctx ends, with ctx's
// error and the bytes it had hashed: a model named by path may be a
// sparse file of terabytes, and its request may have gone.
func FileDigestContext(ctx context.Context, path string) (digest string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", size, err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		size += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", size, err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}
