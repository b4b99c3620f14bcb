package installer_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
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

// TestPullChecksRoom: a layer is checked against the free space before
// any of it is fetched (ErrDiskFull with the bytes needed and free, and
// no file left); a layer whose size the registry lies about leaves a
// partial file no longer than what arrived, never a sparse one of the
// claimed size; a resumed pull needs room only for the rest; a size no
// blob has is ErrRegistry.
func TestPullChecksRoom(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := publishTiny(t, hub, gguf.TypeF32) // 5.8 MB
	lie := func(model string, size int64) string {
		hub.SetManifest("library", model, "latest", fmt.Appendf(nil,
			`{"schemaVersion":2,"layers":[{"mediaType":%q,"digest":%q,"size":%d}]}`, installer.MediaModel, fakehub.Digest(weights), size))
		return hub.Host() + "/library/" + model
	}
	free := int64(0)
	defer installer.SetFreeSpace(func(string) (int64, error) { return free, nil })()
	largest := func(home string) (name string, size int64) {
		for _, n := range blobFiles(t, home) {
			if fi, err := os.Stat(filepath.Join(home, "blobs", n)); err == nil && fi.Size() > size {
				name, size = n, fi.Size()
			}
		}
		return name, size
	}

	home, st := newHome(t)
	free = 10 << 30
	_, err := installer.Pull(context.Background(), lie("tebibyte", 1<<40), testOptions(home, st))
	if !errors.Is(err, installer.ErrDiskFull) || !strings.Contains(err.Error(), "needs 1.0 TiB more") ||
		!strings.Contains(err.Error(), "has 10.0 GiB free") || !strings.Contains(err.Error(), "FOLIO_HOME") {
		t.Fatalf("a 1 TiB layer with 10 GiB free: %v; want ErrDiskFull with both sizes", err)
	}
	if names := blobFiles(t, home); len(names) != 0 {
		t.Errorf("a refused layer left %v", names)
	}

	// With room for the claim, the download fails where the blob ends.
	free = 2 << 40
	_, err = installer.Pull(context.Background(), lie("tebibyte", 1<<40), testOptions(home, st))
	if !errors.Is(err, installer.ErrRegistry) {
		t.Errorf("a layer shorter than its manifest says: %v; want ErrRegistry", err)
	}
	if name, size := largest(home); size > int64(len(weights)) {
		t.Errorf("the failed pull left %s of %d bytes for a blob of %d", name, size, len(weights))
	}

	_, err = installer.Pull(context.Background(), lie("exbibyte", 1<<62), testOptions(home, st))
	if !errors.Is(err, installer.ErrRegistry) || !strings.Contains(err.Error(), "claims 4611686018427387904 bytes") {
		t.Errorf("a 4 EiB layer: %v; want ErrRegistry naming the size", err)
	}

	// A pull stopped after 1 MB resumes with room for the rest only.
	home, st = newHome(t)
	name := hub.Host() + "/library/tiny"
	var left atomic.Int64
	left.Store(1 << 20)
	restore := installer.SetPartialWriter(func(f *os.File) io.WriterAt { return fullDisk{f, &left} })
	_, err = installer.Pull(context.Background(), name, testOptions(home, st))
	restore()
	if !errors.Is(err, installer.ErrDiskFull) {
		t.Fatalf("the first pull: %v", err)
	}
	// The next pull reads the record once the stopped download has let go
	// of the file: with room for all but one byte, it fits only if the
	// bytes on disk count.
	free = int64(len(weights)) - 1
	if _, err := installer.Pull(context.Background(), name, testOptions(home, st)); err != nil {
		t.Fatalf("the resumed pull of %d bytes with %d free: %v", len(weights), free, err)
	}
}
