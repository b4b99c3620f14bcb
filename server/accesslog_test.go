package server_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"folio/internal/fixtures"
	"folio/runner"
	"folio/server"
)

// TestAccessLog: every request gets one info line through the server's
// logger, as Ollama's gin logger writes one: method, path, status,
// duration and client, and the model when the request's JSON names one,
// including requests that fail, stream, or that the guard refuses.
func TestAccessLog(t *testing.T) {
	var logs fixtures.LockedBuffer
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{newTestLibrary(t)}
	srv := server.New(server.Config{Registry: reg, Load: runner.LoadOptions{NumCtx: 512},
		Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })

	type line struct {
		Level, Msg, Method, Path, Model, Client string
		Status                                  int
		Duration                                time.Duration
	}
	cases := []struct {
		method, path, body, origin string
		want                       line
	}{
		{"POST", "/api/generate", `{"model":"stories260k","prompt":"Once","stream":false,"options":{"num_predict":2}}`, "",
			line{Method: "POST", Path: "/api/generate", Status: 200, Model: "stories260k"}},
		{"POST", "/api/chat", `{"model":"stories260k","messages":[{"role":"user","content":"hi"}],"options":{"num_predict":2}}`, "",
			line{Method: "POST", Path: "/api/chat", Status: 200, Model: "stories260k"}},
		{"POST", "/v1/chat/completions", `{"model":"stories260k","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"stream":true}`, "",
			line{Method: "POST", Path: "/v1/chat/completions", Status: 200, Model: "stories260k"}},
		{"POST", "/api/show", `{"name":"tiny-qwen2"}`, "",
			line{Method: "POST", Path: "/api/show", Status: 200, Model: "tiny-qwen2"}},
		{"POST", "/api/generate", `{"model":"no-such-model","prompt":"hi"}`, "",
			line{Method: "POST", Path: "/api/generate", Status: 404, Model: "no-such-model"}},
		{"POST", "/api/chat", `{"model":`, "", line{Method: "POST", Path: "/api/chat", Status: 400}},
		{"GET", "/api/tags", "", "", line{Method: "GET", Path: "/api/tags", Status: 200}},
		{"GET", "/nowhere", "", "", line{Method: "GET", Path: "/nowhere", Status: 404}},
		{"POST", "/api/generate", `{"model":"stories260k","prompt":"hi"}`, "https://evil.example",
			line{Method: "POST", Path: "/api/generate", Status: 403}},
		// a name is the client's text: the line keeps its first 200 bytes, whole characters only
		{"POST", "/api/show", `{"model":"x` + strings.Repeat("é", 300) + `"}`, "",
			line{Method: "POST", Path: "/api/show", Status: 404, Model: "x" + strings.Repeat("é", 99) + "…"}},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, hs.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want.Status {
			t.Errorf("%s %s %s: status %d; want %d", c.method, c.path, c.body, resp.StatusCode, c.want.Status)
		}
	}

	// The line is written as the handler returns, which may be just after
	// the client has read the end of the answer.
	var got []line
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = got[:0]
		for _, s := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var l line
			if err := json.Unmarshal([]byte(s), &l); err != nil {
				t.Fatalf("log line %q: %v", s, err)
			}
			if l.Msg == "request" {
				got = append(got, l)
			}
		}
		if len(got) >= len(cases) || time.Now().After(deadline) {
			break
		}
	}
	if len(got) != len(cases) {
		t.Fatalf("%d access lines for %d requests:\n%s", len(got), len(cases), logs.String())
	}
	// A streamed answer's line may follow the next request's: match
	// each request to its line, whatever the order.
	for _, c := range cases {
		i := slices.IndexFunc(got, func(g line) bool {
			return g.Method == c.want.Method && g.Path == c.want.Path && g.Status == c.want.Status && g.Model == c.want.Model
		})
		if i < 0 {
			t.Errorf("%s %s %s: no access line %+v in\n%s", c.method, c.path, c.body, c.want, logs.String())
			continue
		}
		if g := got[i]; g.Level != "INFO" || g.Duration <= 0 || !strings.HasPrefix(g.Client, "127.0.0.1:") {
			t.Errorf("%s %s: logged %+v; want it at INFO with a duration and the client", c.method, c.path, g)
		}
		got = slices.Delete(got, i, i+1)
	}
}
