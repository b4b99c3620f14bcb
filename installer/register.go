package installer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"

	"folio/models/gguf"
	"folio/models/gotemplate"
	"folio/store"
)

// register enters n in the registry: its manifest under manifests/, its
// blobs, and the model row (weights file, digest, size, the GGUF header's
// family, parameter count and quantization, the template and parameters
// layers). The weights must open as GGUF and a Go template must pass
// gotemplate.Check, or nothing is registered.
func (o *Options) register(n Name, man Manifest) (store.Model, error) {
	if err := man.check(); err != nil {
		return store.Model{}, err
	}
	ml, _ := man.layer(MediaModel)
	p := ml.Path
	if p == "" {
		p, _ = BlobPath(o.Home, ml.Digest)
	}
	f, err := gguf.Open(p)
	if err != nil {
		return store.Model{}, fmt.Errorf("%s: the model layer is not a usable GGUF file: %w", n, err)
	}
	sum := f.Summary()
	f.Close()
	cfg, err := o.readConfig(man)
	if err != nil {
		return store.Model{}, fmt.Errorf("%s: %w", n, err)
	}
	if err := gotemplate.Check(cfg.Template); err != nil {
		return store.Model{}, fmt.Errorf("%s: %w: %w", n, ErrTemplate, err)
	}
	m := store.Model{Name: n.String(), Digest: ml.Digest, Path: p, Size: ml.Size, Format: "gguf",
		Family: sum.Architecture, ParameterSize: gguf.ParamSize(sum.Parameters), Quantization: sum.Quantization,
		Template: cfg.Template}
	if cfg.Parameters != nil {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // stop strings such as "<|eot_id|>" stay readable
		enc.Encode(cfg.Parameters)
		m.Parameters = strings.TrimSpace(b.String())
	}
	for _, l := range man.blobs() {
		if l.Path != "" {
			continue
		}
		bp, _ := BlobPath(o.Home, l.Digest)
		if err := o.Store.PutBlob(store.Blob{Digest: l.Digest, Path: bp, Size: l.Size}); err != nil {
			return store.Model{}, err
		}
		claimUpload(l.Digest)
	}
	if err := writeManifest(n.manifestPath(o.Home), man); err != nil {
		return store.Model{}, err
	}
	if err := o.Store.PutModel(m); err != nil {
		return store.Model{}, err
	}
	return o.Store.Model(m.Name)
}

func writeManifest(p string, man Manifest) error {
	data, err := json.Marshal(man)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// Config is what a model's manifest adds to its weights.
type Config struct {
	Template   string
	System     string
	License    []string
	Parameters map[string]any
	Messages   []api.Message
}

// ReadConfig returns the template, system prompt, licenses, parameters
// and messages a registered model's manifest holds (all empty for a model
// without one).
func ReadConfig(home, name string) (Config, error) {
	man, err := readManifest(home, name)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, err
	}
	return (&Options{Home: home}).readConfig(man)
}

func readManifest(home, name string) (Manifest, error) {
	n, err := ParseName(name)
	if err != nil {
		return Manifest{}, err
	}
	data, err := os.ReadFile(n.manifestPath(home))
	if err != nil {
		return Manifest{}, err
	}
	var man Manifest
	if err := json.Unmarshal(data, &man); err != nil {
		return Manifest{}, fmt.Errorf("manifest of %s: %w", n, err)
	}
	return man, man.check()
}

func (o *Options) readConfig(man Manifest) (Config, error) {
	var c Config
	for _, l := range man.Layers {
		if l.MediaType == MediaModel {
			continue
		}
		text, err := o.readText(l)
		if err != nil {
			return c, err
		}
		switch l.MediaType {
		case MediaTemplate:
			c.Template = text
		case MediaSystem:
			c.System = text
		case MediaLicense:
			c.License = append(c.License, text)
		case MediaParams:
			if err := json.Unmarshal([]byte(text), &c.Parameters); err != nil {
				return c, fmt.Errorf("params layer %s is not a JSON object: %v", l.Digest, err)
			}
		case MediaMessages:
			if err := json.Unmarshal([]byte(text), &c.Messages); err != nil {
				return c, fmt.Errorf("messages layer %s is not a JSON list: %v", l.Digest, err)
			}
		}
	}
	return c, nil
}

// readText reads a small layer (template, system, ...).
func (o *Options) readText(l Layer) (string, error) {
	p, err := BlobPath(o.Home, l.Digest)
	if err != nil {
		return "", err
	}
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBlob+1))
	if err == nil && len(data) > maxConfigBlob {
		err = fmt.Errorf("layer %s (%s) is larger than %d bytes", l.Digest, l.MediaType, maxConfigBlob)
	}
	return string(data), err
}

// uploads are blobs sent to POST /api/blobs that no model uses yet:
// Prune leaves them alone for uploadGrace, the time a client has to send
// the /api/create that names them.
var uploads = struct {
	mu sync.Mutex
	at map[string]time.Time // guarded by mu: digest → when it arrived
}{at: map[string]time.Time{}}

const uploadGrace = time.Hour

func claimUpload(digest string) {
	uploads.mu.Lock()
	delete(uploads.at, digest)
	uploads.mu.Unlock()
}

func uploadedRecently(digest string) bool {
	uploads.mu.Lock()
	defer uploads.mu.Unlock()
	at, ok := uploads.at[digest]
	return ok && time.Since(at) < uploadGrace
}

// Prune removes the manifests of models the registry no longer has and
// the blobs that no remaining manifest or model uses, and returns how many
// blobs it removed. It never touches partial downloads or files outside
// blobs/. While a pull or create runs (here or in another process) it
// does nothing: that one prunes when it ends.
func (o *Options) Prune() (int, error) {
	lf, err := o.openHomeLock()
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	if ok, err := tryLock(lf, true); !ok || err != nil {
		return 0, err
	}
	ms, err := o.Store.Models()
	if err != nil {
		return 0, err
	}
	names := map[string]bool{}
	keep := map[string]bool{} // blob paths in use
	for _, m := range ms {
		names[m.Name] = true
		keep[m.Path] = true
	}
	mdir := filepath.Join(o.Home, "manifests")
	filepath.WalkDir(mdir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(mdir, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if len(parts) != 4 {
			return nil
		}
		n, err := ParseName(parts[0] + "/" + parts[1] + "/" + parts[2] + ":" + parts[3])
		if err != nil {
			return nil
		}
		man, err := readManifest(o.Home, n.String())
		if !names[n.String()] {
			os.Remove(p)
			return nil
		}
		if err == nil {
			for _, l := range man.blobs() {
				bp, _ := BlobPath(o.Home, l.Digest)
				keep[bp] = true
			}
		}
		return nil
	})
	entries, err := os.ReadDir(filepath.Join(o.Home, "blobs"))
	if err != nil {
		return 0, err
	}
	removed := 0
	for _, e := range entries {
		digest := "sha256:" + strings.TrimPrefix(e.Name(), "sha256-")
		p := filepath.Join(o.Home, "blobs", e.Name())
		if CheckDigest(digest) != nil || !e.Type().IsRegular() || keep[p] || uploadedRecently(digest) {
			continue
		}
		if err := os.Remove(p); err == nil {
			removed++
		}
		if err := o.Store.DeleteBlob(digest); err != nil && !errors.Is(err, store.ErrNotFound) {
			return removed, err
		}
	}
	return removed, nil
}
