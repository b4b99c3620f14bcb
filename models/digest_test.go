package models

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileDigestCancel: hashing a sparse file of 64 GiB (minutes of
// work) stops when its context ends, having hashed a part of it.
func TestFileDigestCancel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.gguf")
	const size = 64 << 30
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Skipf("no sparse file of %d bytes here: %v", int64(size), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, n, err := FileDigestContext(ctx, p)
	if !errors.Is(err, context.Canceled) || n >= size {
		t.Fatalf("hashed %d of %d bytes, err %v; want it stopped by the cancel", n, int64(size), err)
	}
	t.Logf("stopped after %d MiB", n>>20)

	small := filepath.Join(t.TempDir(), "small")
	os.WriteFile(small, []byte("abc"), 0o644)
	d, n, err := FileDigest(small)
	if err != nil || n != 3 || d != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("sha256 of abc: %s %d %v", d, n, err)
	}
}
