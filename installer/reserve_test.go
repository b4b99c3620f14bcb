package installer_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"folio/installer"
)

// zeros reads as n zero bytes.
func zeros(n int64) io.Reader { return io.LimitReader(zeroReader{}, n) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestUploadKeepsDiskReserve: an upload into blobs/ stops with ErrDiskFull,
// naming what to do and keeping nothing, when it would leave less than
// Options.DiskReserve free, at its start or part way through a long
// stream; with room, or with no reserve, it is stored.
func TestUploadKeepsDiskReserve(t *testing.T) {
	home, st := newHome(t)
	blob := bytes.Repeat([]byte("folio"), 200)
	sum := sha256.Sum256(blob)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	opt := installer.Options{Home: home, Store: st}

	// Free space: base less what blobs/ holds, as a real disk would say.
	base := int64(0)
	restore := installer.SetFreeSpace(func(dir string) (int64, error) {
		used := int64(0)
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if fi, err := e.Info(); err == nil {
				used += fi.Size()
			}
		}
		return base - used, nil
	})
	defer restore()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, installer.ErrDiskFull) || !strings.Contains(err.Error(), "FOLIO_HOME") ||
			!strings.Contains(err.Error(), "nothing was kept") {
			t.Fatalf("%s: %v, want ErrDiskFull naming FOLIO_HOME", what, err)
		}
		if names := blobFiles(t, home); len(names) != 0 {
			t.Fatalf("%s: blobs/ holds %v after the refusal", what, names)
		}
	}

	base = 256<<20 + 8<<20 // under the default reserve of 256 MiB and one look's 16 MiB
	check("a small upload with 264 MiB free", installer.ImportBlob(digest, bytes.NewReader(blob), opt))

	// 100 MiB with 296 MiB free: refused at the third look, after 32 MiB,
	// never past the reserve.
	base = 296 << 20
	big := int64(100 << 20)
	h := sha256.New()
	io.Copy(h, zeros(big))
	err := installer.ImportBlob("sha256:"+hex.EncodeToString(h.Sum(nil)), zeros(big), opt)
	check("100 MiB with 296 MiB free", err)
	if !strings.Contains(err.Error(), "32.0 MiB written") {
		t.Fatalf("100 MiB with 296 MiB free: %v, want a stop after 32 MiB", err)
	}

	base = 8 << 30
	if err := installer.ImportBlob(digest, bytes.NewReader(blob), opt); err != nil {
		t.Fatalf("with 8 GiB free: %v", err)
	}
	if !installer.HasBlob(home, digest) {
		t.Fatal("the blob uploaded with room is not kept")
	}
	p, _ := installer.BlobPath(home, digest)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}

	base = 1 << 20
	opt.DiskReserve = -1
	if err := installer.ImportBlob(digest, bytes.NewReader(blob), opt); err != nil {
		t.Fatalf("with no reserve: %v", err)
	}
	if !installer.HasBlob(home, digest) {
		t.Fatal("the blob uploaded with no reserve is not kept")
	}
}
