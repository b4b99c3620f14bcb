package server_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/installer"
	"folio/models/gguf"
	"folio/models/synth"
	"folio/server"
	"folio/store"
)

// guardServer serves a library holding one tiny model (tiny.gguf) and an
// installer home, with cfg's Origins and MaxBodyBytes, and returns the
// handler, the URL of a loopback listener in front of it, the library
// folder and the home.
func guardServer(t testing.TB, origins []string, maxBody int64) (*server.Server, string, string, string) {
	t.Helper()
	reg, st, lib, home := tinyHome(t)
	srv := server.New(server.Config{Registry: reg, Version: "test", Origins: origins, MaxBodyBytes: maxBody,
		Install: &installer.Options{Home: home, Store: st}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, hs.URL, lib, home
}

// tinyHome makes a library folder holding tiny.gguf (the tiny synthetic
// model, Q8_0) and a FOLIO_HOME with its store (closed at cleanup), and
// returns the registry over both, the store, the folder and the home.
func tinyHome(t testing.TB) (*server.LibraryRegistry, *store.Registry, string, string) {
	t.Helper()
	lib, home := t.TempDir(), t.TempDir()
	if err := synth.WriteTiny(filepath.Join(lib, "tiny.gguf"), "llama", gguf.TypeQ8_0, 0); err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = []string{lib}, st
	return reg, st, lib, home
}

// call sends one request and returns the status, the headers and the
// "error" of a JSON error body (Ollama's string or OpenAI's message).
func call(t *testing.T, method, u, body string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, errorText(data)
}

func errorText(data []byte) string {
	var e struct{ Error json.RawMessage }
	if json.Unmarshal(data, &e) != nil || e.Error == nil {
		return ""
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s
	}
	var o struct{ Message string }
	json.Unmarshal(e.Error, &o)
	return o.Message
}

// TestOrigins: cross-origin browser requests pass from localhost pages,
// app schemes and FOLIO_ORIGINS only; requests without an Origin pass.
func TestOrigins(t *testing.T) {
	_, base, _, _ := guardServer(t, []string{"https://chat.example", "chrome-extension://*"}, 0)
	u, _ := url.Parse(base)
	for _, c := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{"http://localhost", true},
		{"http://localhost:3000", true},
		{"https://127.0.0.1:8443", true},
		{"http://0.0.0.0:8080", true},
		{"app://obsidian.md", true},
		{"tauri://localhost", true},
		{"file://", true},
		{"vscode-webview://abc", true},
		{"http://" + u.Host, true}, // same origin
		{"https://chat.example", true},
		{"chrome-extension://abcdef", true},
		{"https://evil.example", false},
		{"http://localhost:1.evil.example", false},
		{"http://localhost.evil.example", false},
		{"https://chat.example.evil", false},
		{"null", false},
		{"moz-extension://abc", false},
	} {
		t.Run(c.origin, func(t *testing.T) {
			h := map[string]string{}
			if c.origin != "" {
				h["Origin"] = c.origin
			}
			status, hdr, msg := call(t, "GET", base+"/api/version", "", h)
			switch {
			case c.ok && (status != http.StatusOK || (c.origin != "" && c.origin != "http://"+u.Host && hdr.Get("Access-Control-Allow-Origin") != c.origin)):
				t.Errorf("origin %q: status %d, Access-Control-Allow-Origin %q; want 200 and the origin", c.origin, status, hdr.Get("Access-Control-Allow-Origin"))
			case !c.ok && (status != http.StatusForbidden || !strings.Contains(msg, "FOLIO_ORIGINS")):
				t.Errorf("origin %q: status %d, error %q; want 403 naming FOLIO_ORIGINS", c.origin, status, msg)
			}
		})
	}
	// "*" set explicitly allows every origin.
	_, any, _, _ := guardServer(t, []string{"*"}, 0)
	if status, _, _ := call(t, "GET", any+"/api/tags", "", map[string]string{"Origin": "https://evil.example"}); status != http.StatusOK {
		t.Errorf("FOLIO_ORIGINS=*: status %d", status)
	}
}

// TestPreflight: an allowed origin's OPTIONS is answered with the methods
// and headers it may use; a refused one gets 403 before any route runs.
func TestPreflight(t *testing.T) {
	_, base, _, _ := guardServer(t, nil, 0)
	h := map[string]string{"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "content-type,x-stainless-os"}
	status, hdr, _ := call(t, "OPTIONS", base+"/v1/chat/completions", "", h)
	if status != http.StatusNoContent || hdr.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(hdr.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(hdr.Get("Access-Control-Allow-Headers"), "x-stainless-os") {
		t.Errorf("allowed preflight: %d %v", status, hdr)
	}
	h["Origin"] = "https://evil.example"
	if status, hdr, _ := call(t, "OPTIONS", base+"/api/chat", "", h); status != http.StatusForbidden || hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("refused preflight: %d %v", status, hdr)
	}
	// A refused origin's simple POST never reaches the handler: no model
	// error, the guard's 403.
	status, _, msg := call(t, "POST", base+"/api/generate", `{"model":"nosuch"}`, map[string]string{"Origin": "https://evil.example"})
	if status != http.StatusForbidden || !strings.Contains(msg, "FOLIO_ORIGINS") {
		t.Errorf("refused POST: %d %q", status, msg)
	}
}

// TestHostHeader: on a loopback listener only localhost, this machine's
// names and IP literals are answered (DNS rebinding).
func TestHostHeader(t *testing.T) {
	_, base, _, _ := guardServer(t, nil, 0)
	u, _ := url.Parse(base)
	name, _ := os.Hostname()
	for _, c := range []struct {
		host string
		ok   bool
	}{
		{u.Host, true},
		{"localhost:11434", true},
		{"LOCALHOST", true},
		{"app.localhost:3000", true},
		{"[::1]:11434", true},
		{"10.0.0.7", true},
		{"host.docker.internal:11434", true},
		{name, true},
		{"evil.example:11434", false},
		{"127.0.0.1.nip.io", false},
		{"localhost.evil.example", false},
		{"]", false}, // FuzzGuard: brackets were trimmed to an empty Host
		{"[evil.example]", false},
	} {
		t.Run(c.host, func(t *testing.T) {
			status, _, msg := call(t, "GET", base+"/api/version", "", map[string]string{"Host": c.host})
			if c.ok != (status == http.StatusOK) || (!c.ok && (status != http.StatusForbidden || !strings.Contains(msg, "DNS rebinding"))) {
				t.Errorf("Host %q: status %d %q", c.host, status, msg)
			}
		})
	}
}

// TestBodyLimit: a JSON body over MaxBodyBytes gets 413 naming the limit
// and FOLIO_MAX_BODY, from the Ollama and OpenAI endpoints alike; a blob
// upload is not limited (its digest decides).
func TestBodyLimit(t *testing.T) {
	_, base, _, home := guardServer(t, nil, 1024)
	big := `{"model":"tiny","prompt":"` + strings.Repeat("a", 4096) + `"}`
	for _, path := range []string{"/api/generate", "/api/chat", "/api/show", "/api/create", "/v1/chat/completions", "/v1/embeddings"} {
		status, _, msg := call(t, "POST", base+path, big, nil)
		if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "FOLIO_MAX_BODY") || !strings.Contains(msg, "1024") {
			t.Errorf("%s: status %d, error %q; want 413 naming the limit", path, status, msg)
		}
	}
	blob := bytes.Repeat([]byte("folio"), 1000)
	sum := sha256.Sum256(blob)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if status, _, msg := call(t, "POST", base+"/api/blobs/"+digest, string(blob), nil); status != http.StatusCreated {
		t.Fatalf("blob of %d bytes over a 1024-byte limit: %d %q", len(blob), status, msg)
	}
	if !installer.HasBlob(home, digest) {
		t.Error("the uploaded blob is not in the home")
	}
}

// TestUploadDiskReserve: a blob upload that would leave less free disk
// than the installer keeps gets 507, saying what to do, and is not kept.
func TestUploadDiskReserve(t *testing.T) {
	reg, st, _, home := tinyHome(t)
	srv := server.New(server.Config{Registry: reg, Version: "test",
		Install: &installer.Options{Home: home, Store: st, DiskReserve: 1 << 62}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	blob := []byte("a blob no disk has room for")
	sum := sha256.Sum256(blob)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	status, _, msg := call(t, "POST", hs.URL+"/api/blobs/"+digest, string(blob), nil)
	if status != http.StatusInsufficientStorage || !strings.Contains(msg, "free disk space") || !strings.Contains(msg, "FOLIO_HOME") {
		t.Fatalf("status %d %q, want 507 saying to free disk space", status, msg)
	}
	if installer.HasBlob(home, digest) {
		t.Fatal("the refused blob was kept")
	}
}

// TestNoArbitraryFiles: names and digests that would build a path out of
// the home are refused, and a model name that is a file opens only a
// .gguf file, and only for a client on this machine; any other file is
// "not found", as a missing one (paths_test.go TestPathModelProbing).
func TestNoArbitraryFiles(t *testing.T) {
	srv, base, lib, home := guardServer(t, nil, 0)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("not a model"), 0o600); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(lib, "tiny.gguf")
	post := func(path, body string) (int, string) {
		status, _, msg := call(t, "POST", base+path, body, nil)
		return status, msg
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, c := range []struct {
		path, body string
		status     int
		want       string
	}{
		{"/api/show", js(map[string]string{"model": secret}), 404, "not found"},
		{"/api/generate", js(map[string]any{"model": secret, "prompt": "hi"}), 404, "not found"},
		{"/api/chat", js(map[string]any{"model": secret}), 404, "not found"},
		{"/api/embed", js(map[string]any{"model": secret, "input": "hi"}), 404, "not found"},
		{"/api/copy", js(map[string]string{"source": secret, "destination": "x"}), 404, "not found"},
		{"/v1/chat/completions", js(map[string]any{"model": secret, "messages": []map[string]string{{"role": "user", "content": "hi"}}}), 404, "not found"},
		{"/api/create", js(map[string]string{"model": "x", "from": secret}), 400, "/api/blobs"},
		{"/api/create", js(map[string]string{"model": "x", "from": "../../etc/passwd"}), 400, "/api/blobs"},
		{"/api/create", js(map[string]any{"model": "x", "files": map[string]string{"m.gguf": "sha256:../../../etc/passwd"}}), 400, "digest"},
		{"/api/create", js(map[string]string{"model": "../../escape", "from": "tiny"}), 400, `".."`},
		{"/api/create", js(map[string]string{"model": "/abs/name", "from": "tiny"}), 400, `leading "/"`},
		{"/api/pull", js(map[string]string{"model": "../../etc/passwd"}), 400, `".."`},
		{"/api/copy", js(map[string]string{"source": "tiny", "destination": "../../escape"}), 400, "destination"},
	} {
		t.Run(c.path+" "+c.want, func(t *testing.T) {
			if status, msg := post(c.path, c.body); status != c.status || !strings.Contains(msg, c.want) {
				t.Errorf("%s %s: %d %q; want %d and %q", c.path, c.body, status, msg, c.status, c.want)
			}
		})
	}
	for _, d := range []string{"sha256:..%2F..%2Fetc%2Fpasswd", "sha256-" + strings.Repeat("a", 64), "..%2Fblobs"} {
		if status, _, msg := call(t, "POST", base+"/api/blobs/"+d, "x", nil); status != http.StatusBadRequest && status != http.StatusNotFound {
			t.Errorf("POST /api/blobs/%s: %d %q", d, status, msg)
		}
		if status, _, _ := call(t, "HEAD", base+"/api/blobs/"+d, "", nil); status != http.StatusBadRequest && status != http.StatusNotFound {
			t.Errorf("HEAD /api/blobs/%s: %d", d, status)
		}
	}
	// Nothing was written outside the home's blobs/ and manifests/.
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		switch e.Name() {
		case "blobs", "manifests", "folio.db", "folio.db-wal", "folio.db-shm":
		default:
			t.Errorf("unexpected %s in the home", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(home), "escape")); err == nil {
		t.Error("a name escaped the home")
	}

	// A path to a GGUF file works from this machine (folio run PATH with
	// a server running) and is refused from the network.
	if status, msg := post("/api/show", js(map[string]string{"model": model})); status != http.StatusOK {
		t.Errorf("show of a GGUF path from loopback: %d %q", status, msg)
	}
	req := httptest.NewRequest("POST", "/api/show", strings.NewReader(js(map[string]string{"model": model})))
	req.RemoteAddr = "192.0.2.7:50000"
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if msg := errorText(rec.Body.Bytes()); rec.Code != http.StatusForbidden || !strings.Contains(msg, "file path") {
		t.Errorf("show of a GGUF path from the network: %d %q", rec.Code, msg)
	}
	req = httptest.NewRequest("GET", "/v1/models/"+url.PathEscape(model), nil)
	req.RemoteAddr = "192.0.2.7:50000"
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("/v1/models/PATH from the network: %d %s", rec.Code, rec.Body)
	}
	// folio run's in-process server opens the file its user named, GGUF
	// or not (a file that is not GGUF then fails to parse: 422).
	req = httptest.NewRequest("POST", "/api/show", strings.NewReader(js(map[string]string{"model": secret})))
	req.RemoteAddr = "pipe"
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("show of a non-GGUF path in-process: %d %s", rec.Code, rec.Body)
	}
	// ... while names still work from the network.
	req = httptest.NewRequest("POST", "/api/show", strings.NewReader(`{"model":"tiny"}`))
	req.RemoteAddr = "192.0.2.7:50000"
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("show by name from the network: %d %s", rec.Code, rec.Body)
	}
}
