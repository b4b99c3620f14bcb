package installer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"folio/store"
)

// PushName checks a name to push to: a model name (ParseName) that names
// its namespace (namespace/model, host/namespace/model), on an Ollama
// registry, not Hugging Face.
func PushName(s string) (Name, error) {
	n, err := ParseName(s)
	if err != nil {
		return Name{}, err
	}
	if !strings.Contains(s, "/") {
		return Name{}, fmt.Errorf("%w: %.200q names no namespace: push to host/namespace/model[:tag] (folio cp %s HOST/NAMESPACE/%s gives the model such a name)",
			ErrName, s, s, n.Model)
	}
	if n.HuggingFace() {
		return Name{}, fmt.Errorf("%w: %.200q: folio pushes to Ollama registries, not to Hugging Face", ErrName, s)
	}
	return n, nil
}

// Push sends the registered model name to the registry its name names
// (https, or plain HTTP with Options.Insecure), as Ollama's push does:
// each blob of its manifest (the layers, then the config) that the
// registry lacks (HEAD) is uploaded (POST an upload, PUT its bytes with
// the digest), then the manifest is PUT. Progress is Ollama's:
// "retrieving manifest", "starting upload" and "pushing <digest prefix>"
// per blob, "pushing manifest", "success".
//
// Push reads only what the model's registration names: blobs/ by digest
// and the model's weights file (outside blobs/ for a file of
// FOLIO_MODELS_PATH or a linked one), each streamed from disk. A manifest
// without a config blob (folio create writes none) gets one made from the
// registry's row; the local manifest is not changed.
func Push(ctx context.Context, name string, opt Options) error {
	o, err := opt.withDefaults()
	if err != nil {
		return err
	}
	n, err := PushName(name)
	if err != nil {
		return err
	}
	o.status("retrieving manifest")
	unlock, err := o.homeLock() // a prune waits until the blobs are sent
	if err != nil {
		return err
	}
	defer unlock()
	man, srcs, err := o.pushManifest(n)
	if err != nil {
		return err
	}
	for _, l := range append(slices.Clip(man.Layers), man.Config) { // the config last, as Ollama
		if err := o.pushBlob(ctx, n, l, srcs[l.Digest]); err != nil {
			return err
		}
	}
	o.status("pushing manifest")
	data, err := json.Marshal(man)
	if err != nil {
		return err
	}
	u := registryURL(n, o.Insecure, "manifests", n.Tag)
	h := http.Header{"Content-Type": {MediaManifest}}
	if _, err := o.pushRequest(ctx, http.MethodPut, u, h, data, http.StatusCreated, http.StatusOK, http.StatusAccepted); err != nil {
		return pushErr(n, err)
	}
	o.status("success")
	return nil
}

// errBlobChanged is a blob whose file is not what was registered.
var errBlobChanged = errors.New("installer: a model file changed since it was registered")

// blobSource is where a blob's bytes are read from: a file, or bytes
// made for the push (a config).
type blobSource struct {
	path string
	data []byte
}

