package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/server"
)

// newTestServer serves a library holding stories260K and a tiny synthetic
// qwen2 model, and returns an Ollama client for it.
func newTestServer(t *testing.T, edit ...func(*gguf.Writer)) (*api.Client, string) {
	t.Helper()
	return serveLibrary(t, newTestLibrary(t, edit...))
}

// serveLibrary serves the models of a folder, as newTestServer does.
func serveLibrary(t *testing.T, dir string) (*api.Client, string) {
	t.Helper()
	return serveLibraryCtx(t, dir, 512)
}

// serveLibraryCtx is serveLibrary with models loaded at a context of
// numCtx tokens.
func serveLibraryCtx(t *testing.T, dir string, numCtx int) (*api.Client, string) {
	t.Helper()
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: numCtx}, MaxBodyBytes: 1 << 20})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	u, _ := url.Parse(hs.URL)
	return api.NewClient(u, hs.Client()), hs.URL
}

// newTestLibrary is a folder holding stories260K.gguf and tiny-qwen2.gguf
// (heads of 64), edited by edit.
func newTestLibrary(t *testing.T, edit ...func(*gguf.Writer)) string {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(fixtures.Model(t, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stories260K.gguf"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeTinyQwen2(t, filepath.Join(dir, "tiny-qwen2.gguf"), edit...)
	return dir
}

// writeTinyQwen2 writes the tiny synthetic qwen2 model to path, edited by
// edit.
func writeTinyQwen2(t *testing.T, path string, edit ...func(*gguf.Writer)) {
	t.Helper()
	m, err := synth.Tiny("qwen2", gguf.TypeQ8_0, 3)
	if err != nil {
		t.Fatal(err)
	}
	w := m.Writer()
	for _, e := range edit {
		e(w)
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestOllamaClient(t *testing.T) {
	c, _ := newTestServer(t)
	ctx := context.Background()

	list, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "stories260K:latest,tiny-qwen2:latest" {
		t.Errorf("tags: %v", names)
	}

	// generate, streaming: the text equals `folio run`'s greedy text
	var streamed strings.Builder
	var last api.GenerateResponse
	err = c.Generate(ctx, &api.GenerateRequest{Model: "stories260k", Prompt: "Once upon a time",
		Options: map[string]any{"temperature": 0, "num_predict": 30}}, func(r api.GenerateResponse) error {
		streamed.WriteString(r.Response)
		last = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !last.Done || last.DoneReason != "length" || last.EvalCount != 30 || len(last.Context) == 0 || !strings.HasPrefix(streamed.String(), ", there was") {
		t.Errorf("generate: %q, final %+v", streamed.String(), last)
	}

	// non-streaming gives the same text in one response
	stream := false
	var one []api.GenerateResponse
	err = c.Generate(ctx, &api.GenerateRequest{Model: "stories260k", Prompt: "Once upon a time", Stream: &stream,
		Options: map[string]any{"temperature": 0, "num_predict": 30}}, func(r api.GenerateResponse) error {
		one = append(one, r)
		return nil
	})
	if err != nil || len(one) != 1 || one[0].Response != streamed.String() {
		t.Errorf("non-streaming generate: %v, %d responses: %+v", err, len(one), one)
	}

	// chat, both ways, on a model without a template
	for _, s := range []bool{true, false} {
		var content strings.Builder
		var done bool
		err = c.Chat(ctx, &api.ChatRequest{Model: "tiny-qwen2", Stream: &s,
			Messages: []api.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}},
			Options:  map[string]any{"num_predict": 8, "seed": 1}}, func(r api.ChatResponse) error {
			content.WriteString(r.Message.Content)
			done = done || r.Done
			return nil
		})
		if err != nil || !done {
			t.Errorf("chat (stream %v): %v, done %v", s, err, done)
		}
	}

	emb, err := c.Embed(ctx, &api.EmbedRequest{Model: "tiny-qwen2", Input: []string{"hello", "world"}})
	if err != nil || len(emb.Embeddings) != 2 || len(emb.Embeddings[0]) != 256 {
		t.Fatalf("embed: %v %+v", err, emb)
	}
	var norm float64
	for _, v := range emb.Embeddings[0] {
		norm += float64(v) * float64(v)
	}
	if norm < 0.999 || norm > 1.001 {
		t.Errorf("embedding norm² %v, want 1", norm)
	}
	if old, err := c.Embeddings(ctx, &api.EmbeddingRequest{Model: "tiny-qwen2", Prompt: "hello"}); err != nil || len(old.Embedding) != 256 {
		t.Errorf("legacy embeddings: %v, %d values", err, len(old.Embedding))
	}

	show, err := c.Show(ctx, &api.ShowRequest{Model: "tiny-qwen2"})
	if err != nil || show.Details.Family != "qwen2" || show.ModelInfo["qwen2.block_count"] == nil {
		t.Errorf("show: %v %+v", err, show.Details)
	}
	ps, err := c.ListRunning(ctx)
	if err != nil || len(ps.Models) != 2 {
		t.Errorf("ps: %v %+v", err, ps)
	}
	if err := c.Copy(ctx, &api.CopyRequest{Source: "tiny-qwen2", Destination: "mine:v1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: "mine:v1"}); err != nil {
		t.Errorf("delete of a copy: %v", err)
	}
	if err := c.Delete(ctx, &api.DeleteRequest{Model: "tiny-qwen2"}); err == nil {
		t.Errorf("delete of a library file succeeded; folio must not delete files it did not create")
	}
	v, err := c.Version(ctx)
	if err != nil || v == "" {
		t.Errorf("version: %v %q", err, v)
	}
}

// TestBadInput: every bad request gets a 4xx with a message, and the
// server keeps serving.
func TestBadInput(t *testing.T) {
	_, base := newTestServer(t)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	huge := `{"model":"stories260k","prompt":"` + strings.Repeat("a", 2<<20) + `"}`
	long := `{"model":"stories260k","prompt":"` + strings.Repeat("word ", 600) + `","truncate":false}`
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/generate", `{"model": "stories260k", "prompt": `, 400, "request JSON"},
		{"/api/generate", `{"model": "nope", "prompt": "hi"}`, 404, "not found"},
		{"/api/generate", `{"model": "stories260k", "prompt": "hi", "options": {"temperature": "hot"}}`, 400, "temperature"},
		{"/api/generate", `{"model": "stories260k", "prompt": 7}`, 400, "request JSON"},
		{"/api/generate", `{"model": "stories260k", "prompt": "hi", "options": {"num_predict": -5}}`, 400, "num_predict"},
		{"/api/generate", `{"model": "stories260k", "prompt": "hi", "options": {"num_ctx": 0}}`, 400, "num_ctx"},
		{"/api/generate", `{"model": "stories260k", "prompt": "hi", "options": {"num_ctx": 1000000000}}`, 400, "num_ctx"},
		{"/api/generate", huge, 413, "request body too large"},
		{"/api/generate", long, 400, "num_ctx"},
		{"/api/generate", `{"prompt": "hi"}`, 400, "model is required"},
		{"/api/chat", `{"model": "stories260k", "messages": [{"role": "wizard", "content": "x"}]}`, 400, "role"},
		{"/api/generate", `{"model": "stories260k", "prompt": "hi", "format": {"type": "number", "multipleOf": 2}}`, 400, "multipleOf"},
		{"/api/generate", `{"model": "stories260k", "prompt": "hi", "format": "yaml"}`, 400, "format"},
		{"/api/embed", `{"model": "stories260k", "input": 5}`, 400, "input"},
		{"/api/pull", `{"model": "llama3"}`, 501, "installer"},
	} {
		t.Run(c.path+" "+c.want, func(t *testing.T) {
			status, body := post(c.path, c.body)
			if status != c.status || !strings.Contains(body, c.want) || !json.Valid([]byte(body)) {
				t.Errorf("%s %.80s: %d %s; want %d with %q", c.path, c.body, status, body, c.status, c.want)
			}
		})
	}
	// still serving
	status, body := post("/api/generate", `{"model": "stories260k", "prompt": "hi", "stream": false, "options": {"num_predict": 3}}`)
	if status != 200 {
		t.Errorf("after bad input: %d %s", status, body)
	}
	resp, err := http.Get(base + "/")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("GET /: %v %v", err, resp)
	}
}

func TestKeepAliveZeroUnloads(t *testing.T) {
	c, _ := newTestServer(t)
	ctx := context.Background()
	stream := false
	err := c.Generate(ctx, &api.GenerateRequest{Model: "stories260k", Prompt: "hi", Stream: &stream,
		KeepAlive: &api.Duration{Duration: 0}, Options: map[string]any{"num_predict": 2}}, func(api.GenerateResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps, err := c.ListRunning(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps.Models) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keep_alive 0: still loaded: %+v", ps.Models)
		}
		time.Sleep(10 * time.Millisecond)
	}

}

// TestChatTemplate: a model that carries a chat template gets its chat
// rendered by it (Qwen 2.5's, read from ../shared/templates).
func TestChatTemplate(t *testing.T) {
	tmpl, err := os.ReadFile(filepath.Join(fixtures.Shared(t), "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestServer(t, func(w *gguf.Writer) { w.Set("tokenizer.chat_template", string(tmpl)) })
	stream := false
	var got api.ChatResponse
	err = c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Stream: &stream, DebugRenderOnly: true,
		Messages: []api.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}},
		func(r api.ChatResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
	if got.DebugInfo == nil || got.DebugInfo.RenderedTemplate != want {
		t.Fatalf("rendered %+v, want %q", got.DebugInfo, want)
	}
	// and a real generation through it
	err = c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Stream: &stream,
		Messages: []api.Message{{Role: "user", Content: "hello"}}, Options: map[string]any{"num_predict": 4}},
		func(r api.ChatResponse) error { got = r; return nil })
	if err != nil || !got.Done || got.EvalCount == 0 {
		t.Errorf("chat through the template: %v %+v", err, got)
	}
}

// TestFormat: a JSON schema in format constrains the output to a value of
// the schema, streaming or not.
func TestFormat(t *testing.T) {
	c, _ := newTestServer(t)
	schema := `{"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer"}}, "required": ["ok", "n"]}`
	for _, stream := range []bool{false, true} {
		var text strings.Builder
		var last api.GenerateResponse
		err := c.Generate(context.Background(), &api.GenerateRequest{Model: "tiny-qwen2", Prompt: "answer", Stream: &stream,
			Format: json.RawMessage(schema), Options: map[string]any{"num_predict": 60, "seed": 4}},
			func(r api.GenerateResponse) error { text.WriteString(r.Response); last = r; return nil })
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			OK *bool `json:"ok"`
			N  *int  `json:"n"`
		}
		if err := json.Unmarshal([]byte(text.String()), &v); err != nil || v.OK == nil || v.N == nil || last.DoneReason != "stop" {
			t.Errorf("stream %v: %q (%v), done %q", stream, text.String(), err, last.DoneReason)
		}
	}
}
