package installer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"folio/models"
	"folio/store"
)

// Options configure Pull and Create. Home and Store are required; the
// zero value of every other field is the default.
type Options struct {
	Home     string          // FOLIO_HOME: blobs/ and manifests/ live here
	Store    *store.Registry // the registry (folio.db) models are entered in
	Insecure bool            // plain HTTP to a registry host (a local registry)
	// Name is what a URL pull is registered as; "": the file's name
	// without .gguf, tag latest.
	Name string
	// Progress receives Ollama's progress messages, from the goroutine
	// that called Pull or Create, one at a time. nil: none.
	Progress func(Progress)
	// HTTP makes every request; nil: a client with the default transport.
	HTTP *http.Client
	// HFEndpoint serves hf.co/ names (FOLIO_HF_ENDPOINT); "":
	// https://huggingface.co.
	HFEndpoint string
	// HFToken (HF_TOKEN) is sent to HFEndpoint, for gated and private
	// repositories; "": none.
	HFToken string
	// ModelDirs are FOLIO_MODELS_PATH's folders, where create finds a
	// FROM model given by name.
	ModelDirs []string

	Parts         int           // byte ranges fetched at once per blob; 0: 4
	MinPartSize   int64         // bytes per range (more for blobs over 1024 of them); 0: 64 MiB
	StallTimeout  time.Duration // a range that receives nothing this long is retried; 0: 30 s
	RetryBase     time.Duration // first wait before a retry, doubled each time; 0: 250 ms
	Retries       int           // tries in a row without progress before giving up; 0: 8
	SaveEvery     time.Duration // how often the resume record is written; 0: 1 s
	ProgressEvery time.Duration // how often progress is reported; 0: 100 ms
	// DiskReserve is the free space an upload or import into blobs/ leaves
	// on the disk at the least (SQLite's journals and the persisted K/V
	// need room too): past it the write stops with ErrDiskFull and keeps
	// nothing. 0: 256 MiB; negative: none.
	DiskReserve int64
}

// Progress is one progress message, as Ollama's /api/pull streams them:
// "pulling manifest", "pulling <digest prefix>" with Total and Completed
// bytes, "verifying sha256 digest", "writing manifest", "success".
type Progress struct {
	Status    string
	Digest    string // the layer being pulled, if any
	Total     int64  // bytes of that layer; 0 when unknown
	Completed int64
}

// defaultClient keeps a connection per range worker open between ranges
// (the default transport keeps two per host).
var defaultClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: t}
}()

func (o Options) withDefaults() (*Options, error) {
	if o.Home == "" || o.Store == nil {
		return nil, errors.New("installer: Options.Home and Options.Store are required")
	}
	if o.HTTP == nil {
		o.HTTP = defaultClient
	}
	if o.Parts <= 0 {
		o.Parts = 4
	}
	if o.MinPartSize <= 0 {
		o.MinPartSize = 64 << 20
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 30 * time.Second
	}
	if o.RetryBase <= 0 {
		o.RetryBase = 250 * time.Millisecond
	}
	if o.Retries <= 0 {
		o.Retries = 8
	}
	if o.SaveEvery <= 0 {
		o.SaveEvery = time.Second
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 100 * time.Millisecond
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = 256 << 20
	}
	return &o, nil
}

func (o *Options) report(p Progress) {
	if o.Progress != nil {
		o.Progress(p)
	}
}

func (o *Options) status(s string) { o.report(Progress{Status: s}) }

// Pull fetches a model and enters it in the registry, then removes the
// blobs no model uses. name is one of
//
//	[host/][namespace/]model[:tag]   an Ollama registry (registry.ollama.ai/library/…:latest)
//	hf.co/ORG/REPO[:QUANT]           a GGUF file of a Hugging Face repository (Q4_K_M)
//	https://…/file.gguf              a plain URL (its sha256 is computed, not checked)
//	stories260k                      a name of folio's catalog
//
// Every blob is verified against its sha256 before it enters blobs/ and
// before anything is registered. A pull that is interrupted resumes.
func Pull(ctx context.Context, name string, opt Options) (store.Model, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return store.Model{}, err
	}
	m, err := o.pull(ctx, strings.TrimSpace(name))
	if err != nil {
		return store.Model{}, err
	}
	o.status("removing unused layers")
	if _, err := o.Prune(); err != nil {
		return m, err
	}
	o.status("success")
	return m, nil
}

