//go:build linux || darwin

package installer_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
)

// TestHomeFilesPrivate: what a pull and a create write into the home
// (blobs, the lock, manifests, their folders) is this user's only:
// folders 0700, files 0600, under a umask that would allow 0755/0644.
func TestHomeFilesPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	hub := fakehub.New()
	defer hub.Close()
	publishTiny(t, hub, gguf.TypeQ8_0)
	home, st := newHome(t)
	opt := testOptions(home, st)
	if _, err := installer.Pull(context.Background(), hub.Host()+"/library/tiny:latest", opt); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "other.gguf"), tinyGGUF(t, gguf.TypeQ8_0, 2), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := create(t, opt, dir, "ns/mine:v1", "FROM ./other.gguf\nSYSTEM Be brief.", false); err != nil {
		t.Fatal(err)
	}
	seen := 0
	filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			rel, _ := filepath.Rel(home, path)
			t.Errorf("%s: mode %v, want %v", rel, fi.Mode().Perm(), want)
		}
		seen++
		return nil
	})
	if seen < 12 { // home, blobs, 7 blobs, .lock, manifests and its folders, 2 manifests, the databases
		t.Errorf("%d entries in the home: the pull or the create wrote less than expected", seen)
	}
}
