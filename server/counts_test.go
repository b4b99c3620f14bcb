package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"folio/runner"
	"folio/server"
)

// promptCounts are the prompt figures an answer reports: Ollama's
// prompt_eval_count with folio's prompt_cached_count, or OpenAI's usage.
type promptCounts struct {
	prompt, cached int
	cachedSent     bool // the answer has a cached count at all
}

// TestPromptEvalCountWholePrompt: prompt_eval_count is the whole prompt,
// as Ollama's, cached tokens included, and prompt_cached_count says how
// many of them came from the prefix cache; /v1's prompt_tokens (chat,
// completions) and input_tokens (responses) agree, with the cached count
// in prompt_tokens_details.cached_tokens and input_tokens_details. The
// same 150-token prompt through the five endpoints, twice each, reports
// the same count every time, the cold first request none cached and every
// repeat most of it.
func TestPromptEvalCountWholePrompt(t *testing.T) {
	_, base := newTestServer(t)
	prompt := strings.Repeat("Once upon a time there was a little girl who liked to play in the park. ", 8)
	p, _ := json.Marshal(prompt)
	msgs := fmt.Sprintf(`[{"role":"user","content":%s}]`, p)

	// The prompt's length in tokens, from the context /api/generate returns
	// (the prompt's ids, then the generated ones).
	var gen struct {
		Context           []int `json:"context"`
		EvalCount         int   `json:"eval_count"`
		PromptEvalCount   int   `json:"prompt_eval_count"`
		PromptCachedCount *int  `json:"prompt_cached_count"`
	}
	body := fmt.Sprintf(`{"model":"stories260k","prompt":%s,"stream":false,"options":{"temperature":0,"num_predict":4}}`, p)
	postJSON(t, base+"/api/generate", body, &gen)
	n := len(gen.Context) - gen.EvalCount
	if n < 100 {
		t.Fatalf("the prompt is %d tokens (context %d, eval_count %d); want a long one", n, len(gen.Context), gen.EvalCount)
	}
	if gen.PromptEvalCount != n || gen.PromptCachedCount == nil || *gen.PromptCachedCount != 0 {
		t.Errorf("cold request: prompt_eval_count %d, prompt_cached_count %v; want %d and 0", gen.PromptEvalCount, gen.PromptCachedCount, n)
	}

	ollama := func(data []byte) promptCounts {
		var r struct {
			PromptEvalCount   int  `json:"prompt_eval_count"`
			PromptCachedCount *int `json:"prompt_cached_count"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%v in %s", err, data)
		}
		c := promptCounts{prompt: r.PromptEvalCount, cachedSent: r.PromptCachedCount != nil}
		if r.PromptCachedCount != nil {
			c.cached = *r.PromptCachedCount
		}
		return c
	}
	openai := func(data []byte) promptCounts {
		var r struct {
			Usage struct {
				PromptTokens        int `json:"prompt_tokens"`
				InputTokens         int `json:"input_tokens"`
				PromptTokensDetails *struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				InputTokensDetails *struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"input_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%v in %s", err, data)
		}
		u := r.Usage
		c := promptCounts{prompt: u.PromptTokens + u.InputTokens}
		for _, d := range []*struct {
			CachedTokens int `json:"cached_tokens"`
		}{u.PromptTokensDetails, u.InputTokensDetails} {
			if d != nil {
				c.cached, c.cachedSent = d.CachedTokens, true
			}
		}
		return c
	}
	// lastLine is the final NDJSON line of a streamed Ollama answer.
	lastLine := func(data []byte) []byte {
		var last []byte
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if len(bytes.TrimSpace(sc.Bytes())) > 0 {
				last = append(last[:0], sc.Bytes()...)
			}
		}
		return last
	}

	cases := []struct {
		name, path, body string
		read             func([]byte) promptCounts
	}{
		{"generate", "/api/generate", body, ollama},
		{"generate stream", "/api/generate", strings.Replace(body, `"stream":false`, `"stream":true`, 1),
			func(data []byte) promptCounts { return ollama(lastLine(data)) }},
		{"chat", "/api/chat", fmt.Sprintf(`{"model":"stories260k","messages":%s,"stream":false,"options":{"num_predict":4}}`, msgs), ollama},
		{"chat stream", "/api/chat", fmt.Sprintf(`{"model":"stories260k","messages":%s,"options":{"num_predict":4}}`, msgs),
			func(data []byte) promptCounts { return ollama(lastLine(data)) }},
		{"v1 completions", "/v1/completions", fmt.Sprintf(`{"model":"stories260k","prompt":%s,"max_tokens":4}`, p), openai},
		{"v1 chat", "/v1/chat/completions", fmt.Sprintf(`{"model":"stories260k","messages":%s,"max_tokens":4}`, msgs), openai},
		{"v1 responses", "/v1/responses", fmt.Sprintf(`{"model":"stories260k","input":%s,"max_output_tokens":4}`, p), openai},
	}
	for _, c := range cases {
		for try := range 2 {
			status, _, data := post(t, base+c.path, c.body)
			if status != 200 {
				t.Fatalf("%s: %d %s", c.name, status, data)
			}
			got := c.read(data)
			// every request after the first /api/generate finds the prompt's
			// full blocks in the prefix cache
			if got.prompt != n || !got.cachedSent || got.cached < n-16 || got.cached >= n {
				t.Errorf("%s, request %d: prompt count %d, cached %d (sent %v); want %d, with %d to %d cached",
					c.name, try+1, got.prompt, got.cached, got.cachedSent, n, n-16, n-1)
			}
		}
	}
}

// TestLoadDuration: load_duration is sent as Ollama sends it, on the
// final answer of /api/generate and /api/chat and on /api/embed: the time
// this request waited for its model. A load made slow (the hook sleeps a
// second before each) shows in full on the cold request; the next request
// to the loaded model waits for no load.
func TestLoadDuration(t *testing.T) {
	const slow = time.Second
	var loads atomic.Int32
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{newTestLibrary(t)}
	srv := server.New(server.Config{Registry: reg, Load: runner.LoadOptions{NumCtx: 512},
		LoadModelHook: func(server.ModelEntry) { loads.Add(1); time.Sleep(slow) }})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })

	type durations struct {
		Load  time.Duration `json:"load_duration"`
		Total time.Duration `json:"total_duration"`
		Done  bool          `json:"done"`
	}
	ask := func(path, body string, wantLoads int32) durations {
		t.Helper()
		var d durations
		postJSON(t, hs.URL+path, body, &d)
		if n := loads.Load(); n != wantLoads {
			t.Fatalf("%s %s: %d loads so far; want %d", path, body, n, wantLoads)
		}
		if d.Load <= 0 || d.Load > d.Total {
			t.Errorf("%s %s: load_duration %v, total_duration %v; want a load_duration within the total", path, body, d.Load, d.Total)
		}
		return d
	}
	gen := `{"model":"stories260k","prompt":"Once upon a time","stream":false,"options":{"num_predict":2}}`
	if cold := ask("/api/generate", gen, 1); cold.Load < slow {
		t.Errorf("/api/generate, cold: load_duration %v; the load took at least %v", cold.Load, slow)
	}
	if warm := ask("/api/generate", gen, 1); warm.Load >= slow {
		t.Errorf("/api/generate, warm: load_duration %v; the model was loaded", warm.Load)
	}
	chat := `{"model":"tiny-qwen2","messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":2}}`
	if cold := ask("/api/chat", chat, 2); cold.Load < slow {
		t.Errorf("/api/chat, cold: load_duration %v; the load took at least %v", cold.Load, slow)
	}
	if warm := ask("/api/embed", `{"model":"tiny-qwen2","input":"hi"}`, 2); warm.Load >= slow {
		t.Errorf("/api/embed, warm: load_duration %v; the model was loaded", warm.Load)
	}
	ask("/api/embed", `{"model":"tiny-qwen2","input":"hi","keep_alive":0}`, 2) // unloads it after
	if cold := ask("/api/embed", `{"model":"tiny-qwen2","input":"hi"}`, 3); cold.Load < slow {
		t.Errorf("/api/embed, cold: load_duration %v; the load took at least %v", cold.Load, slow)
	}
}
