package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/runner"
	"folio/server"
)

// lifecycleServer serves newTestLibrary plus two more copies of
// stories260K (story-b, story-c: four models, four files), with cfg
// edited by edit. loads lists the models loaded, in order.
type lifecycleServer struct {
	c    *api.Client
	base string

	mu    sync.Mutex
	loads []string
}

func newLifecycleServer(t *testing.T, edit func(*server.Config), lib ...func(*gguf.Writer)) *lifecycleServer {
	t.Helper()
	dir := newTestLibrary(t, lib...)
	data, err := os.ReadFile(filepath.Join(dir, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"story-b", "story-c"} {
		if err := os.WriteFile(filepath.Join(dir, n+".gguf"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ls := &lifecycleServer{}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	cfg := server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 512}, MaxBodyBytes: 1 << 20,
		LoadModelHook: func(e server.ModelEntry) {
			ls.mu.Lock()
			ls.loads = append(ls.loads, e.Name)
			ls.mu.Unlock()
		}}
	if edit != nil {
		edit(&cfg)
	}
	srv := server.New(cfg)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	u, _ := url.Parse(hs.URL)
	ls.c, ls.base = api.NewClient(u, hs.Client()), hs.URL
	return ls
}

func (ls *lifecycleServer) loaded() []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return slices.Clone(ls.loads)
}

func (ls *lifecycleServer) running(t *testing.T) []string {
	t.Helper()
	ps, err := ls.c.ListRunning(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ps.Models {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// post sends body to path and returns the status and the body.
func (ls *lifecycleServer) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(ls.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestUnloadDoesNotLoad: keep_alive 0 without a prompt (folio stop, and
// apps that free memory) on a model that is not loaded answers as Ollama
// (200, done_reason "unload") without loading it, so it evicts nothing; it
// used to load the model, which with FOLIO_MAX_LOADED_MODELS models loaded
// unloaded another.
func TestUnloadDoesNotLoad(t *testing.T) {
	ls := newLifecycleServer(t, func(c *server.Config) { c.MaxLoaded = 1 })
	ctx := context.Background()
	stream := false
	err := ls.c.Generate(ctx, &api.GenerateRequest{Model: "stories260k", Prompt: "Once", Stream: &stream,
		Options: map[string]any{"num_predict": 2}}, func(api.GenerateResponse) error { return nil })
	if err != nil {
		t.Fatal(err)
	}

	zero := &api.Duration{}
	var gen api.GenerateResponse
	err = ls.c.Generate(ctx, &api.GenerateRequest{Model: "tiny-qwen2", KeepAlive: zero},
		func(r api.GenerateResponse) error { gen = r; return nil })
	if err != nil || !gen.Done || gen.DoneReason != "unload" || gen.Model != "tiny-qwen2" {
		t.Errorf("generate unload: %v %+v", err, gen)
	}
	var chat api.ChatResponse
	err = ls.c.Chat(ctx, &api.ChatRequest{Model: "story-b", KeepAlive: zero},
		func(r api.ChatResponse) error { chat = r; return nil })
	if err != nil || !chat.Done || chat.DoneReason != "unload" || chat.Message.Role != "assistant" {
		t.Errorf("chat unload: %v %+v", err, chat)
	}
	if loads := ls.loaded(); !slices.Equal(loads, []string{"stories260K:latest"}) {
		t.Errorf("loads %v: an unload of a model that is not loaded loaded it", loads)
	}
	if running := ls.running(t); !slices.Equal(running, []string{"stories260K:latest"}) {
		t.Errorf("running %v after unloads of other models, want stories260K alone", running)
	}

	// the loaded one unloads, without a load
	status, body := ls.post(t, "/api/generate", `{"model": "stories260k", "keep_alive": 0}`)
	if status != 200 || !strings.Contains(body, `"done_reason":"unload"`) {
		t.Errorf("unload of the loaded model: %d %s", status, body)
	}
	if running := ls.running(t); len(running) != 0 {
		t.Errorf("running %v after its unload", running)
	}
	if loads := ls.loaded(); len(loads) != 1 {
		t.Errorf("loads %v", loads)
	}
	// a model that does not exist is 404, as Ollama's
	status, body = ls.post(t, "/api/generate", `{"model": "nope", "keep_alive": 0}`)
	if status != 404 || !strings.Contains(body, `model \"nope\" not found`) {
		t.Errorf("unload of a missing model: %d %s", status, body)
	}
}

// TestBurstAcrossModels: the Go client of github.com/ollama/ollama/api
// sends a burst across four models with FOLIO_MAX_LOADED_MODELS 2: every
// request is answered (they wait their turn as under Ollama; they used to
// get 503 "1 models are loaded and busy"), and no more than two models are
// ever loaded.
func TestBurstAcrossModels(t *testing.T) {
	var ls *lifecycleServer
	var mu sync.Mutex
	var over []string
	ls = newLifecycleServer(t, func(c *server.Config) {
		c.MaxLoaded, c.MaxQueue = 2, 64
		hook := c.LoadModelHook
		c.LoadModelHook = func(e server.ModelEntry) {
			hook(e)
			// a load starts in a free slot: at most one other is loaded
			ps, err := ls.c.ListRunning(context.Background())
			mu.Lock()
			defer mu.Unlock()
			if err != nil || len(ps.Models) > 1 {
				over = append(over, fmt.Sprintf("%s loads beside %d models (%v)", e.Name, len(ps.Models), err))
			}
		}
	})
	models := []string{"stories260k", "tiny-qwen2", "story-b", "story-c"}
	var wg sync.WaitGroup
	errs := make(chan error, 3*len(models))
	for i := range 3 * len(models) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stream := false
			var got api.GenerateResponse
			err := ls.c.Generate(context.Background(), &api.GenerateRequest{Model: models[i%len(models)], Prompt: "Once upon a time",
				Stream: &stream, Options: map[string]any{"num_predict": 24, "seed": i}},
				func(r api.GenerateResponse) error { got = r; return nil })
			if err == nil && (!got.Done || got.EvalCount == 0) {
				err = &api.StatusError{ErrorMessage: "no tokens: " + got.DoneReason}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a request of the burst: %v", err)
		}
	}
	if len(over) > 0 {
		t.Errorf("more than 2 models loaded: %v", over)
	}
	if n := len(ls.loaded()); n < len(models) {
		t.Errorf("%d loads for %d models", n, len(models))
	}
	if running := ls.running(t); len(running) > 2 {
		t.Errorf("running %v", running)
	}
}

// TestOllamaNames: Ollama's full names of a model resolve to it, and an
// unknown name gets Ollama's `model "x" not found`, naming no folder.
func TestOllamaNames(t *testing.T) {
	ls := newLifecycleServer(t, nil)
	for _, name := range []string{"library/stories260k", "registry.ollama.ai/library/stories260K", "library/stories260K:latest",
		"registry.ollama.ai/library/stories260k:latest"} {
		show, err := ls.c.Show(context.Background(), &api.ShowRequest{Model: name})
		if err != nil || show.Details.Family != "llama" {
			t.Errorf("show %s: %v", name, err)
		}
		status, body := ls.post(t, "/api/generate", `{"model": "`+name+`", "prompt": "Once", "stream": false, "options": {"num_predict": 2}}`)
		if status != 200 {
			t.Errorf("generate %s: %d %s", name, status, body)
		}
	}
	for _, c := range []struct{ path, body, name string }{
		{"/api/generate", `{"model": "library/nope", "prompt": "hi"}`, "library/nope"},
		{"/api/chat", `{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}`, "nope"},
		{"/api/show", `{"model": "registry.ollama.ai/library/nope"}`, "registry.ollama.ai/library/nope"},
		{"/api/embed", `{"model": "nope", "input": "hi"}`, "nope"},
	} {
		t.Run(c.path, func(t *testing.T) {
			status, body := ls.post(t, c.path, c.body)
			var e struct{ Error string }
			json.Unmarshal([]byte(body), &e)
			if want := `model "` + c.name + `" not found`; status != 404 || e.Error != want {
				t.Errorf("%s %s: %d %s; want 404 %q", c.path, c.body, status, body, want)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodDelete, ls.base+"/api/delete", strings.NewReader(`{"model": "nope"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(data), `"model \"nope\" not found"`) {
		t.Errorf("delete of a missing model: %d %s", resp.StatusCode, data)
	}
}

// TestTagsListsRunnable: /api/tags and /v1/models list the models folio
// can run; a vocab-only GGUF (llama.cpp's ggml-vocab-*.gguf) and a model
// of an unsupported architecture in FOLIO_MODELS_PATH are left out, as
// Ollama lists only models it runs.
func TestTagsListsRunnable(t *testing.T) {
	dir := newTestLibrary(t)
	vocab, err := os.ReadFile(fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ggml-vocab-llama-spm.gguf"), vocab, 0o644); err != nil {
		t.Fatal(err)
	}
	// the synthetic qwen2 relabelled as an architecture folio does not run
	other := newTestLibrary(t, func(w *gguf.Writer) { w.Set("general.architecture", "mamba") })
	if err := os.Rename(filepath.Join(other, "tiny-qwen2.gguf"), filepath.Join(dir, "tiny-mamba.gguf")); err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 512}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	u, _ := url.Parse(hs.URL)
	list, err := api.NewClient(u, hs.Client()).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list.Models {
		names = append(names, m.Name)
	}
	if want := []string{"stories260K:latest", "tiny-qwen2:latest"}; !slices.Equal(names, want) {
		t.Errorf("tags %v, want %v", names, want)
	}
	resp, err := http.Get(hs.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var oai struct{ Data []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&oai)
	resp.Body.Close()
	names = names[:0]
	for _, m := range oai.Data {
		names = append(names, m.ID)
	}
	if want := []string{"stories260K:latest", "tiny-qwen2:latest"}; !slices.Equal(names, want) {
		t.Errorf("/v1/models %v, want %v", names, want)
	}
	// named anyway, they answer why they cannot run
	for model, want := range map[string]string{"ggml-vocab-llama-spm": "token_embd", "tiny-mamba": "is not supported (folio runs"} {
		resp, err := http.Post(hs.URL+"/api/generate", "application/json", strings.NewReader(`{"model": "`+model+`", "prompt": "hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 422 || !strings.Contains(string(body), want) {
			t.Errorf("generate %s: %d %s; want 422 with %q", model, resp.StatusCode, body, want)
		}
	}
}

// TestShowCapabilities: /api/show names what a model can do as Ollama
// does: completion for generative models, embedding (and not completion)
// for a model made for embeddings ({arch}.pooling_type), insert for a
// model with fill-in-the-middle tokens.
func TestShowCapabilities(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*gguf.Writer)
		want []model.Capability
	}{
		{"plain", func(*gguf.Writer) {}, []model.Capability{model.CapabilityCompletion}},
		{"fim", func(w *gguf.Writer) {
			w.Set("tokenizer.ggml.fim_pre_token_id", uint32(1))
			w.Set("tokenizer.ggml.fim_suf_token_id", uint32(2))
			w.Set("tokenizer.ggml.fim_mid_token_id", uint32(3))
		}, []model.Capability{model.CapabilityCompletion, model.CapabilityInsert}},
		{"fim, two tokens of three", func(w *gguf.Writer) {
			w.Set("tokenizer.ggml.fim_pre_token_id", uint32(1))
			w.Set("tokenizer.ggml.fim_suf_token_id", uint32(2))
		}, []model.Capability{model.CapabilityCompletion}},
		{"embedding", func(w *gguf.Writer) { w.Set("qwen2.pooling_type", uint32(1)) },
			[]model.Capability{model.CapabilityEmbedding}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, _ := newTestServer(t, c.edit)
			show, err := cl.Show(context.Background(), &api.ShowRequest{Model: "tiny-qwen2"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(show.Capabilities, c.want) {
				t.Errorf("capabilities %v, want %v", show.Capabilities, c.want)
			}
		})
	}
}

// TestRootProbe: GET / answers exactly Ollama's "Ollama is running", which
// clients compare whole to detect a server, and names folio in its Server
// header.
func TestRootProbe(t *testing.T) {
	_, base := newTestServer(t)
	resp, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "Ollama is running" || resp.Header.Get("Server") != "folio/test" {
		t.Errorf("GET /: %d %q, Server %q", resp.StatusCode, body, resp.Header.Get("Server"))
	}
}
