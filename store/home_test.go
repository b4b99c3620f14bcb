//go:build linux || darwin

package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"folio/internal/fixtures"
)

// modes is the permission bits of every entry under root (links as
// links), by path relative to root.
func modes(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[rel] = fi.Mode().Perm()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHomePermissions: a new home is created 0700 with 0600 database
// files (and -wal, -shm) whatever the umask allows; an existing home
// left 0755 with 0644 files (an older folio's) is tightened at Open:
// folders 0700, files 0600; links, what they point to and entries that
// are not folio's are left alone.
func TestHomePermissions(t *testing.T) {
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })

	t.Run("new", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		openRegistryTest(t, home, RegistryOptions{})
		s := openTest(t, home, KVOptions{MaxBytes: 1 << 30})
		save(s, testFP, makeBlock(0, 4096))
		s.Flush()
		got := modes(t, home)
		for _, name := range []string{".", registryFile, registryFile + "-wal", registryFile + "-shm", kvFile, kvFile + "-wal", kvFile + "-shm"} {
			want := fs.FileMode(0o600)
			if name == "." {
				want = 0o700
			}
			if m, ok := got[name]; !ok || m != want {
				t.Errorf("%s: mode %v (present %v), want %v", name, m, ok, want)
			}
		}
	})

	t.Run("existing", func(t *testing.T) {
		home := t.TempDir()
		openTest(t, home, KVOptions{MaxBytes: 1 << 30}).Close()
		outside := filepath.Join(t.TempDir(), "model.gguf")
		write := func(name string) {
			path := filepath.Join(home, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("blobs/sha256-00")
		write("manifests/registry.ollama.ai/library/m/latest")
		if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(home, "blobs", "link")); err != nil {
			t.Fatal(err)
		}
		write("notes/todo.txt") // not folio's: left alone
		// What an older folio left: 0755 folders, 0644 files.
		filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
			switch {
			case d.IsDir():
				os.Chmod(path, 0o755)
			case d.Type().IsRegular():
				os.Chmod(path, 0o644)
			}
			return nil
		})

		log, logs := newLog()
		openTest(t, home, KVOptions{MaxBytes: 1 << 30, Log: log}).Close()
		for name, m := range modes(t, home) {
			fi, _ := os.Lstat(filepath.Join(home, name))
			want := fs.FileMode(0o600)
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				continue
			case strings.HasPrefix(name, "notes"):
				want = 0o644
				if fi.IsDir() {
					want = 0o755
				}
			case fi.IsDir():
				want = 0o700
			}
			if m != want {
				t.Errorf("%s: mode %v, want %v", name, m, want)
			}
		}
		if fi, err := os.Stat(outside); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("the file a link in the home points to: %v, %v; want it untouched (0644)", fi.Mode(), err)
		}
		if lines := logs.lines("permissions"); len(lines) != 1 {
			t.Errorf("log lines about permissions: %q, want one", lines)
		}
	})
}

// TestHomeNotWritable: a FOLIO_HOME this process cannot write (read-only
// for this user, an immutable folder or a read-only mount for root) or
// that is a file is an error that names the home, the cause and what to
// change, not SQLite's "unable to open database file".
func TestHomeNotWritable(t *testing.T) {
	t.Run("read-only", func(t *testing.T) {
		home := fixtures.ReadOnlyDir(t)
		_, err := OpenKV(home, KVOptions{MaxBytes: 1 << 30})
		checkHomeErr(t, err, "FOLIO_HOME "+home+" is not writable")
		_, err = OpenRegistry(home, RegistryOptions{})
		checkHomeErr(t, err, "FOLIO_HOME "+home+" is not writable")
	})
	t.Run("file", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		if err := os.WriteFile(home, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := OpenKV(home, KVOptions{MaxBytes: 1 << 30})
		checkHomeErr(t, err, "FOLIO_HOME "+home+" is not a folder")
		_, err = OpenRegistry(home, RegistryOptions{})
		checkHomeErr(t, err, "FOLIO_HOME "+home+" is not a folder")
	})
}

func checkHomeErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatal("Open succeeded")
	}
	msg := err.Error()
	for _, w := range []string{want, "set FOLIO_HOME"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q does not say %q", msg, w)
		}
	}
	if strings.Contains(msg, "unable to open database file") {
		t.Errorf("error %q is SQLite's, not the cause", msg)
	}
}
