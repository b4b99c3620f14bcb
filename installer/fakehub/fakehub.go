// Package fakehub is a test server that speaks the two protocols folio
// pulls over: an Ollama registry (GET /v2/<ns>/<model>/manifests/<tag>
// and /v2/<ns>/<model>/blobs/<digest>, and the uploads of a push: see
// push.go) and Hugging Face's file API (GET
// /api/models/<org>/<repo>/tree/main, /api/models/<org>/<repo>?blobs=true,
// /<org>/<repo>/resolve/main/<file>), plus plain files at /files/<name>.
// Byte ranges are answered, and faults can be switched on: dropping the
// connection every N bytes, holding every response after N bytes until
// released, ignoring ranges, serving bytes that do not match the digest,
// failing every request with a status.
package fakehub

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Hub is the fake server. The faults may change between requests.
type Hub struct {
	*httptest.Server

	DropEvery atomic.Int64  // > 0: a response is cut after this many body bytes
	NoRanges  atomic.Bool   // answer 200 with the whole body to range requests
	NoTree    atomic.Bool   // 404 for the tree listing (the siblings listing still works)
	HoldAfter atomic.Int64  // > 0 with Hold set: a response begun now waits after this many bytes
	Hold      chan struct{} // set before the first request; closed to let held responses go on
	// Fail > 0: every request is answered with this status and FailBody,
	// which a client must not pass on to its users.
	Fail atomic.Int64

	Served   atomic.Int64 // body bytes of blobs and files written
	Requests atomic.Int64 // requests for blobs and files
	Uploaded atomic.Int64 // body bytes of blob uploads received

	mu        sync.Mutex
	servedBy  map[string]int64             // guarded by mu: body bytes by blob digest or file name
	blobs     map[string][]byte            // guarded by mu: digest → bytes served
	manifests map[string][]byte            // guarded by mu: "ns/model/tag" → JSON
	repos     map[string]map[string][]byte // guarded by mu: "org/repo" → path → bytes
	files     map[string][]byte            // guarded by mu: name → bytes
	lfs       map[string]string            // guarded by mu: "org/repo/path" → sha256 override
	uploads   map[string][]byte            // guarded by mu: upload id → bytes received so far
	nextID    int                          // guarded by mu: the id of the next upload
}

// New starts a hub on 127.0.0.1.
func New() *Hub {
	h := &Hub{blobs: map[string][]byte{}, manifests: map[string][]byte{}, repos: map[string]map[string][]byte{},
		files: map[string][]byte{}, lfs: map[string]string{}, servedBy: map[string]int64{}, uploads: map[string][]byte{}}
	h.Server = httptest.NewServer(h)
	return h
}

// Host is the hub's host:port, for names like HOST/library/tiny:latest.
func (h *Hub) Host() string { return strings.TrimPrefix(h.URL, "http://") }

// Digest is "sha256:<hex>" of data.
func Digest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Layer is a manifest layer to publish: a media type and its bytes.
type Layer struct {
	MediaType string
	Data      []byte
}

// Publish serves a model at ns/model:tag: a config blob and the layers.
func (h *Hub) Publish(ns, model, tag string, layers ...Layer) {
	type desc struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	}
	config := []byte(`{"model_format":"gguf","model_family":"llama"}`)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.blobs[Digest(config)] = config
	man := struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Config        desc   `json:"config"`
		Layers        []desc `json:"layers"`
	}{2, "application/vnd.docker.distribution.manifest.v2+json",
		desc{"application/vnd.docker.container.image.v1+json", Digest(config), int64(len(config))}, nil}
	for _, l := range layers {
		h.blobs[Digest(l.Data)] = l.Data
		man.Layers = append(man.Layers, desc{l.MediaType, Digest(l.Data), int64(len(l.Data))})
	}
	data, _ := json.Marshal(man)
	h.manifests[ns+"/"+model+"/"+tag] = data
}