// pushManifest is the manifest to send for n (without folio's file
// paths, with a config) and where each of its blobs is read from.
func (o *Options) pushManifest(n Name) (Manifest, map[string]blobSource, error) {
	m, err := o.Store.Model(n.String())
	if errors.Is(err, store.ErrNotFound) {
		return Manifest{}, nil, &notFoundError{fmt.Sprintf("model %s not found: push sends a model registered under the name it is pushed as (folio cp SOURCE %s names one)", n, n)}
	}
	if err != nil {
		return Manifest{}, nil, err
	}
	if !strings.HasPrefix(m.Digest, "sha256:") {
		m.Digest = "sha256:" + m.Digest
	}
	man, err := readManifest(o.Home, n.String())
	if ml, ok := man.layer(MediaModel); err != nil || !ok || ml.Digest != m.Digest {
		man = Manifest{SchemaVersion: 2, MediaType: MediaManifest,
			Layers: []Layer{{MediaType: MediaModel, Digest: m.Digest, Size: m.Size}}}
	}
	man.SchemaVersion, man.MediaType = 2, MediaManifest
	srcs := map[string]blobSource{}
	for i, l := range man.Layers {
		if err := CheckDigest(l.Digest); err != nil {
			return Manifest{}, nil, fmt.Errorf("manifest of %s: %w", n, err)
		}
		p, _ := BlobPath(o.Home, l.Digest)
		if l.MediaType == MediaModel && l.Digest == m.Digest {
			p = m.Path // the registered weights file, in blobs/ or where it was registered
		} else if l.Path != "" {
			return Manifest{}, nil, fmt.Errorf("the manifest of %s is damaged: layer %s names a file (%q) that is not the model's registered weights; create or pull the model again",
				n, l.Digest, l.Path)
		}
		srcs[l.Digest] = blobSource{path: p}
		man.Layers[i].Path = ""
	}
	if man.Config.Digest == "" {
		data, err := json.Marshal(pushConfig(m, man.Layers))
		if err != nil {
			return Manifest{}, nil, err
		}
		sum := sha256.Sum256(data)
		man.Config = Layer{MediaType: MediaConfig, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
		srcs[man.Config.Digest] = blobSource{data: data}
	} else {
		p, err := BlobPath(o.Home, man.Config.Digest)
		if err != nil {
			return Manifest{}, nil, fmt.Errorf("manifest of %s: config: %w", n, err)
		}
		srcs[man.Config.Digest] = blobSource{path: p}
		man.Config.Path = ""
	}
	return man, srcs, nil
}

// modelConfig is the config blob of an Ollama model: what the weights
// are, and the layers by digest.
type modelConfig struct {
	ModelFormat   string   `json:"model_format"`
	ModelFamily   string   `json:"model_family"`
	ModelFamilies []string `json:"model_families"`
	ModelType     string   `json:"model_type"`
	FileType      string   `json:"file_type"`
	RootFS        struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func pushConfig(m store.Model, layers []Layer) modelConfig {
	c := modelConfig{ModelFormat: "gguf", ModelFamily: m.Family, ModelFamilies: []string{m.Family},
		ModelType: m.ParameterSize, FileType: m.Quantization}
	c.RootFS.Type = "layers"
	for _, l := range layers {
		c.RootFS.DiffIDs = append(c.RootFS.DiffIDs, l.Digest)
	}
	return c
}

// pushBlob sends one blob unless the registry has it, reporting progress
// from this goroutine while the upload runs in another.
func (o *Options) pushBlob(ctx context.Context, n Name, l Layer, src blobSource) error {
	label := "pushing " + l.Digest[len("sha256:"):len("sha256:")+12]
	resp, err := o.pushRequest(ctx, http.MethodHead, registryURL(n, o.Insecure, "blobs", l.Digest), nil, nil,
		http.StatusOK, http.StatusNotFound)
	if err != nil {
		return pushErr(n, err)
	}
	if resp.StatusCode == http.StatusOK {
		o.report(Progress{Status: label, Digest: l.Digest, Total: l.Size, Completed: l.Size})
		return nil
	}
	o.report(Progress{Status: "starting upload", Digest: l.Digest, Total: l.Size})
	var sent atomic.Int64
	done := make(chan error, 1)
	go func() { done <- o.upload(ctx, n, l, src, &sent) }()
	tick := time.NewTicker(o.ProgressEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return pushErr(n, err)
			}
			o.report(Progress{Status: label, Digest: l.Digest, Total: l.Size, Completed: l.Size})
			return nil
		case <-tick.C:
			o.report(Progress{Status: label, Digest: l.Digest, Total: l.Size, Completed: sent.Load()})
		}
	}
}

// upload POSTs an upload and PUTs the blob's bytes to it in one request,
// starting again after a network failure, a stall or a server error.
func (o *Options) upload(ctx context.Context, n Name, l Layer, src blobSource, sent *atomic.Int64) error {
	var err error
	for try := range manifestTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(o.RetryBase << try):
			}
		}
		sent.Store(0)
		err = o.uploadOnce(ctx, n, l, src, sent)
		var se *statusError
		if err == nil || ctx.Err() != nil || errors.As(err, &se) && !se.retryable() || errors.Is(err, errBlobChanged) {
			return err
		}
	}
	return err
}

