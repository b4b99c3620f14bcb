package fakehub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// The uploads of a push, as a Docker registry takes them:
//
//	POST  /v2/<ns>/<model>/blobs/uploads/              202, Location: the upload's URL
//	PATCH /v2/<ns>/<model>/blobs/uploads/<id>          a chunk, appended; 202
//	PUT   /v2/<ns>/<model>/blobs/uploads/<id>?digest=  the last bytes (or none); 201 if
//	                                                   all of them hash to the digest
//	PUT   /v2/<ns>/<model>/manifests/<tag>             201 if it is a Docker manifest v2
//	                                                   and every blob it names is here
//
// Blobs are shared by every repository, as the GETs serve them.

// maxUpload bounds what the hub keeps in memory for one blob.
const maxUpload = 1 << 30

func (h *Hub) upload(w http.ResponseWriter, r *http.Request, repo, id string) {
	h.mu.Lock()
	data, ok := h.uploads[id]
	if r.Method == http.MethodPost && id == "" {
		h.nextID++
		id = strconv.Itoa(h.nextID)
		h.uploads[id], ok = nil, true
	}
	h.mu.Unlock()
	if !ok {
		http.Error(w, `{"errors":[{"code":"BLOB_UPLOAD_UNKNOWN"}]}`, http.StatusNotFound)
		return
	}
	loc := "/v2/" + repo + "/blobs/uploads/" + id // relative, as registries may answer
	switch r.Method {
	case http.MethodPost:
		w.Header().Set("Location", loc)
		w.Header().Set("Docker-Upload-UUID", id)
		w.WriteHeader(http.StatusAccepted)
		return
	case http.MethodPatch, http.MethodPut:
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxUpload-int64(len(data))+1))
	h.Uploaded.Add(int64(len(body)))
	if err != nil {
		return // the client has gone; the upload stays as it was
	}
	data = append(data, body...)
	if len(data) > maxUpload {
		http.Error(w, `{"errors":[{"code":"SIZE_INVALID"}]}`, http.StatusRequestEntityTooLarge)
		return
	}
	h.mu.Lock()
	h.uploads[id] = data
	h.mu.Unlock()
	if r.Method == http.MethodPatch {
		w.Header().Set("Location", loc)
		w.Header().Set("Range", fmt.Sprintf("0-%d", max(len(data)-1, 0)))
		w.WriteHeader(http.StatusAccepted)
		return
	}
	digest := r.URL.Query().Get("digest")
	if Digest(data) != digest {
		http.Error(w, `{"errors":[{"code":"DIGEST_INVALID","message":"provided digest did not match uploaded content"}]}`, http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	delete(h.uploads, id)
	h.blobs[digest] = data
	h.mu.Unlock()
	w.Header().Set("Location", "/v2/"+repo+"/blobs/"+digest)
	w.Header().Set("Docker-Content-Digest", digest)
	w.WriteHeader(http.StatusCreated)
}

// putManifest keeps a manifest sent as Docker's manifest v2 whose config
// and layers are all here.
func (h *Hub) putManifest(w http.ResponseWriter, r *http.Request, key string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/vnd.docker.distribution.manifest.v2+json" {
		http.Error(w, `{"errors":[{"code":"MANIFEST_INVALID","message":"content type"}]}`, http.StatusBadRequest)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return
	}
	var man struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(data, &man); err != nil || man.Config.Digest == "" {
		http.Error(w, `{"errors":[{"code":"MANIFEST_INVALID"}]}`, http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range append([]string{man.Config.Digest}, layerDigests(man.Layers)...) {
		if _, ok := h.blobs[d]; !ok {
			http.Error(w, `{"errors":[{"code":"MANIFEST_BLOB_UNKNOWN"}]}`, http.StatusBadRequest)
			return
		}
	}
	h.manifests[key] = data
	w.Header().Set("Docker-Content-Digest", Digest(data))
	w.WriteHeader(http.StatusCreated)
}

func layerDigests(ls []struct{ Digest string }) []string {
	var ds []string
	for _, l := range ls {
		ds = append(ds, l.Digest)
	}
	return ds
}

// Manifest is the manifest JSON kept at ns/model:tag, or nil.
func (h *Hub) Manifest(ns, model, tag string) []byte {
	data, _ := h.lookup(h.manifests, ns+"/"+model+"/"+tag)
	return data
}