// Bytes is the size of every blob of the model at ns/model:tag (the
// config included): what a pull of it fetches.
func (h *Hub) Bytes(ns, model, tag string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var man struct {
		Config struct{ Size int64 }
		Layers []struct{ Size int64 }
	}
	json.Unmarshal(h.manifests[ns+"/"+model+"/"+tag], &man)
	n := man.Config.Size
	for _, l := range man.Layers {
		n += l.Size
	}
	return n
}

// ServedOf is how many body bytes of one blob (by digest) or file (by
// name) were sent.
func (h *Hub) ServedOf(key string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.servedBy[key]
}

// SetManifest serves raw manifest JSON at ns/model:tag.
func (h *Hub) SetManifest(ns, model, tag string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.manifests[ns+"/"+model+"/"+tag] = data
}

// SetBlob serves data for digest, whether or not it matches.
func (h *Hub) SetBlob(digest string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.blobs[digest] = data
}

// AddRepoFile adds a file to a Hugging Face repository; lfsSHA256, when
// not empty, is what the listing says its sha256 is (else the real one;
// "-" lists it as a plain git file, without LFS metadata).
func (h *Hub) AddRepoFile(repo, path string, data []byte, lfsSHA256 string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.repos[repo] == nil {
		h.repos[repo] = map[string][]byte{}
	}
	h.repos[repo][path] = data
	if lfsSHA256 != "" {
		h.lfs[repo+"/"+path] = lfsSHA256
	}
}

// AddFile serves data at /files/<name>.
func (h *Hub) AddFile(name string, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[name] = data
}