func (o *Options) uploadOnce(ctx context.Context, n Name, l Layer, src blobSource, sent *atomic.Int64) error {
	start := registryURL(n, o.Insecure, "blobs", "uploads/")
	resp, err := o.pushRequest(ctx, http.MethodPost, start, nil, nil, http.StatusAccepted)
	if err != nil {
		return err
	}
	u, err := o.uploadLocation(start, resp.Header.Get("Location"))
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("digest", l.Digest)
	u.RawQuery = q.Encode()

	body, err := src.open(l)
	if err != nil {
		return err
	}
	defer body.Close()
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(o.StallTimeout, func() { cancel(errStalled) })
	defer stall.Stop()
	hash := sha256.New()
	r := &countingReader{r: io.TeeReader(body, hash), n: sent, read: func() { stall.Reset(o.StallTimeout) }}
	req, err := http.NewRequestWithContext(rctx, http.MethodPut, u.String(), r)
	if err != nil {
		return err
	}
	req.ContentLength = l.Size
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err = o.HTTP.Do(req)
	if err != nil {
		return stallCause(rctx, err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if got := "sha256:" + hex.EncodeToString(hash.Sum(nil)); sent.Load() == l.Size && got != l.Digest {
		// the registry must refuse these bytes; say why it did
		return fmt.Errorf("%w: %s hashes to %s, not %s; create or pull the model again",
			errBlobChanged, src.path, got, l.Digest)
	}
	if resp.StatusCode != http.StatusCreated {
		return newStatusError(resp)
	}
	return nil
}

// uploadLocation resolves the Location an upload was given against the
// URL that started it. It must stay on http(s), and on https unless
// Insecure.
func (o *Options) uploadLocation(start, loc string) (*url.URL, error) {
	if loc == "" {
		return nil, fmt.Errorf("%w: POST %s: 202 without a Location to upload to", ErrRegistry, start)
	}
	base, _ := url.Parse(start)
	ref, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("%w: POST %s: the Location %.200q is not a URL", ErrRegistry, start, loc)
	}
	u := base.ResolveReference(ref)
	if u.Scheme != defaultScheme && (u.Scheme != insecureScheme || !o.Insecure) {
		return nil, fmt.Errorf("%w: POST %s: the upload Location %s is not https", ErrRegistry, start, u.Redacted())
	}
	return u, nil
}

// open opens the blob for reading, checking that its size is l's.
func (s blobSource) open(l Layer) (io.ReadCloser, error) {
	if s.data != nil {
		return io.NopCloser(bytes.NewReader(s.data)), nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() != l.Size {
		f.Close()
		return nil, fmt.Errorf("%w: %s is not the %d-byte blob %s; create or pull the model again",
			errBlobChanged, s.path, l.Size, l.Digest)
	}
	return f, nil
}

// countingReader adds what it reads to n and calls read after each read.
type countingReader struct {
	r    io.Reader
	n    *atomic.Int64
	read func()
}

func (c *countingReader) Read(p []byte) (int, error) {
	k, err := c.r.Read(p)
	c.n.Add(int64(k))
	c.read()
	return k, err
}

// pushRequest makes a small request (HEAD, POST, a manifest's PUT),
// retrying network failures and server errors a few times, and returns
// the answer (body closed) when its status is one of want.
func (o *Options) pushRequest(ctx context.Context, method, u string, h http.Header, body []byte, want ...int) (*http.Response, error) {
	var err error
	for try := range manifestTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(o.RetryBase << try):
			}
		}
		var resp *http.Response
		resp, err = o.pushOnce(ctx, method, u, h, body, want)
		var se *statusError
		if err == nil || ctx.Err() != nil || errors.As(err, &se) && !se.retryable() {
			return resp, err
		}
	}
	return nil, err
}

func (o *Options) pushOnce(ctx context.Context, method, u string, h http.Header, body []byte, want []int) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, max(o.StallTimeout, 30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the body is the registry's to word: never passed on
	resp.Body.Close()
	for _, c := range want {
		if resp.StatusCode == c {
			return resp, nil
		}
	}
	return nil, newStatusError(resp)
}

// pushErr says what a registry that wants credentials means for a push.
func pushErr(n Name, err error) error {
	var se *statusError
	if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
		return fmt.Errorf("%w: %s: the registry wants credentials and folio sends none: push to a registry that takes anonymous pushes (a local one with --insecure)", err, n)
	}
	return err
}
