package installer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"folio/models"
	"folio/models/gguf"
	"folio/models/gotemplate"
	"folio/store"
)

// ErrTemplate is wrapped when a model's Go template would render without
// bound (models/gotemplate says why); the model is not registered.
var ErrTemplate = errors.New("installer: the template is refused")

// CreateRequest is what folio create and /api/create ask for. Empty
// fields keep what the model named by From has.
type CreateRequest struct {
	Name     string
	From     string            // a model: of the registry, of FOLIO_MODELS_PATH, or pulled
	FromFile string            // a GGUF file (a Modelfile's FROM path); never set from the API
	Files    map[string]string // file name → digest of a blob sent to /api/blobs
	// Link registers FromFile where it is (its digest computed) instead of
	// copying it into blobs/; the file must then stay unchanged.
	Link       bool
	Template   string
	System     string
	License    []string
	Parameters map[string]any // Ollama's option names; merged over From's
	Messages   []api.Message
}

// Create makes a model from a GGUF file, an uploaded blob or another model,
// with the template, system prompt, parameters, messages and licenses of
// req, and registers it.
func Create(ctx context.Context, req CreateRequest, opt Options) (store.Model, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return store.Model{}, err
	}
	n, err := ParseName(req.Name)
	if err != nil {
		return store.Model{}, err
	}
	for k := range req.Parameters {
		if _, err := api.FormatParams(map[string][]string{k: {"1"}}); err != nil {
			return store.Model{}, fmt.Errorf("%w: parameter %q: not one of Ollama's options", ErrName, k)
		}
	}
	// Types are checked as JSON gives them (FormatParams gives Go's).
	var asJSON map[string]any
	data, _ := json.Marshal(req.Parameters)
	json.Unmarshal(data, &asJSON)
	if err := (&api.Options{}).FromMap(asJSON); err != nil {
		return store.Model{}, fmt.Errorf("%w: parameters: %v", ErrName, err)
	}
	if err := gotemplate.Check(req.Template); err != nil {
		return store.Model{}, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	m, err := o.create(ctx, n, req)
	if err != nil {
		return store.Model{}, err
	}
	if _, err := o.Prune(); err != nil {
		return m, err
	}
	o.status("success")
	return m, nil
}

func (o *Options) create(ctx context.Context, n Name, req CreateRequest) (store.Model, error) {
	unlock, err := o.homeLock()
	if err != nil {
		return store.Model{}, err
	}
	defer unlock()
	base, err := o.base(ctx, req)
	if err != nil {
		return store.Model{}, err
	}
	cfg, err := o.readConfig(base)
	if err != nil {
		return store.Model{}, err
	}
	ml, _ := base.layer(MediaModel)
	layers := []Layer{ml}
	text := func(mediaType, s string) error {
		if s == "" {
			return nil
		}
		l, err := o.writeBytes(mediaType, []byte(s))
		layers = append(layers, l)
		return err
	}
	asJSON := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	params := cfg.Parameters
	if len(req.Parameters) > 0 {
		params = map[string]any{}
		for k, v := range cfg.Parameters {
			params[k] = v
		}
		for k, v := range req.Parameters {
			params[k] = v
		}
	}
	license, messages := cfg.License, cfg.Messages
	if len(req.License) > 0 {
		license = req.License
	}
	if len(req.Messages) > 0 {
		messages = req.Messages
	}
	err = errors.Join(text(MediaTemplate, cmp(req.Template, cfg.Template)), text(MediaSystem, cmp(req.System, cfg.System)))
	if len(params) > 0 {
		err = errors.Join(err, text(MediaParams, asJSON(params)))
	}
	if len(messages) > 0 {
		err = errors.Join(err, text(MediaMessages, asJSON(messages)))
	}
	for _, l := range license {
		err = errors.Join(err, text(MediaLicense, l))
	}
	if err != nil {
		return store.Model{}, err
	}
	o.status("writing manifest")
	return o.register(n, Manifest{SchemaVersion: 2, MediaType: MediaManifest, Layers: layers})
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// base is the manifest a new model starts from: an uploaded GGUF, a GGUF
// file (copied, or linked), or a model of the registry, pulled first if
// it is not there.
func (o *Options) base(ctx context.Context, req CreateRequest) (Manifest, error) {
	one := func(l Layer) Manifest {
		return Manifest{SchemaVersion: 2, MediaType: MediaManifest, Layers: []Layer{l}}
	}
	if len(req.Files) > 0 {
		l, err := o.uploaded(req.Files)
		return one(l), err
	}
	if req.FromFile != "" {
		l, err := o.fromFile(req.FromFile, req.Link)
		return one(l), err
	}
	if req.From == "" {
		return Manifest{}, fmt.Errorf("%w: no FROM: name a GGUF file or a model", ErrName)
	}
	if req.Link {
		return Manifest{}, fmt.Errorf("%w: --link needs FROM to be a GGUF file; %s is a model name", ErrName, req.From)
	}
	name := CanonicalName(req.From)
	if m, err := o.Store.Model(name); err == nil {
		if man, err := readManifest(o.Home, name); err == nil {
			return man, nil
		}
		digest := m.Digest
		if !strings.HasPrefix(digest, "sha256:") {
			digest = "sha256:" + digest
		}
		l := Layer{MediaType: MediaModel, Digest: digest, Size: m.Size}
		if bp, err := BlobPath(o.Home, digest); err != nil || bp != m.Path {
			l.Path = m.Path
		}
		return one(l), CheckDigest(digest)
	}
	// A file of FOLIO_MODELS_PATH, never a path relative to this process.
	if p, err := models.LocateIn(req.From, o.ModelDirs); err == nil && !fileExists(req.From) {
		l, err := o.fromFile(p, false)
		return one(l), err
	}
	po := *o
	po.Name = ""
	m, err := po.pull(ctx, req.From)
	if err != nil {
		return Manifest{}, err
	}
	return readManifest(o.Home, m.Name)
}

// uploaded is the model layer of /api/create's files: one GGUF blob,
// already sent to /api/blobs.
func (o *Options) uploaded(files map[string]string) (Layer, error) {
	var ls []Layer
	for name, digest := range files {
		if !strings.HasSuffix(strings.ToLower(name), ".gguf") {
			return Layer{}, fmt.Errorf("%w: files: %s: folio creates models from GGUF files only", ErrName, name)
		}
		p, err := BlobPath(o.Home, digest)
		if err != nil {
			return Layer{}, fmt.Errorf("files: %s: %w", name, err)
		}
		st, err := os.Stat(p)
		if err != nil {
			return Layer{}, fmt.Errorf("%w: files: %s: blob %s was not uploaded: POST it to /api/blobs/%s first", ErrNotFound, name, digest, digest)
		}
		ls = append(ls, Layer{MediaType: MediaModel, Digest: digest, Size: st.Size()})
	}
	if len(ls) != 1 {
		return Layer{}, fmt.Errorf("%w: files: %d GGUF files; folio creates a model from one", ErrName, len(ls))
	}
	return ls[0], nil
}

// CheckFromFile checks that a Modelfile's FROM file is a GGUF file: its
// magic and its whole header (gguf.Open). folio create calls it before it
// uploads the file to a server, and a create before it copies the file:
// no other file leaves its folder.
func CheckFromFile(p string) error {
	f, err := gguf.Open(p)
	if err != nil {
		return fmt.Errorf("%w: FROM %s is not a usable GGUF file: %w; FROM must be a GGUF file (llama.cpp's format) or the name of a model", ErrModelfile, p, err)
	}
	return f.Close()
}

// fromFile copies a GGUF file into blobs/, or with link only hashes it.
func (o *Options) fromFile(p string, link bool) (Layer, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return Layer{}, err
	}
	if err := CheckFromFile(abs); err != nil {
		return Layer{}, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return Layer{}, err
	}
	defer f.Close()
	if !link {
		o.status("copying file " + filepath.Base(abs))
		d, size, err := o.storeStream(f, "")
		return Layer{MediaType: MediaModel, Digest: d, Size: size}, err
	}
	o.status("hashing file " + filepath.Base(abs))
	d, size, err := hashFile(f)
	return Layer{MediaType: MediaModel, Digest: d, Size: size, Path: abs}, err
}

