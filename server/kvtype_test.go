package server_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/runner"
	"folio/server"
)

// TestKVCacheTypeFallsBack: a server whose K/V cache type is q8_0
// (FOLIO_KV_CACHE_TYPE) gives it to tiny-qwen2 (heads of 64) and, with a
// warning, F16 to stories260K, whose heads of 8 a Q8_0 cache cannot hold,
// instead of refusing to load it (as Ollama's OLLAMA_KV_CACHE_TYPE falls
// back).
func TestKVCacheTypeFallsBack(t *testing.T) {
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{newTestLibrary(t)}
	var logs fixtures.LockedBuffer
	srv := server.New(server.Config{Registry: reg, Version: "test", Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Load: runner.LoadOptions{NumCtx: 256, KVType: "q8_0"}, KVTypeFallback: true})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	u, _ := url.Parse(hs.URL)
	c := api.NewClient(u, hs.Client())

	want := map[string]gguf.TensorType{"stories260k": gguf.TypeF16, "tiny-qwen2": gguf.TypeQ8_0}
	for name, typ := range want {
		var text strings.Builder
		err := c.Generate(context.Background(), &api.GenerateRequest{Model: name, Prompt: "Once upon a time",
			Options: map[string]any{"temperature": 0, "num_predict": 8}}, func(r api.GenerateResponse) error {
			text.WriteString(r.Response)
			return nil
		})
		if err != nil || text.Len() == 0 {
			t.Fatalf("%s: %v, %q", name, err, text.String())
		}
		e := srv.Engine(name)
		if e == nil {
			t.Fatalf("%s is not loaded", name)
		}
		if got := e.Model().KV.Spec().Type; got != typ {
			t.Errorf("%s: K/V cache %v, want %v", name, got, typ)
		}
	}
	if l := logs.String(); strings.Count(l, "using f16") != 1 || !strings.Contains(l, "multiple of 32") ||
		!strings.Contains(l, "kv_type=Q8_0") || !strings.Contains(l, "kv_type=F16") {
		t.Errorf("want one warning about stories260K's heads and each load's K/V type, logs:\n%s", l)
	}
}
