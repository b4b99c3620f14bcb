package installer_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

var ggufCache sync.Map // "type/seed" → []byte

// tinyGGUF is the tiny synthetic llama of that weight type and seed.
func tinyGGUF(t testing.TB, typ gguf.TensorType, seed uint64) []byte {
	t.Helper()
	key := fmt.Sprintf("%s/%d", typ, seed)
	if data, ok := ggufCache.Load(key); ok {
		return data.([]byte)
	}
	p := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(p, "llama", typ, seed); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	ggufCache.Store(key, data)
	return data
}

// newHome is an empty FOLIO_HOME with its registry open.
func newHome(t testing.TB) (string, *store.Registry) {
	t.Helper()
	home := t.TempDir()
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return home, st
}

// testOptions pull from local fakes quickly: small ranges (so a few MB is
// several of them), short waits, frequent records and reports.
func testOptions(home string, st *store.Registry) installer.Options {
	return installer.Options{Home: home, Store: st, Insecure: true, MinPartSize: 256 << 10,
		RetryBase: time.Millisecond, StallTimeout: 10 * time.Second, SaveEvery: 5 * time.Millisecond,
		ProgressEvery: 5 * time.Millisecond}
}

// publishTiny serves tiny (Q8_0, seed 1) at library/tiny:latest with a
// template, a system prompt, parameters and a license.
func publishTiny(t testing.TB, hub *fakehub.Hub, typ gguf.TensorType) []byte {
	weights := tinyGGUF(t, typ, 1)
	hub.Publish("library", "tiny", "latest",
		fakehub.Layer{MediaType: installer.MediaModel, Data: weights},
		fakehub.Layer{MediaType: installer.MediaTemplate, Data: []byte("{{ .Prompt }}")},
		fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("You are tiny.")},
		fakehub.Layer{MediaType: installer.MediaParams, Data: []byte(`{"stop":["<end>"],"temperature":0.5}`)},
		fakehub.Layer{MediaType: installer.MediaLicense, Data: []byte("MIT")})
	return weights
}

// recorder collects progress messages.
type recorder struct {
	mu   sync.Mutex
	msgs []installer.Progress
}

func (r *recorder) add(p installer.Progress) {
	r.mu.Lock()
	r.msgs = append(r.msgs, p)
	r.mu.Unlock()
}

// statuses is the distinct statuses in order of first appearance.
func (r *recorder) statuses() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		if !slices.Contains(out, m.Status) {
			out = append(out, m.Status)
		}
	}
	return out
}

// blobFiles lists home's blobs/ (names), without the lock file.
func blobFiles(t testing.TB, home string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(home, "blobs"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		if e.Name() != ".lock" {
			names = append(names, e.Name())
		}
	}
	return names
}

// generate runs a registered model through the server (the registry of
// home) and returns a few greedy tokens of text.
func generate(t testing.TB, st *store.Registry, name string) string {
	t.Helper()
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = nil, st
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 256}})
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); srv.Close() }()
	u, _ := url.Parse(hs.URL)
	c := api.NewClient(u, hs.Client())
	var out strings.Builder
	req := &api.GenerateRequest{Model: name, Prompt: "hello", Raw: true,
		Options: map[string]any{"temperature": 0, "num_predict": 8}}
	err := c.Generate(context.Background(), req, func(r api.GenerateResponse) error {
		out.WriteString(r.Response)
		return nil
	})
	if err != nil {
		t.Fatalf("generate with %s: %v", name, err)
	}
	return out.String()
}
