package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"folio/installer"
	"folio/models"
	"folio/models/gguf"
	"folio/store"
)

// ErrModelNotFound is wrapped when a name matches no model.
var ErrModelNotFound = errors.New("model not found")

// ModelEntry is a model the server can run, as the registry knows it.
type ModelEntry struct {
	Name     string // "stories260K:latest"
	Path     string // the GGUF file
	Size     int64
	Modified time.Time
	Digest   string // sha256 of the file, hex; computed once
}

// Registry maps model names to files: LibraryRegistry for folio serve
// (FOLIO_MODELS_PATH's folders and the store's registry), one model for a
// server that folio run starts in its own process. The server sees only
// this interface.
type Registry interface {
	List() ([]ModelEntry, error)
	// Resolve finds the model of name; ctx ends the hashing of a file.
	Resolve(ctx context.Context, name string) (ModelEntry, error)
	// Copy makes dst, a checked model name, another name of src.
	Copy(src ModelEntry, dst string) error
	Delete(name string) error
}

// NormalizeName adds the default tag: "llama3" is "llama3:latest".
func NormalizeName(name string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		return ""
	}
	if i := strings.LastIndexByte(name, ':'); i < 0 || strings.ContainsRune(name[i:], '/') {
		name += ":latest"
	}
	return name
}

// lookupName is the name a model is looked up by: NormalizeName's,
// without Ollama's default host and namespace, as Ollama resolves names:
// library/x and registry.ollama.ai/library/x are x:latest. A name that is
// no model name (a path) is only normalized.
func lookupName(name string) string {
	if n, err := installer.ParseName(strings.TrimSpace(name)); err == nil {
		return n.String()
	}
	return NormalizeName(name)
}

// LibraryRegistry lists the GGUF files in the folders of FOLIO_MODELS_PATH
// (a library used in place: never written, never deleted) and the models
// of the store's registry (folio.db), where copies made through the API
// are kept; without a store, copies live in memory.
type LibraryRegistry struct {
	Dirs  []string
	Store *store.Registry // nil: no persistent registry

	mu      sync.Mutex        // guards aliases and digests
	aliases map[string]string // normalized lower-case name → target name
	digests map[string]string // path|size|mtime → sha256
}

// NewLibraryRegistry is a registry of the GGUF files in dirs
// (FOLIO_MODELS_PATH's folders).
func NewLibraryRegistry(dirs []string) *LibraryRegistry {
	return &LibraryRegistry{Dirs: dirs,
		aliases: map[string]string{}, digests: map[string]string{}}
}

