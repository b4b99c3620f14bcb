package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"folio/server"
	"folio/server/web"
)

// TestPageServed: GET / gives a browser (Accept: text/html) the page, with
// its Content-Security-Policy, and everyone else Ollama's exact "Ollama is
// running", GET or HEAD; the page's files are under /ui/ with an ETag; the
// guard applies to both.
func TestPageServed(t *testing.T) {
	srv := server.New(server.Config{Registry: server.NewLibraryRegistry(nil), Version: "test"})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	do := func(method, path string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			if header[i] == "Host" {
				req.Host = header[i+1]
			} else {
				req.Header.Set(header[i], header[i+1])
			}
		}
		resp, err := http.DefaultTransport.RoundTrip(req) // no Accept-Encoding or Accept of its own
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, string(body)
	}
	const chrome = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
	for _, accept := range []string{"", "*/*", "application/json", "application/x-ndjson", "text/html;q=0", "text/plain, text/html; q=0.0"} {
		for _, method := range []string{"GET", "HEAD"} {
			resp, body := do(method, "/", "Accept", accept)
			want := "Ollama is running"
			if method == "HEAD" {
				want = ""
			}
			if resp.StatusCode != 200 || body != want || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
				resp.Header.Get("Server") != "folio/test" {
				t.Errorf("%s / with Accept %q: %d %.60q %q", method, accept, resp.StatusCode, body, resp.Header)
			}
		}
	}
	for _, method := range []string{"GET", "HEAD"} {
		resp, body := do(method, "/", "Accept", chrome)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			resp.Header.Get("Content-Security-Policy") != web.CSP || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(resp.Header.Get("Vary"), "Accept") {
			t.Errorf("%s / as a browser: %d %q", method, resp.StatusCode, resp.Header)
		}
		if method == "GET" && !strings.Contains(body, `<script type="module" src="/ui/app.js"></script>`) {
			t.Errorf("GET / as a browser: the page lacks its script:\n%s", body)
		}
		if method == "HEAD" && body != "" {
			t.Errorf("HEAD / as a browser has a body: %q", body)
		}
	}

	for path, ctype := range map[string]string{"/ui/app.js": "text/javascript; charset=utf-8", "/ui/markdown.js": "text/javascript; charset=utf-8",
		"/ui/app.css": "text/css; charset=utf-8", "/ui/icon.svg": "image/svg+xml"} {
		resp, body := do("GET", path)
		etag := resp.Header.Get("ETag")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype || etag == "" || body == "" {
			t.Errorf("GET %s: %d %q", path, resp.StatusCode, resp.Header)
			continue
		}
		if again, _ := do("GET", path, "If-None-Match", etag); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", path, again.StatusCode)
		}
	}
	if resp, body := do("GET", "/ui/nosuch.js"); resp.StatusCode != 404 || !strings.Contains(body, `"error"`) {
		t.Errorf("GET /ui/nosuch.js: %d %s", resp.StatusCode, body)
	}
	for _, path := range []string{"/", "/ui/app.js"} {
		if resp, _ := do("GET", path, "Accept", chrome, "Origin", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s from a foreign origin: %d, want 403", path, resp.StatusCode)
		}
		if resp, _ := do("GET", path, "Accept", chrome, "Host", "evil.example:11434"); resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s by a rebound DNS name: %d, want 403", path, resp.StatusCode)
		}
	}
}
