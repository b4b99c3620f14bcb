package installer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Media types of an Ollama manifest and its layers.
const (
	MediaManifest  = "application/vnd.docker.distribution.manifest.v2+json"
	MediaConfig    = "application/vnd.docker.container.image.v1+json"
	MediaModel     = "application/vnd.ollama.image.model"
	MediaTemplate  = "application/vnd.ollama.image.template"
	MediaParams    = "application/vnd.ollama.image.params"
	MediaSystem    = "application/vnd.ollama.image.system"
	MediaLicense   = "application/vnd.ollama.image.license"
	MediaMessages  = "application/vnd.ollama.image.messages"
	maxManifest    = 4 << 20 // bytes of manifest JSON read at most
	maxLayers      = 256
	maxConfigBlob  = 4 << 20 // bytes of text layers (template, system, ...) read at most
	maxBlobSize    = 1 << 50 // bytes of one blob at most: 1 PiB, hundreds of times the largest model file
	manifestTries  = 4
	defaultScheme  = "https"
	insecureScheme = "http"
)

// ErrNotFound is wrapped when a registry, repository or model has no such
// name, tag or file.
var ErrNotFound = errors.New("installer: not found")

// Manifest is an Ollama model manifest: a config blob and the layers.
type Manifest struct {
	SchemaVersion int     `json:"schemaVersion"`
	MediaType     string  `json:"mediaType"`
	Config        Layer   `json:"config"`
	Layers        []Layer `json:"layers"`
}

// Layer is one blob of a manifest.
type Layer struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	// Path is set for a GGUF registered in place (folio create --link):
	// the file, which stays where it is, outside blobs/.
	Path string `json:"folio_path,omitempty"`
}

// blobs is every blob the manifest names: the config (if any) first.
func (m *Manifest) blobs() []Layer {
	var ls []Layer
	if m.Config.Digest != "" {
		ls = append(ls, m.Config)
	}
	return append(ls, m.Layers...)
}

// check refuses a manifest whose digests could not be file names, whose
// sizes are negative, or that holds no model (or two).
func (m *Manifest) check() error {
	if len(m.Layers) > maxLayers {
		return fmt.Errorf("%w: manifest has %d layers (at most %d)", ErrName, len(m.Layers), maxLayers)
	}
	models := 0
	for _, l := range m.blobs() {
		if err := CheckDigest(l.Digest); err != nil {
			return fmt.Errorf("manifest layer %s: %w", l.MediaType, err)
		}
		if l.Size < 0 {
			return fmt.Errorf("%w: manifest layer %s has size %d", ErrName, l.Digest, l.Size)
		}
		if l.MediaType == MediaModel {
			models++
		}
	}
	if models != 1 {
		return fmt.Errorf("%w: manifest has %d model layers (%s); folio needs exactly one", ErrName, models, MediaModel)
	}
	return nil
}

// layer returns the first layer of a media type.
func (m *Manifest) layer(mediaType string) (Layer, bool) {
	for _, l := range m.Layers {
		if l.MediaType == mediaType {
			return l, true
		}
	}
	return Layer{}, false
}

// registryURL is https://host/v2/namespace/model/<kind>/<ref> (http with
// insecure).
func registryURL(n Name, insecure bool, kind, ref string) string {
	scheme := defaultScheme
	if insecure {
		scheme = insecureScheme
	}
	return fmt.Sprintf("%s://%s/v2/%s/%s/%s/%s", scheme, n.Host, n.Namespace, n.Model, kind, ref)
}

// fetchManifest gets n's manifest from its registry and checks it.
func (o *Options) fetchManifest(ctx context.Context, n Name) (Manifest, error) {
	u := registryURL(n, o.Insecure, "manifests", n.Tag)
	data, err := o.getSmall(ctx, u, http.Header{"Accept": {MediaManifest}}, maxManifest)
	var se *statusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound {
		return Manifest{}, &notFoundError{fmt.Sprintf("pull model manifest: file does not exist: the registry has no such model or tag: %s (%s)", n, se)}
	}
	if errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden) {
		return Manifest{}, fmt.Errorf("%w: %s: the registry wants credentials; folio pulls public models only", err, n)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("pull manifest of %s: %w", n, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: the manifest of %s is not JSON: %v", ErrRegistry, n, err)
	}
	for _, l := range m.blobs() {
		if l.Size < 0 || l.Size > maxBlobSize {
			return Manifest{}, fmt.Errorf("%w: it sent an invalid manifest for %s: layer %.80s claims %d bytes (a blob has 0 to %s)",
				ErrRegistry, n, l.Digest, l.Size, sizeText(maxBlobSize))
		}
	}
	if err := m.check(); err != nil {
		return Manifest{}, fmt.Errorf("%w: it sent an invalid manifest for %s: %w", ErrRegistry, n, err)
	}
	for _, l := range m.blobs() {
		if l.Path != "" { // only folio create --link writes it, never a registry
			return Manifest{}, fmt.Errorf("%w: %w: the manifest of %s names a local file (%q)", ErrRegistry, ErrName, n, l.Path)
		}
	}
	return m, nil
}

// getSmall GETs a small document (a manifest, a file list), retrying
// network and server failures a few times.
func (o *Options) getSmall(ctx context.Context, u string, h http.Header, limit int64) ([]byte, error) {
	var err error
	for try := range manifestTries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(o.RetryBase << try):
			}
		}
		var data []byte
		data, err = o.getOnce(ctx, u, h, limit)
		var se *statusError
		if err == nil || ctx.Err() != nil || errors.As(err, &se) && !se.retryable() {
			return data, err
		}
	}
	return nil, err
}

func (o *Options) getOnce(ctx context.Context, u string, h http.Header, limit int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, max(o.StallTimeout, 30*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
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
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, newStatusError(resp)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%w: GET %s: answer larger than %d bytes", ErrRegistry, u, limit)
	}
	return data, err
}
