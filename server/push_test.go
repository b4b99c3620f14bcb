package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"folio/runner"
	"folio/server"
	"folio/store"
)

// newPushServer is newInstallServer's server with lib (file name →
// bytes) in a folder of FOLIO_MODELS_PATH.
func newPushServer(t *testing.T, lib map[string][]byte) (*api.Client, string, string) {
	t.Helper()
	home, dir := t.TempDir(), t.TempDir()
	for name, data := range lib {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = []string{dir}, st
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 256},
		MaxBodyBytes: 1 << 20, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Install: &installer.Options{Home: home, Store: st, RetryBase: time.Millisecond, ProgressEvery: 5 * time.Millisecond}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close(); st.Close() })
	u, _ := url.Parse(hs.URL)
	return api.NewClient(u, hs.Client()), hs.URL, home
}

// postPush sends /api/push as JSON and returns the status and body.
func postPush(t *testing.T, base, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/api/push", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// pushProgress pushes name through api.Client and returns each status
// once, in order of first appearance, and the last progress of digest.
func pushProgress(t *testing.T, c *api.Client, name, digest string) ([]string, api.ProgressResponse) {
	t.Helper()
	var statuses []string
	var last api.ProgressResponse
	err := c.Push(context.Background(), &api.PushRequest{Model: name, Insecure: true}, func(p api.ProgressResponse) error {
		if !slices.Contains(statuses, p.Status) {
			statuses = append(statuses, p.Status)
		}
		if p.Digest == digest {
			last = p
		}
		return nil
	})
	if err != nil {
		t.Fatalf("push %s: %v (statuses %q)", name, err, statuses)
	}
	return statuses, last
}

// pushGreedy is what the model answers to "hi" at temperature 0.
func pushGreedy(t *testing.T, c *api.Client, name string) string {
	t.Helper()
	var out strings.Builder
	err := c.Generate(context.Background(), &api.GenerateRequest{Model: name, Prompt: "hi",
		Options: map[string]any{"num_predict": 6, "temperature": 0}}, func(r api.GenerateResponse) error {
		out.WriteString(r.Response)
		return nil
	})
	if err != nil || out.Len() == 0 {
		t.Fatalf("generate with %s: %q, %v", name, out.String(), err)
	}
	return out.String()
}

// digestOf is the digest /api/tags gives name.
func digestOf(t *testing.T, c *api.Client, name string) string {
	t.Helper()
	list, err := c.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range list.Models {
		if m.Name == name {
			return m.Digest
		}
	}
	t.Fatalf("%s is not in /api/tags: %+v", name, list.Models)
	return ""
}

// TestAPIPush: a model created from an uploaded blob (with a system
// prompt and parameters) and one copied from a FOLIO_MODELS_PATH file
// (outside blobs/) are pushed to the fake registry with Ollama's
// progress, streamed and not; a second server pulls them back as the
// same models (digest, system prompt, greedy output). Blobs the registry
// has are not sent again.
func TestAPIPush(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights, libWeights := tinyBytes(t, 3), tinyBytes(t, 4)
	c, base, home := newPushServer(t, map[string][]byte{"lib.gguf": libWeights})
	ctx := context.Background()
	name := hub.Host() + "/team/tiny:latest"
	digest := fakehub.Digest(weights)
	if err := c.CreateBlob(ctx, digest, bytes.NewReader(weights)); err != nil {
		t.Fatal(err)
	}
	err := c.Create(ctx, &api.CreateRequest{Model: name, Files: map[string]string{"tiny.gguf": digest},
		System: "You answer in one word.", Parameters: map[string]any{"seed": 7}}, func(api.ProgressResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}

	statuses, last := pushProgress(t, c, name, digest)
	layer := "pushing " + digest[7:19]
	want := []string{"retrieving manifest", "starting upload", layer, "pushing manifest", "success"}
	if i := slices.Index(statuses, layer); len(statuses) < 5 || statuses[0] != want[0] || statuses[1] != want[1] || i < 0 ||
		!slices.Equal(statuses[len(statuses)-2:], want[3:]) {
		t.Errorf("statuses %q; want %q in this order (a pushing row per blob)", statuses, want)
	}
	if last.Status != layer || last.Total != int64(len(weights)) || last.Completed != last.Total {
		t.Errorf("last progress of the weights: %+v; want all %d bytes", last, len(weights))
	}
	sent := hub.Uploaded.Load()
	if sent < int64(len(weights)) {
		t.Errorf("the registry received %d bytes; the weights alone are %d", sent, len(weights))
	}
	man := string(hub.Manifest("team", "tiny", "latest"))
	if !strings.Contains(man, installer.MediaConfig) || !strings.Contains(man, installer.MediaSystem) || strings.Contains(man, "folio_path") {
		t.Errorf("pushed manifest %s: want a config and the system layer, and no local path", man)
	}

	// Pushed again: every blob is there (HEAD), only the manifest is sent.
	statuses, last = pushProgress(t, c, name, digest)
	if slices.Contains(statuses, "starting upload") || last.Completed != int64(len(weights)) || hub.Uploaded.Load() != sent {
		t.Errorf("a second push: statuses %q, weights %+v, %d bytes uploaded; want every blob skipped",
			statuses, last, hub.Uploaded.Load()-sent)
	}
	if err := c.Copy(ctx, &api.CopyRequest{Source: name, Destination: hub.Host() + "/other/tiny:v2"}); err != nil {
		t.Fatal(err)
	}
	if status, body := postPush(t, base, fmt.Sprintf(`{"model": %q, "insecure": true, "stream": false}`, hub.Host()+"/other/tiny:v2")); status != http.StatusOK || strings.TrimSpace(body) != `{"status":"success"}` {
		t.Errorf("push unstreamed: %d %s; want 200 {\"status\":\"success\"}", status, body)
	}
	if hub.Uploaded.Load() != sent || hub.Manifest("other", "tiny", "v2") == nil {
		t.Errorf("push of a copy to another repository: %d bytes uploaded, manifest %q; want only the manifest",
			hub.Uploaded.Load()-sent, hub.Manifest("other", "tiny", "v2"))
	}

	// A file of FOLIO_MODELS_PATH, given a registry name, is sent from where it is.
	libName := hub.Host() + "/team/lib:latest"
	if err := c.Copy(ctx, &api.CopyRequest{Source: "lib", Destination: libName}); err != nil {
		t.Fatal(err)
	}
	if installer.HasBlob(home, fakehub.Digest(libWeights)) {
		t.Fatal("the library file was copied into blobs/; the test wants it outside")
	}
	if status, body := postPush(t, base, fmt.Sprintf(`{"model": %q, "insecure": true, "stream": false}`, libName)); status != http.StatusOK {
		t.Errorf("push a library file: %d %s", status, body)
	}

	c2, _, _ := newInstallServer(t)
	for _, n := range []string{name, libName} {
		if err := c2.Pull(ctx, &api.PullRequest{Model: n, Insecure: true}, func(api.ProgressResponse) error { return nil }); err != nil {
			t.Fatalf("pull %s back: %v", n, err)
		}
		if d1, d2 := digestOf(t, c, n), digestOf(t, c2, n); d1 != d2 {
			t.Errorf("%s: digest %s here, %s pulled back", n, d1, d2)
		}
		if g1, g2 := pushGreedy(t, c, n), pushGreedy(t, c2, n); g1 != g2 {
			t.Errorf("%s: %q here, %q pulled back", n, g1, g2)
		}
	}
	if d := digestOf(t, c2, libName); !strings.Contains(fakehub.Digest(libWeights), d) {
		t.Errorf("the library file pulled back has digest %s; want %s", d, fakehub.Digest(libWeights))
	}
	show, err := c2.Show(ctx, &api.ShowRequest{Model: name})
	if err != nil || show.System != "You answer in one word." || !strings.Contains(show.Parameters, "seed") {
		t.Errorf("show of the pulled model: system %q, parameters %q, %v", show.System, show.Parameters, err)
	}
}

// TestAPIPushErrors: a name that cannot be pushed to is 400 and a model
// the server does not have 404, streamed or not; a registry that fails
// (or is plain HTTP without insecure) is 502 unstreamed and an error
// line streamed, never with the registry's body.
func TestAPIPushErrors(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	c, base, _ := newPushServer(t, nil)
	ctx := context.Background()
	weights := tinyBytes(t, 5)
	digest := fakehub.Digest(weights)
	name := hub.Host() + "/team/tiny:latest"
	if err := c.CreateBlob(ctx, digest, bytes.NewReader(weights)); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &api.CreateRequest{Model: name, Files: map[string]string{"tiny.gguf": digest}}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	push := func(model string, insecure, stream bool) (int, string) {
		return postPush(t, base, fmt.Sprintf(`{"model": %q, "insecure": %v, "stream": %v}`, model, insecure, stream))
	}
	for _, c := range []struct {
		model  string
		status int
		want   string
	}{
		{"", http.StatusBadRequest, "model is required"},
		{"tiny", http.StatusBadRequest, "names no namespace"},
		{"hf.co/org/repo", http.StatusBadRequest, "not to Hugging Face"},
		{"../etc/passwd", http.StatusBadRequest, "bad name"},
		{hub.Host() + "/team/nosuch", http.StatusNotFound, "not found"},
	} {
		for _, stream := range []bool{false, true} {
			if status, body := push(c.model, true, stream); status != c.status || !strings.Contains(body, c.want) {
				t.Errorf("push %q (stream %v): %d %s; want %d with %q", c.model, stream, status, body, c.status, c.want)
			}
		}
	}
	for _, c := range []struct {
		fail     int // the hub's status for every request
		insecure bool
		want     string
	}{
		{http.StatusInternalServerError, true, "HEAD http://" + hub.Host() + "/v2/team/tiny/blobs/sha256:"},
		{http.StatusUnauthorized, true, "the registry wants credentials"},
		{0, false, "https://" + hub.Host()},
	} {
		hub.Fail.Store(int64(c.fail))
		status, body := push(name, c.insecure, false)
		if status != http.StatusBadGateway || !json.Valid([]byte(body)) || !strings.Contains(body, c.want) || strings.Contains(body, "fakehub") {
			t.Errorf("push (hub answers %d, insecure %v): %d %s; want 502 with %q and nothing of the hub's body", c.fail, c.insecure, status, body, c.want)
		}
		status, body = push(name, c.insecure, true)
		if status != http.StatusOK || !strings.Contains(body, `"status":"retrieving manifest"`) || !strings.Contains(body, `{"error":`) ||
			!strings.Contains(body, c.want) || strings.Contains(body, "fakehub") {
			t.Errorf("push streamed (hub answers %d, insecure %v): %d %s; want an error line with %q and nothing of the hub's body", c.fail, c.insecure, status, body, c.want)
		}
	}
	hub.Fail.Store(0)
	if status, body := push(name, true, false); status != http.StatusOK {
		t.Errorf("push after the failures: %d %s", status, body)
	}
}