// List returns every GGUF file of the library and every alias.
func (r *LibraryRegistry) List() ([]ModelEntry, error) {
	var out []ModelEntry
	seen := map[string]bool{}
	for _, dir := range r.Dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.EqualFold(filepath.Ext(e.Name()), ".gguf") {
				continue
			}
			name := NormalizeName(strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())))
			if seen[strings.ToLower(name)] {
				continue
			}
			ent, err := r.entry(context.Background(), name, filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			seen[strings.ToLower(name)] = true
			out = append(out, ent)
		}
	}
	r.mu.Lock()
	aliases := make(map[string]string, len(r.aliases))
	for k, v := range r.aliases {
		aliases[k] = v
	}
	r.mu.Unlock()
	if r.Store != nil {
		stored, err := r.Store.Models()
		if err != nil {
			return nil, err
		}
		for _, m := range stored {
			if ent, err := r.entry(context.Background(), m.Name, m.Path); err == nil {
				out = append(out, ent)
			}
		}
	}
	for alias, target := range aliases {
		ent, err := r.Resolve(context.Background(), target)
		if err != nil {
			continue
		}
		ent.Name = alias
		out = append(out, ent)
	}
	slices.SortFunc(out, func(a, b ModelEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Resolve finds a name: an alias, a library file, a catalog name, or a
// path to a GGUF file.
func (r *LibraryRegistry) Resolve(ctx context.Context, name string) (ModelEntry, error) {
	norm := lookupName(name)
	if norm == "" {
		return ModelEntry{}, fmt.Errorf("%w: no model name given", ErrModelNotFound)
	}
	if r.Store != nil {
		if m, err := r.Store.Model(norm); err == nil {
			ent, err := r.entry(ctx, m.Name, m.Path)
			if want := strings.TrimPrefix(m.Digest, "sha256:"); err == nil && want != "" && ent.Digest != want {
				// the file changed since it was registered (damage on
				// disk, or an edit of a linked file): never serve it
				return ModelEntry{}, fmt.Errorf("%w: model %s: its file %s has sha256 %.12s, not %.12s as registered: it is damaged or was changed; pull or create the model again",
					gguf.ErrFormat, m.Name, m.Path, ent.Digest, want)
			}
			return ent, err
		}
	}
	r.mu.Lock()
	target, ok := r.aliases[strings.ToLower(norm)]
	r.mu.Unlock()
	if ok {
		ent, err := r.Resolve(ctx, target)
		ent.Name = norm
		return ent, err
	}
	base, tag, _ := strings.Cut(norm, ":")
	if tag != "latest" {
		return ModelEntry{}, fmt.Errorf("%w: %q (the library has only :latest tags)", ErrModelNotFound, name)
	}
	path, err := models.LocateIn(base, r.Dirs)
	if err != nil {
		return ModelEntry{}, fmt.Errorf("%w: %q: %v", ErrModelNotFound, name, err)
	}
	if !strings.ContainsAny(base, `/\`) { // a library file: named as /api/tags lists it
		norm = NormalizeName(strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	}
	return r.entry(ctx, norm, path)
}

func (r *LibraryRegistry) entry(ctx context.Context, name, path string) (ModelEntry, error) {
	st, err := os.Stat(path)
	if err != nil {
		return ModelEntry{}, err
	}
	ent := ModelEntry{Name: name, Path: path, Size: st.Size(), Modified: st.ModTime()}
	key := fmt.Sprintf("%s|%d|%d", path, st.Size(), st.ModTime().UnixNano())
	r.mu.Lock()
	ent.Digest = r.digests[key]
	r.mu.Unlock()
	if ent.Digest == "" {
		digest, _, err := models.FileDigestContext(ctx, path)
		if err != nil {
			return ModelEntry{}, err
		}
		ent.Digest = digest
		r.mu.Lock()
		r.digests[key] = ent.Digest
		r.mu.Unlock()
	}
	return ent, nil
}

// Copy makes dst another name of src's file: a row of the store's
// registry, or without a store an alias in memory.
func (r *LibraryRegistry) Copy(src ModelEntry, dst string) error {
	if r.Store != nil {
		now := time.Now()
		return r.Store.PutModel(store.Model{Name: dst, Digest: src.Digest, Path: src.Path, Size: src.Size, Format: "gguf", Created: now, Modified: now})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.aliases[strings.ToLower(dst)] = src.Name
	return nil
}

// Delete removes a name made by Copy. Files of the library are the user's:
// folio never deletes them.
func (r *LibraryRegistry) Delete(name string) error {
	norm := lookupName(name)
	if r.Store != nil {
		if _, err := r.Store.Model(norm); err == nil {
			return r.Store.DeleteModel(norm)
		}
	}
	n := strings.ToLower(norm)
	r.mu.Lock()
	_, ok := r.aliases[n]
	delete(r.aliases, n)
	r.mu.Unlock()
	if ok {
		return nil
	}
	if ent, err := r.Resolve(context.Background(), name); err == nil {
		return fmt.Errorf("%w: %s is the file %s in FOLIO_MODELS_PATH; folio does not delete files it did not create: remove it yourself",
			errBadRequest, ent.Name, ent.Path)
	}
	return fmt.Errorf("%w: %q", ErrModelNotFound, name)
}
