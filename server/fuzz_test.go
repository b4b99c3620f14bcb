package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"folio/installer"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// The HTTP fuzz targets post fuzzed bodies (and path segments) to every
// route of an in-process server that holds a tiny synthetic model and an
// installer home whose network refuses every connection. For every input:
// no panic; a status of 2xx or 4xx, a 3xx only where ServeMux cleans a
// path, or one of the deliberate 5xx (501 not implemented, 502 a registry
// unreachable, 503 busy, 507 no memory; Anthropic's 529 busy), never 500,
// which would be a fault; a body that is JSON, NDJSON or SSE of JSON; an
// answer within fuzzDeadline.

// fuzzRoute is one endpoint; body routes take the input as the request
// body, path routes put it in the URL's last segment.
type fuzzRoute struct {
	method, path string
	inPath       bool
}

var ollamaRoutes = []fuzzRoute{
	{"POST", "/api/generate", false}, {"POST", "/api/chat", false}, {"POST", "/api/embed", false},
	{"POST", "/api/embeddings", false}, {"POST", "/api/show", false}, {"DELETE", "/api/delete", false},
	{"POST", "/api/copy", false}, {"POST", "/api/pull", false}, {"POST", "/api/create", false},
	{"POST", "/api/push", false}, {"POST", "/api/blobs/", true}, {"HEAD", "/api/blobs/", true},
	{"GET", "/api/tags", false}, {"GET", "/api/ps", false}, {"GET", "/api/version", false},
}

var openAIRoutes = []fuzzRoute{
	{"POST", "/v1/chat/completions", false}, {"POST", "/v1/completions", false},
	{"POST", "/v1/embeddings", false}, {"GET", "/v1/models/", true}, {"GET", "/v1/models", false},
	{"POST", "/v1/responses", false},
}

var anthropicRoutes = []fuzzRoute{{"POST", "/v1/messages", false}, {"POST", "/v1/messages/count_tokens", false}}

// fuzzDeadline bounds one request: the model is tiny and its context 64
// tokens, so any answer takes milliseconds; the slack is for a loaded
// machine.
const fuzzDeadline = 30 * time.Second

// noNetwork is the installer's transport: every connection is refused.
type noNetwork struct{}

func (noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	return nil, errors.New("the fuzz harness has no network")
}

// fuzzServer is the server under fuzzing: the tiny model (tiny.gguf, a
// library file) with a 64-token context, and an installer home.
func fuzzServer(f *testing.F) *server.Server {
	reg, st, _, home := tinyHome(f)
	srv := server.New(server.Config{Registry: reg, Version: "fuzz", Load: runner.LoadOptions{NumCtx: 64, Threads: 1},
		KeepAlive: -1, MaxBodyBytes: 1 << 20, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Install: &installer.Options{Home: home, Store: st, HTTP: &http.Client{Transport: noNetwork{}},
			Retries: 1, RetryBase: time.Millisecond, StallTimeout: time.Second}})
	f.Cleanup(srv.Close)
	return srv
}

// fuzzSeeds are valid and nearly valid bodies for every route.
var fuzzSeeds = []string{
	`{"model":"tiny","prompt":"hi","stream":false,"options":{"num_predict":4,"temperature":0}}`,
	`{"model":"tiny","prompt":"hi","options":{"num_predict":3,"seed":1},"format":"json"}`,
	`{"model":"tiny","prompt":"hi","raw":true,"context":[1,2,3],"options":{"num_predict":2}}`,
	`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":3},"stream":false}`,
	`{"model":"tiny","messages":[{"role":"system","content":"s"},{"role":"user","content":"u","images":["aGk="]}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"options":{"num_predict":2}}`,
	`{"model":"tiny","input":["a","b"],"truncate":true}`,
	`{"model":"tiny","prompt":"x"}`,
	`{"model":"tiny","verbose":true}`,
	`{"model":"tiny"}`,
	`{"source":"tiny","destination":"copy:1"}`,
	`{"model":"nosuch.example/a/b:c","stream":false}`,
	`{"model":"made","from":"tiny","template":"{{ .Prompt }}","parameters":{"num_ctx":32},"stream":false}`,
	`{"model":"made","files":{"m.gguf":"sha256:0000000000000000000000000000000000000000000000000000000000000000"}}`,
	`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true}}`,
	`{"model":"tiny","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"max_tokens":2,"n":2,"logprobs":true,"top_logprobs":2}`,
	`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}}`,
	`{"model":"tiny","prompt":["a","b"],"max_tokens":2,"echo":true,"stop":["x"]}`,
	`{"model":"tiny","input":"hello","encoding_format":"base64","dimensions":8}`,
	`{"model":"tiny","input":"hi","instructions":"be brief","max_output_tokens":3,"stream":true}`,
	`{"model":"tiny","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"x"}],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"max_output_tokens":2,"text":{"format":{"type":"json_object"}}}`,
	`{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"tiny","max_tokens":3,"stream":true,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"x"}],"is_error":true}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto"},"stop_sequences":["x"],"temperature":0.5,"top_p":0.9,"top_k":5,"metadata":{"user_id":"u"}}`,
	`{"model":"tiny","max_tokens":3,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"pre"}],"tools":[{"name":"f","input_schema":{"type":"object","properties":{"a":{"type":"integer"}}}}],"tool_choice":{"type":"tool","name":"f"}}`,
	`{"model":"tiny","max_tokens":3000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":[{"type":"image","source":{}}]}]}`,
	`{"model":"tiny","title":"t","system":"s","options":{"num_predict":2,"temperature":0}}`,
	`{"content":"hi"}`, `{"regenerate":true}`, `{"edit":"0123456789abcdef","content":"x"}`,
	`{"title":"x","model":"tiny","system":"","options":{"temperature":"hot"}}`,
	`sha256:0000000000000000000000000000000000000000000000000000000000000000`,
	`tiny`, ``, `{`, `[]`, `null`, `{"model":1}`, `{"options":{"num_ctx":-1}}`,
}

