package server_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/server"
)

// embedServer serves a library of the tiny bert (CLS pooling) as
// "tiny-bert" and the tiny qwen2 as "tiny-qwen2".
func embedServer(t *testing.T) string {
	t.Helper()
	dir := newTestLibrary(t)
	if err := synth.WriteTiny(filepath.Join(dir, "tiny-bert.gguf"), "bert", gguf.TypeQ8_0, 5,
		func(c *synth.Config) { c.Pooling, c.Ctx = "cls", 512 }); err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Load: runner.LoadOptions{NumCtx: 512}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

// TestEmbeddingModelCapabilities: an embedding model says embedding, not
// completion, and every generation endpoint refuses it with 400 and
// Ollama's message, while a generative model still generates and embeds.
func TestEmbeddingModelCapabilities(t *testing.T) {
	url := embedServer(t)
	var show api.ShowResponse
	postJSON(t, url+"/api/show", `{"model":"tiny-bert"}`, &show)
	if !slices.Contains(show.Capabilities, "embedding") || slices.Contains(show.Capabilities, "completion") {
		t.Errorf("capabilities %v, want embedding without completion", show.Capabilities)
	}
	for _, tc := range []struct{ path, body, want string }{
		{"/api/generate", `{"model":"tiny-bert","prompt":"hi","stream":false}`, `"tiny-bert" does not support generate`},
		{"/api/generate", `{"model":"tiny-bert"}`, `"tiny-bert" does not support generate`},
		{"/api/chat", `{"model":"tiny-bert","messages":[{"role":"user","content":"hi"}],"stream":false}`, `"tiny-bert" does not support chat`},
		{"/v1/chat/completions", `{"model":"tiny-bert","messages":[{"role":"user","content":"hi"}]}`, `"tiny-bert" does not support chat`},
		{"/v1/completions", `{"model":"tiny-bert","prompt":"hi"}`, `"tiny-bert" does not support generate`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			status, _, data := post(t, url+tc.path, tc.body)
			var body struct {
				Error json.RawMessage `json:"error"` // Ollama's a string, OpenAI's {"message": ...}
			}
			var msg string
			var oai struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(data, &body) == nil && json.Unmarshal(body.Error, &msg) != nil && json.Unmarshal(body.Error, &oai) == nil {
				msg = oai.Message
			}
			if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Errorf("%d %s, want 400 with %s", status, data, tc.want)
			}
		})
	}
	var gen api.GenerateResponse
	postJSON(t, url+"/api/generate", `{"model":"tiny-qwen2","prompt":"hi","stream":false,"options":{"num_predict":2}}`, &gen)
	var emb api.EmbedResponse
	postJSON(t, url+"/api/embed", `{"model":"tiny-qwen2","input":"hi"}`, &emb)
	if len(emb.Embeddings) != 1 || len(emb.Embeddings[0]) != 256 {
		t.Errorf("/api/embed of tiny-qwen2: %d vectors, want 1 of 256", len(emb.Embeddings))
	}
}

// TestEmbeddingDimensions: /api/embed and /v1/embeddings of an embedding
// model give unit vectors; dimensions keeps the leading values of the
// full vector and scales them to unit length again, as Ollama does.
func TestEmbeddingDimensions(t *testing.T) {
	url := embedServer(t)
	const text = "the quick brown fox"
	var full, cut api.EmbedResponse
	postJSON(t, url+"/api/embed", `{"model":"tiny-bert","input":"`+text+`"}`, &full)
	postJSON(t, url+"/api/embed", `{"model":"tiny-bert","input":"`+text+`","dimensions":64}`, &cut)
	if len(full.Embeddings) != 1 || len(full.Embeddings[0]) != 256 || len(cut.Embeddings) != 1 || len(cut.Embeddings[0]) != 64 {
		t.Fatalf("lengths: full %v, cut %v; want one vector of 256 and one of 64", shape(full.Embeddings), shape(cut.Embeddings))
	}
	if full.PromptEvalCount != len(text)-3+2 { // a token per character but the 3 spaces, [CLS] and [SEP]
		t.Errorf("prompt_eval_count %d, want %d", full.PromptEvalCount, len(text)-3+2)
	}
	want := slices.Clone(full.Embeddings[0][:64])
	var n float64
	for _, v := range want {
		n += float64(v) * float64(v)
	}
	for i := range want {
		want[i] = float32(float64(want[i]) / math.Sqrt(n))
	}
	for i, v := range cut.Embeddings[0] {
		if math.Abs(float64(v-want[i])) > 1e-6 {
			t.Fatalf("dimensions 64: value %d is %v, want %v (the full vector's first 64, unit length)", i, v, want[i])
		}
	}
	status, _, data := post(t, url+"/v1/embeddings", `{"model":"tiny-bert","input":"`+text+`","dimensions":64}`)
	var oai struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &oai); status != http.StatusOK || err != nil || len(oai.Data) != 1 {
		t.Fatalf("/v1/embeddings: %d %s", status, data)
	}
	if !slices.Equal(oai.Data[0].Embedding, cut.Embeddings[0]) {
		t.Errorf("/v1/embeddings with dimensions 64 differs from /api/embed's")
	}
}

func shape(v [][]float32) []int {
	var out []int
	for _, e := range v {
		out = append(out, len(e))
	}
	return out
}