// FailBody is the body of the answers that Fail makes.
const FailBody = "fakehub internal detail: stack trace and secrets"

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code := h.Fail.Load(); code > 0 {
		http.Error(w, strings.Repeat(FailBody+"\n", 64), int(code))
		return
	}
	p := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case len(p) == 6 && p[0] == "v2" && p[3] == "blobs" && p[4] == "uploads":
		h.upload(w, r, p[1]+"/"+p[2], p[5])
	case len(p) == 5 && p[0] == "v2" && p[3] == "manifests" && r.Method == http.MethodPut:
		h.putManifest(w, r, p[1]+"/"+p[2]+"/"+p[4])
	case len(p) == 5 && p[0] == "v2" && p[3] == "manifests":
		data, ok := h.lookup(h.manifests, p[1]+"/"+p[2]+"/"+p[4])
		if !ok {
			http.Error(w, `{"errors":[{"code":"MANIFEST_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
		w.Write(data)
	case len(p) == 5 && p[0] == "v2" && p[3] == "blobs":
		data, ok := h.lookup(h.blobs, p[4])
		h.serve(w, r, p[4], data, ok)
	case len(p) == 6 && p[0] == "api" && p[1] == "models" && p[4] == "tree" && p[5] == "main":
		h.tree(w, p[2]+"/"+p[3])
	case len(p) == 4 && p[0] == "api" && p[1] == "models":
		h.siblings(w, p[2]+"/"+p[3])
	case len(p) >= 5 && p[2] == "resolve" && p[3] == "main":
		h.mu.Lock()
		data, ok := h.repos[p[0]+"/"+p[1]][strings.Join(p[4:], "/")]
		h.mu.Unlock()
		h.serve(w, r, strings.Join(p[4:], "/"), data, ok)
	case len(p) == 2 && p[0] == "files":
		data, ok := h.lookup(h.files, p[1])
		h.serve(w, r, p[1], data, ok)
	default:
		http.NotFound(w, r)
	}
}

func (h *Hub) lookup(m map[string][]byte, key string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	data, ok := m[key]
	return data, ok
}

// repoFiles lists a repository's files with their LFS sha256 ("" for none).
func (h *Hub) repoFiles(repo string) (map[string][]byte, map[string]string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	files := map[string][]byte{}
	sums := map[string]string{}
	_, ok := h.repos[repo]
	for path, data := range h.repos[repo] {
		files[path] = data
		sums[path] = strings.TrimPrefix(Digest(data), "sha256:")
		if s, ok := h.lfs[repo+"/"+path]; ok {
			sums[path] = strings.TrimPrefix(s, "-")
		}
	}
	return files, sums, ok
}

func (h *Hub) tree(w http.ResponseWriter, repo string) {
	files, sums, ok := h.repoFiles(repo)
	if !ok || h.NoTree.Load() {
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	out := []map[string]any{{"type": "directory", "path": "docs", "size": 0, "oid": "0"}}
	for path, data := range files {
		e := map[string]any{"type": "file", "path": path, "size": len(data), "oid": "0123"}
		if sums[path] != "" {
			e["lfs"] = map[string]any{"oid": sums[path], "size": len(data), "pointerSize": 134}
		}
		out = append(out, e)
	}
	json.NewEncoder(w).Encode(out)
}

func (h *Hub) siblings(w http.ResponseWriter, repo string) {
	files, sums, ok := h.repoFiles(repo)
	if !ok {
		http.Error(w, `{"error":"Repository not found"}`, http.StatusNotFound)
		return
	}
	var sib []map[string]any
	for path, data := range files {
		e := map[string]any{"rfilename": path, "size": len(data), "blobId": "0123"}
		if sums[path] != "" {
			e["lfs"] = map[string]any{"sha256": sums[path], "size": len(data), "pointerSize": 134}
		}
		sib = append(sib, e)
	}
	json.NewEncoder(w).Encode(map[string]any{"id": repo, "siblings": sib})
}

// serve answers a GET or HEAD for data, with byte ranges and the faults.
func (h *Hub) serve(w http.ResponseWriter, r *http.Request, key string, data []byte, ok bool) {
	if !ok {
		http.NotFound(w, r)
		return
	}
	size := int64(len(data))
	start, end := int64(0), size-1
	status := http.StatusOK
	w.Header().Set("Accept-Ranges", "bytes")
	if rng := r.Header.Get("Range"); rng != "" && !h.NoRanges.Load() {
		a, b, ok := parseRange(rng, size)
		if !ok {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
			http.Error(w, "bad range", http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start, end, status = a, b, http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end, size))
	}
	w.Header().Set("Content-Length", strconv.FormatInt(end-start+1, 10))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	h.Requests.Add(1)
	body := data[start : end+1]
	var sent int64
	holdAt := h.HoldAfter.Load() // 0 once released
	drop := h.DropEvery.Load()
	for len(body) > 0 {
		n := min(int64(len(body)), 32<<10)
		if drop > 0 && sent+n > drop {
			n = drop - sent
		}
		if h.Hold != nil && holdAt > 0 && sent+n > holdAt {
			n = holdAt - sent
		}
		if n > 0 {
			if _, err := w.Write(body[:n]); err != nil {
				return // the client has gone
			}
			h.Served.Add(n)
			h.mu.Lock()
			h.servedBy[key] += n
			h.mu.Unlock()
			sent += n
			body = body[n:]
		}
		if drop > 0 && sent >= drop && len(body) > 0 {
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler) // the client sees the connection drop
		}
		if h.Hold != nil && holdAt > 0 && sent >= holdAt && len(body) > 0 {
			w.(http.Flusher).Flush()
			select {
			case <-h.Hold:
			case <-r.Context().Done():
				return
			}
			holdAt = 0
		}
	}
}

// parseRange reads "bytes=a-b" or "bytes=a-".
func parseRange(s string, size int64) (int64, int64, bool) {
	spec, ok := strings.CutPrefix(s, "bytes=")
	a, b, ok2 := strings.Cut(spec, "-")
	if !ok || !ok2 || strings.Contains(spec, ",") {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 || start >= size {
		return 0, 0, false
	}
	end := size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
			return 0, 0, false
		}
		end = min(end, size-1)
	}
	return start, end, true
}