func fuzzAPI(f *testing.F, routes []fuzzRoute) { fuzzServed(f, fuzzServer(f), routes) }

// fuzzServed fuzzes routes of srv.
func fuzzServed(f *testing.F, srv *server.Server, routes []fuzzRoute) {
	for i := range routes {
		for _, s := range fuzzSeeds {
			f.Add(uint8(i), false, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, route uint8, local bool, input []byte) {
		rt := routes[int(route)%len(routes)]
		target := rt.path
		var body []byte
		if rt.inPath {
			target += url.PathEscape(string(input))
		} else if rt.method != "GET" {
			body = input
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, rt.method, "http://localhost/", bytes.NewReader(body))
		req.URL.Path, req.URL.RawPath = "", ""
		if u, err := url.Parse(target); err == nil {
			req.URL.Path, req.URL.RawPath = u.Path, u.RawPath
		}
		if local { // from this machine (the file-path rule), else from the network
			req.RemoteAddr = "127.0.0.1:40000"
		}
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if ctx.Err() != nil {
			t.Fatalf("%s %s: no answer within %v", rt.method, target, fuzzDeadline)
		}
		if c := rec.Code; c >= 300 && c < 400 {
			// ServeMux sends an unclean path ("/api/blobs/..") to its
			// clean form, with a JSON body, and nothing else redirects.
			if clean := path.Clean(req.URL.Path); clean == req.URL.Path || rec.Header().Get("Location") == "" {
				t.Fatalf("%s %s: status %d to %q", rt.method, target, c, rec.Header().Get("Location"))
			}
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s %s: redirect body %q is not JSON", rt.method, target, rec.Body)
			}
			return
		}
		checkAnswer(t, rt, rec)
	})
}

// checkAnswer checks the status and that the body parses as its
// Content-Type says.
func checkAnswer(t *testing.T, rt fuzzRoute, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch c := rec.Code; {
	case c >= 200 && c < 300, c >= 400 && c < 500:
	case c == http.StatusNotImplemented, c == http.StatusBadGateway, c == http.StatusServiceUnavailable, c == http.StatusInsufficientStorage,
		c == 529 && strings.HasPrefix(rt.path, "/v1/messages"): // Anthropic's overloaded: 503's meaning
	default:
		t.Fatalf("%s %s: status %d: %s", rt.method, rt.path, c, rec.Body)
	}
	body := rec.Body.Bytes()
	ct := rec.Header().Get("Content-Type")
	switch {
	case len(body) == 0:
	case strings.HasPrefix(ct, "application/json"):
		if !json.Valid(body) {
			t.Fatalf("%s %s: %d: not JSON: %q", rt.method, rt.path, rec.Code, body)
		}
	case strings.HasPrefix(ct, "application/x-ndjson"):
		sc := bufio.NewScanner(bytes.NewReader(body))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			if len(sc.Bytes()) > 0 && !json.Valid(sc.Bytes()) {
				t.Fatalf("%s %s: NDJSON line not JSON: %q", rt.method, rt.path, sc.Bytes())
			}
		}
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, line := range strings.Split(string(body), "\n") {
			data, ok := strings.CutPrefix(line, "data: ")
			if ok && data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("%s %s: SSE data not JSON: %q", rt.method, rt.path, data)
			}
		}
	default:
		t.Fatalf("%s %s: %d: Content-Type %q: %q", rt.method, rt.path, rec.Code, ct, body)
	}
}

// FuzzOllamaAPI fuzzes the bodies of every /api/ endpoint and the digest
// of /api/blobs.
func FuzzOllamaAPI(f *testing.F) { fuzzAPI(f, ollamaRoutes) }

// FuzzOpenAIAPI fuzzes the bodies of every /v1/ endpoint and the model of
// /v1/models/{model}.
func FuzzOpenAIAPI(f *testing.F) { fuzzAPI(f, openAIRoutes) }

// FuzzAnthropicAPI fuzzes the bodies of /v1/messages and its
// count_tokens.
func FuzzAnthropicAPI(f *testing.F) { fuzzAPI(f, anthropicRoutes) }

// FuzzFolioAPI fuzzes the bodies of /api/folio's endpoints (create, change,
// chat in a conversation of the tiny model) and the conversation ID of
// read, change and delete.
func FuzzFolioAPI(f *testing.F) {
	reg, st, _, _ := tinyHome(f)
	srv := server.New(server.Config{Registry: reg, Conversations: st, Version: "fuzz", Load: runner.LoadOptions{NumCtx: 64, Threads: 1},
		KeepAlive: -1, MaxBodyBytes: 1 << 20, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	f.Cleanup(srv.Close)
	c, err := st.CreateConversation(store.Conversation{Title: "fuzz", Model: "tiny", Options: `{"num_predict":2}`})
	if err != nil {
		f.Fatal(err)
	}
	conv := "/api/folio/conversations/" + c.ID
	fuzzServed(f, srv, []fuzzRoute{
		{"POST", "/api/folio/conversations", false}, {"POST", conv + "/chat", false}, {"PATCH", conv, false},
		{"GET", "/api/folio/conversations/", true}, {"PATCH", "/api/folio/conversations/", true},
		{"DELETE", "/api/folio/conversations/", true}, {"GET", "/api/folio/conversations", false},
	})
}
