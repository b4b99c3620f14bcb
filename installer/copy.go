package installer

import (
	"errors"
	"fmt"
	"syscall"

	"folio/store"
)

// CopySource is the model a copy starts from, as the server resolved it.
type CopySource struct {
	Name   string // the name it was asked by; its manifest, if any, is shared
	Path   string // the weights file
	Digest string // of Path: "sha256:<hex>"
	Size   int64
}

// Copy registers dst as another name of src (POST /api/copy, folio cp)
// under the rules of pull and create: dst is a model name (ParseName),
// the weights must open as GGUF (register), and the disk must keep
// DiskReserve free. dst gets src's manifest when it has one (its
// template, system prompt, parameters), as Ollama copies a manifest; a
// file of the library is registered where it is.
func Copy(src CopySource, dst string, opt Options) (store.Model, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return store.Model{}, err
	}
	n, err := ParseName(dst)
	if err != nil {
		return store.Model{}, err
	}
	if err := CheckDigest(src.Digest); err != nil {
		return store.Model{}, err
	}
	// A copy writes only a manifest and a row, but into the last bytes of
	// the disk, which SQLite's journals and the K/V store need.
	if free, err := freeSpace(o.Home); err == nil && o.DiskReserve >= 0 && free < o.DiskReserve {
		return store.Model{}, fmt.Errorf("%w: %s free on the disk of %s, and folio keeps %s of it free: free disk space (folio rm removes models you no longer use) or set FOLIO_HOME to a disk with room, then copy again",
			ErrDiskFull, mib(free), o.Home, mib(o.DiskReserve))
	}
	unlock, err := o.homeLock()
	if err != nil {
		return store.Model{}, copyDiskErr(err)
	}
	defer unlock()
	man, err := readManifest(o.Home, src.Name)
	if ml, ok := man.layer(MediaModel); err != nil || !ok || ml.Digest != src.Digest {
		l := Layer{MediaType: MediaModel, Digest: src.Digest, Size: src.Size}
		if bp, _ := BlobPath(o.Home, src.Digest); bp != src.Path {
			l.Path = src.Path // a library file or a linked one, used where it is
		}
		man = Manifest{SchemaVersion: 2, MediaType: MediaManifest, Layers: []Layer{l}}
	}
	m, err := o.register(n, man)
	return m, copyDiskErr(err)
}

// copyDiskErr makes a write that found the disk full (ENOSPC) say so.
func copyDiskErr(err error) error {
	if err != nil && errors.Is(err, syscall.ENOSPC) {
		return fmt.Errorf("%w: %v: free disk space (folio rm removes models you no longer use) or set FOLIO_HOME to a disk with room, then copy again",
			ErrDiskFull, err)
	}
	return err
}
