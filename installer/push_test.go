package installer_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
)

// TestPushChangedFile: a model registered in place (create --link) whose
// file changed since (same size, other bytes) is not published: the push
// says which file changed, the registry keeps no blob of it and no
// manifest.
func TestPushChangedFile(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	home, st := newHome(t)
	opt := testOptions(home, st)
	weights := tinyGGUF(t, gguf.TypeQ8_0, 9)
	p := filepath.Join(t.TempDir(), "linked.gguf")
	if err := os.WriteFile(p, weights, 0o644); err != nil {
		t.Fatal(err)
	}
	name := hub.Host() + "/team/linked"
	ctx := context.Background()
	if _, err := installer.Create(ctx, installer.CreateRequest{Name: name, FromFile: p, Link: true}, opt); err != nil {
		t.Fatal(err)
	}
	changed := append([]byte(nil), weights...)
	changed[len(changed)-1] ^= 0xff // a weight of the last tensor
	if err := os.WriteFile(p, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	err := installer.Push(ctx, name, opt)
	if err == nil || !strings.Contains(err.Error(), "changed since it was registered") || !strings.Contains(err.Error(), p) {
		t.Errorf("push of a changed file: %v; want it named as changed", err)
	}
	if hub.Manifest("team", "linked", "latest") != nil {
		t.Error("the registry got a manifest")
	}
	for _, d := range []string{fakehub.Digest(weights), fakehub.Digest(changed)} {
		resp, err := http.Head(hub.URL + "/v2/team/linked/blobs/" + d)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD of blob %s after the push: %s; want 404", d, resp.Status)
		}
	}
	if n := hub.Uploaded.Load(); n != int64(len(weights)) {
		t.Errorf("the registry received %d bytes; want the %d of the file, streamed once and refused", n, len(weights))
	}
}

// TestPushReadsOnlyRegistered: a manifest under FOLIO_HOME that names a
// file for a layer other than the registered weights (as only an edit
// by hand could) is refused before anything is read or sent.
func TestPushReadsOnlyRegistered(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	home, st := newHome(t)
	opt := testOptions(home, st)
	ctx := context.Background()
	name := hub.Host() + "/team/edited"
	p := filepath.Join(t.TempDir(), "w.gguf")
	if err := os.WriteFile(p, tinyGGUF(t, gguf.TypeQ8_0, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := installer.Create(ctx, installer.CreateRequest{Name: name, FromFile: p, System: "hello"}, opt); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(home, "manifests", hub.Host(), "team", "edited", "latest")
	data, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	var man installer.Manifest
	if err := json.Unmarshal(data, &man); err != nil || len(man.Layers) != 2 {
		t.Fatalf("manifest %s: %v", data, err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("hello"), 0o600) // the bytes of the system layer, so its digest would match
	man.Layers[1].Path = secret
	data, _ = json.Marshal(man)
	if err := os.WriteFile(mp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	err = installer.Push(ctx, name, opt)
	if err == nil || !strings.Contains(err.Error(), "not the model's registered weights") {
		t.Errorf("push of a manifest naming %s: %v; want it refused", secret, err)
	}
	if n := hub.Uploaded.Load(); n != 0 {
		t.Errorf("%d bytes were sent", n)
	}
}

// TestPushLocationHTTPS: a registry reached over https cannot move the
// upload to plain HTTP (where the bytes would travel in the clear).
func TestPushLocationHTTPS(t *testing.T) {
	var uploads atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { uploads.Add(1) }))
	defer plain.Close()
	reg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodHead:
			http.NotFound(w, r)
		case http.MethodPost:
			w.Header().Set("Location", plain.URL+"/upload")
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer reg.Close()
	home, st := newHome(t)
	opt := testOptions(home, st)
	opt.Insecure, opt.HTTP = false, reg.Client()
	ctx := context.Background()
	name := strings.TrimPrefix(reg.URL, "https://") + "/team/tiny"
	p := filepath.Join(t.TempDir(), "w.gguf")
	if err := os.WriteFile(p, tinyGGUF(t, gguf.TypeQ8_0, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := installer.Create(ctx, installer.CreateRequest{Name: name, FromFile: p}, opt); err != nil {
		t.Fatal(err)
	}
	err := installer.Push(ctx, name, opt)
	if err == nil || !strings.Contains(err.Error(), "is not https") || !errors.Is(err, installer.ErrRegistry) {
		t.Errorf("push told to upload over plain HTTP: %v; want it refused", err)
	}
	if n := uploads.Load(); n != 0 {
		t.Errorf("the plain-HTTP server got %d requests", n)
	}
}