func (o *Options) pull(ctx context.Context, name string) (store.Model, error) {
	unlock, err := o.homeLock()
	if err != nil {
		return store.Model{}, err
	}
	defer unlock()
	if strings.HasPrefix(name, "http://") || strings.HasPrefix(name, "https://") {
		return o.pullURL(ctx, name, "")
	}
	if e, ok := models.Catalog(name); ok {
		if o.Name == "" {
			o.Name = e.Name
		}
		return o.pullURL(ctx, e.URL, "sha256:"+e.SHA256)
	}
	n, err := ParseName(name)
	if err != nil {
		return store.Model{}, err
	}
	o.status("pulling manifest")
	var man Manifest
	var fetches []fetch
	if n.HuggingFace() {
		f, err := o.hfFetch(ctx, n)
		if err != nil {
			return store.Model{}, err
		}
		fetches = []fetch{f}
	} else {
		if man, err = o.fetchManifest(ctx, n); err != nil {
			return store.Model{}, err
		}
		for _, l := range man.blobs() {
			fetches = append(fetches, fetch{url: registryURL(n, o.Insecure, "blobs", l.Digest),
				digest: l.Digest, size: l.Size, ranges: true, key: l.Digest[len("sha256:"):]})
		}
	}
	digests, err := o.fetchAll(ctx, fetches)
	if err != nil {
		return store.Model{}, err
	}
	if n.HuggingFace() {
		man = Manifest{SchemaVersion: 2, MediaType: MediaManifest,
			Layers: []Layer{{MediaType: MediaModel, Digest: digests[0], Size: fetches[0].size}}}
		if fetches[0].digest == "" {
			o.status("computed sha256 digest " + digests[0] + " (the repository publishes none for this file)")
		}
	}
	o.status("verifying sha256 digest")
	o.status("writing manifest")
	return o.register(n, man)
}

// pullURL fetches one GGUF file by URL; digest, when known (catalog), is
// checked, otherwise computed and reported as such.
func (o *Options) pullURL(ctx context.Context, u, digest string) (store.Model, error) {
	name := o.Name
	if name == "" {
		pu, err := url.Parse(u)
		if err != nil {
			return store.Model{}, fmt.Errorf("%w: %q is not a URL", ErrName, u)
		}
		name = strings.TrimSuffix(path.Base(pu.Path), ".gguf")
	}
	n, err := ParseName(name)
	if err != nil {
		return store.Model{}, fmt.Errorf("%w; name the model (folio pull --name NAME URL)", err)
	}
	f, err := o.urlFetch(ctx, u)
	if err != nil {
		return store.Model{}, err
	}
	if digest != "" {
		f.digest, f.key = digest, digest[len("sha256:"):]
	}
	digests, err := o.fetchAll(ctx, []fetch{f})
	if err != nil {
		return store.Model{}, err
	}
	if digest == "" {
		o.status("computed sha256 digest " + digests[0] + " (a URL publishes none to verify against)")
	} else {
		o.status("verifying sha256 digest")
	}
	size := f.size
	if st, err := os.Stat(filepath.Join(o.Home, "blobs", "sha256-"+digests[0][len("sha256:"):])); err == nil {
		size = st.Size()
	}
	o.status("writing manifest")
	return o.register(n, Manifest{SchemaVersion: 2, MediaType: MediaManifest,
		Layers: []Layer{{MediaType: MediaModel, Digest: digests[0], Size: size}}})
}

// fetchAll downloads the blobs at once (sharing downloads with other
// pulls of this process), reporting each one's progress, and returns
// their digests. The first failure stops the others.
func (o *Options) fetchAll(ctx context.Context, fs []fetch) ([]string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		i      int
		digest string
		err    error
	}
	results := make(chan result, len(fs))
	fls := make([]*flight, len(fs))
	joinedAt := make([]int64, len(fs))
	for i, f := range fs {
		fls[i], joinedAt[i] = o.join(f)
		go func() {
			d, err := fls[i].wait(ctx)
			results <- result{i, d, err}
		}()
	}
	label := func(i int) Progress {
		p := Progress{Digest: fs[i].digest, Total: max(fls[i].total.Load(), 0), Completed: fls[i].completed.Load()}
		if p.Digest != "" {
			p.Status = "pulling " + p.Digest[len("sha256:"):len("sha256:")+12]
		} else {
			p.Status = "pulling " + path.Base(fs[i].url)
		}
		return p
	}
	done := make([]bool, len(fs))
	report := func() {
		for i := range fs {
			if !done[i] {
				o.report(label(i))
			}
		}
	}
	for i := range fs { // where each began, not where its download has got to since
		p := label(i)
		p.Completed = joinedAt[i]
		o.report(p)
	}
	tick := time.NewTicker(o.ProgressEvery)
	defer tick.Stop()
	digests := make([]string, len(fs))
	var first error
	for left := len(fs); left > 0; {
		select {
		case r := <-results:
			left--
			if r.err != nil {
				if first == nil {
					first = r.err
					cancel()
				}
				continue
			}
			digests[r.i] = r.digest
			p := label(r.i)
			p.Completed = p.Total
			o.report(p)
			done[r.i] = true
		case <-tick.C:
			report()
		}
	}
	return digests, first
}

// homeLock holds a shared lock on the home directory while a pull or a
// create runs, so that a prune (which takes it exclusively) never removes
// blobs that are about to be registered, in this process or another.
func (o *Options) homeLock() (unlock func(), err error) {
	f, err := o.openHomeLock()
	if err != nil {
		return nil, err
	}
	if err := lock(f, false); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

func (o *Options) openHomeLock() (*os.File, error) {
	if err := os.MkdirAll(filepath.Join(o.Home, "blobs"), 0o700); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(o.Home, "blobs", ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
}
