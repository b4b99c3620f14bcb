package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// newInstallServer serves an empty registry in a fresh FOLIO_HOME, with
// the installer's endpoints on.
func newInstallServer(t *testing.T) (*api.Client, string, string) {
	t.Helper()
	home := t.TempDir()
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = nil, st
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 256},
		MaxBodyBytes: 1 << 20, Install: &installer.Options{Home: home, Store: st, MinPartSize: 256 << 10,
			RetryBase: time.Millisecond, ProgressEvery: 5 * time.Millisecond}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); st.Close() })
	u, _ := url.Parse(hs.URL)
	return api.NewClient(u, hs.Client()), hs.URL, home
}

func tinyBytes(t *testing.T, seed uint64) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(p, "llama", gguf.TypeQ8_0, seed); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestAPIPull: /api/pull streams Ollama's progress, which api.Client.Pull
// parses, and the model then runs; errors arrive in the stream.
func TestAPIPull(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := tinyBytes(t, 1)
	hub.Publish("library", "tiny", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: weights})
	c, _, _ := newInstallServer(t)
	ctx := context.Background()
	name := hub.Host() + "/library/tiny"
	var statuses []string
	var last api.ProgressResponse
	err := c.Pull(ctx, &api.PullRequest{Model: name, Insecure: true}, func(p api.ProgressResponse) error {
		if !slices.Contains(statuses, p.Status) {
			statuses = append(statuses, p.Status)
		}
		if p.Digest == fakehub.Digest(weights) {
			last = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	layer := "pulling " + fakehub.Digest(weights)[7:19]
	for _, s := range []string{"pulling manifest", layer, "verifying sha256 digest", "writing manifest", "success"} {
		if !slices.Contains(statuses, s) {
			t.Errorf("statuses %q lack %q", statuses, s)
		}
	}
	if last.Total != int64(len(weights)) || last.Completed != last.Total {
		t.Errorf("last progress of the weights: %+v", last)
	}
	var out strings.Builder
	err = c.Generate(ctx, &api.GenerateRequest{Model: name, Prompt: "hi", Raw: true,
		Options: map[string]any{"num_predict": 4, "temperature": 0}}, func(r api.GenerateResponse) error {
		out.WriteString(r.Response)
		return nil
	})
	if err != nil || out.Len() == 0 {
		t.Errorf("generate with the pulled model: %q, %v", out.String(), err)
	}
	list, err := c.List(ctx)
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != hub.Host()+"/library/tiny:latest" {
		t.Errorf("tags after the pull: %+v, %v", list, err)
	}

	err = c.Pull(ctx, &api.PullRequest{Model: hub.Host() + "/library/nosuch", Insecure: true}, func(api.ProgressResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "no such model") {
		t.Errorf("a missing model: %v", err)
	}
	no := false
	err = c.Pull(ctx, &api.PullRequest{Model: "../etc/passwd", Stream: &no}, func(api.ProgressResponse) error { return nil })
	if se, ok := err.(api.StatusError); !ok || se.StatusCode != http.StatusBadRequest {
		t.Errorf("a bad name, unstreamed: %v", err)
	}
}

// TestAPICreateAndBlobs: HEAD and POST /api/blobs/{digest} (checked
// against the digest, no body limit), then /api/create naming the blob.
func TestAPICreateAndBlobs(t *testing.T) {
	c, base, _ := newInstallServer(t)
	ctx := context.Background()
	weights := tinyBytes(t, 2) // larger than the server's 1 MiB body limit
	digest := fakehub.Digest(weights)
	head := func(d string) int {
		resp, err := http.Head(base + "/api/blobs/" + d)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := head(digest); s != http.StatusNotFound {
		t.Errorf("HEAD before upload: %d", s)
	}
	if s := head("sha256:..%2F..%2Fetc%2Fpasswd"); s != http.StatusBadRequest {
		t.Errorf("HEAD of a bad digest: %d", s)
	}
	err := c.CreateBlob(ctx, digest, bytes.NewReader(weights[1:]))
	if se, ok := err.(api.StatusError); !ok || se.StatusCode != http.StatusBadRequest || !strings.Contains(se.ErrorMessage, "digest") {
		t.Errorf("upload of other bytes: %v", err)
	}
	if err := c.CreateBlob(ctx, digest, bytes.NewReader(weights)); err != nil {
		t.Fatal(err)
	}
	if s := head(digest); s != http.StatusOK {
		t.Errorf("HEAD after upload: %d", s)
	}
	var statuses []string
	err = c.Create(ctx, &api.CreateRequest{Model: "made", Files: map[string]string{"tiny.gguf": digest},
		System: "Be brief.", Parameters: map[string]any{"temperature": 0.1}, License: []string{"MIT"}},
		func(p api.ProgressResponse) error { statuses = append(statuses, p.Status); return nil })
	if err != nil || statuses[len(statuses)-1] != "success" {
		t.Fatalf("create: %v (%q)", err, statuses)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "made"})
	if err != nil || show.Details.Family != "llama" {
		t.Errorf("show made: %+v, %v", show, err)
	}
	err = c.Create(ctx, &api.CreateRequest{Model: "q", From: "made", Quantize: "q4_K_M"}, func(api.ProgressResponse) error { return nil })
	if se, ok := err.(api.StatusError); !ok || se.StatusCode != http.StatusBadRequest {
		t.Errorf("quantize: %v", err)
	}
	err = c.Create(ctx, &api.CreateRequest{Model: "derived", From: "made", System: "Be verbose."}, func(api.ProgressResponse) error { return nil })
	if err != nil {
		t.Errorf("create from a model: %v", err)
	}
}
