package store

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The home holds conversations (prompt token IDs in kvcache.db) and the
// models a user pulled: it is this user's only. Open creates it 0700,
// creates the databases 0600 (SQLite gives -wal and -shm the database's
// mode), and tightens what an older folio or another program left
// looser in folio's entries: folders 0700, files 0600. Links are left as
// they are, and so is what they point to.

// makeHome creates home (0700) if needed and checks that this process
// can create files in it; an error says what to change.
func makeHome(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("store: FOLIO_HOME %s is not a folder: move what is there, or set FOLIO_HOME to another folder", home)
		}
		return fmt.Errorf("store: cannot create FOLIO_HOME %s: %v; create it, or set FOLIO_HOME to a folder this user can write", home, cause(err))
	}
	probe, err := os.CreateTemp(home, ".write-check-*")
	if err != nil {
		return fmt.Errorf("store: FOLIO_HOME %s is not writable: %v; make it writable by this user (the registry and caches are written there), or set FOLIO_HOME to a folder that is", home, cause(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// tightenHome makes folio's entries in home owner-only: home itself, the
// databases with their -wal, -shm and copies moved aside, and the trees
// blobs/ and manifests/ (the installer's): folders 0700 at most, files
// 0600 at most. Other entries are not folio's (FOLIO_HOME may be a
// folder the user keeps other things in) and are left alone. It returns
// how many it changed and the first error among those it could not
// change (it goes on past them).
func tightenHome(home string) (changed int, first error) {
	root, err := filepath.EvalSymlinks(home) // a home that is a link: its folder
	if err != nil {
		return 0, err
	}
	fix := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				first = cmp.Or(first, err)
			}
			return nil
		}
		want := fs.FileMode(0o600)
		switch {
		case d.IsDir():
			want = 0o700
		case !d.Type().IsRegular():
			return nil // a link (Chmod would follow it), a socket, a pipe
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed since it was listed
		}
		if fi.Mode().Perm()&^want == 0 {
			return nil
		}
		if err := os.Chmod(path, fi.Mode().Perm()&want); err != nil {
			first = cmp.Or(first, err)
			return nil
		}
		changed++
		return nil
	}
	if fi, err := os.Stat(root); err == nil {
		fix(root, fs.FileInfoToDirEntry(fi), nil)
	}
	names := []string{kvFile + damagedSuffix}
	for _, db := range []string{registryFile, kvFile} {
		names = append(names, db, db+"-wal", db+"-shm")
	}
	copies, _ := filepath.Glob(filepath.Join(root, kvFile+".corrupt-*"))
	for _, name := range names {
		copies = append(copies, filepath.Join(root, name))
	}
	for _, path := range copies {
		if fi, err := os.Lstat(path); err == nil {
			fix(path, fs.FileInfoToDirEntry(fi), nil)
		}
	}
	for _, tree := range []string{"blobs", "manifests"} {
		filepath.WalkDir(filepath.Join(root, tree), fix)
	}
	return changed, first
}

// createPrivate creates path 0600 if it does not exist, so that SQLite,
// which creates a database 0644 less the umask, opens it as it is and
// gives its -wal and -shm the same mode.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// cause is the system's reason in a path error ("permission denied",
// "read-only file system"), without the path the message already names.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
