package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"folio/runner"
	"folio/server"
)

// TestNumCtxGrowsKVPool: a request's num_ctx larger than the K/V pool the
// model loaded with is served, the pool grown to hold it (Ollama reloads
// the model instead); with FOLIO_KV_MEMORY set the pool is that size and
// the request gets 400 naming it.
func TestNumCtxGrowsKVPool(t *testing.T) {
	// tiny-qwen2's K/V: 2 layers × 2 heads × 64, K and V, in F16: 1 KiB a token
	for _, c := range []struct {
		name     string
		kvMemory int64
		status   int
		want     string
	}{
		{"grows", 0, 200, `"done":true`},
		{"FOLIO_KV_MEMORY", 512 << 10, 400, "FOLIO_KV_MEMORY"},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := server.NewLibraryRegistry(nil)
			reg.Dirs = []string{newTestLibrary(t)}
			srv := server.New(server.Config{Registry: reg, Version: "test", MaxBodyBytes: 1 << 20,
				Load: runner.LoadOptions{NumCtx: 128, KVMemory: c.kvMemory}}) // a pool of 512 tokens
			hs := httptest.NewServer(srv)
			t.Cleanup(func() { hs.Close(); srv.Close() })
			resp, err := http.Post(hs.URL+"/api/generate", "application/json", strings.NewReader(
				`{"model": "tiny-qwen2", "prompt": "hi", "stream": false, "options": {"num_ctx": 4096, "num_predict": 3}}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
				t.Fatalf("num_ctx 4096 on a pool of 512 tokens: %d %s; want %d with %q", resp.StatusCode, body, c.status, c.want)
			}
			spec := srv.Engine("tiny-qwen2").Model().KV.Spec()
			if tokens := spec.Blocks * spec.BlockSize; (c.status == 200) != (tokens >= 4096) {
				t.Errorf("the pool holds %d tokens after the request", tokens)
			}
		})
	}
}