// writeBytes stores a small layer (template, system, ...).
func (o *Options) writeBytes(mediaType string, data []byte) (Layer, error) {
	sum := sha256.Sum256(data)
	d := "sha256:" + hex.EncodeToString(sum[:])
	if p, _ := BlobPath(o.Home, d); haveBlob(p, int64(len(data))) {
		o.status("using existing layer " + d)
		return Layer{MediaType: mediaType, Digest: d, Size: int64(len(data))}, nil
	}
	o.status("creating new layer " + d)
	_, _, err := o.storeStream(strings.NewReader(string(data)), d)
	return Layer{MediaType: mediaType, Digest: d, Size: int64(len(data))}, err
}

// storeStream writes r into blobs/ through a temporary file and returns
// its digest and size. With want set, bytes that do not hash to want are
// discarded (ErrDigest).
func (o *Options) storeStream(r io.Reader, want string) (string, int64, error) {
	dir := filepath.Join(o.Home, "blobs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", 0, err
	}
	tmp, err := os.CreateTemp(dir, "upload-*-partial")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	defer tmp.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(&reserveWriter{w: tmp, dir: dir, reserve: o.DiskReserve}, h), r, make([]byte, 4<<20))
	if err != nil {
		return "", n, err
	}
	got := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if want != "" && got != want {
		return "", n, fmt.Errorf("%w: got %s (%d bytes), want %s; nothing was kept", ErrDigest, got, n, want)
	}
	if err := errors.Join(tmp.Sync(), tmp.Chmod(0o600)); err != nil {
		return "", n, err
	}
	final, _ := BlobPath(o.Home, got)
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", n, err
	}
	syncDir(dir)
	return got, n, o.Store.PutBlob(store.Blob{Digest: got, Path: final, Size: n})
}

// HasBlob reports whether the blob of digest is in home's blobs/.
func HasBlob(home, digest string) bool {
	p, err := BlobPath(home, digest)
	return err == nil && haveBlob(p, -1)
}

// ImportBlob stores the bytes of r as the blob digest (POST /api/blobs):
// they are kept only if they hash to digest. Prune spares the blob for an
// hour, the time to name it in a create.
func ImportBlob(digest string, r io.Reader, opt Options) error {
	o, err := opt.withDefaults()
	if err != nil {
		return err
	}
	if err := CheckDigest(digest); err != nil {
		return err
	}
	uploads.mu.Lock()
	uploads.at[digest] = time.Now()
	uploads.mu.Unlock()
	if _, _, err = o.storeStream(r, digest); err != nil {
		claimUpload(digest)
	}
	return err
}
