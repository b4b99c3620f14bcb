package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"folio/installer"
	"folio/server"
)

// secretFile writes a file that is not a model, as /etc/passwd.
func secretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(p, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func link(t *testing.T, target, name string) string {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	return name
}

func jsonBody(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestPathModelLinks: from this machine a .gguf name that is a link is
// judged by the file it leads to: a link to a secret is "not found", as
// a missing file, and the secret is never parsed (no 422 quoting its
// bytes); links to GGUF files, and links inside the library, work.
func TestPathModelLinks(t *testing.T) {
	_, base, lib, _ := guardServer(t, nil, 0)
	secret := secretFile(t)
	tmp := t.TempDir()
	bad := link(t, secret, filepath.Join(tmp, "x.gguf"))
	libBad := link(t, secret, filepath.Join(lib, "evil.gguf"))
	missing := filepath.Join(tmp, "missing.gguf")
	notGGUF := filepath.Join(tmp, "notes.gguf") // a real .gguf file that is not GGUF
	os.WriteFile(notGGUF, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	good := link(t, filepath.Join(lib, "tiny.gguf"), filepath.Join(tmp, "mine.gguf"))
	libGood := link(t, "tiny.gguf", filepath.Join(lib, "alias.gguf"))

	show := func(model string) (int, string) {
		status, _, msg := call(t, "POST", base+"/api/show", jsonBody(map[string]string{"model": model}), nil)
		return status, msg
	}
	wantStatus, wantMsg := show(missing)
	if wantStatus != http.StatusNotFound {
		t.Fatalf("a missing path: %d %q", wantStatus, wantMsg)
	}
	for _, p := range []string{bad, libBad} {
		status, msg := show(p)
		if status != wantStatus || strings.ReplaceAll(msg, p, missing) != wantMsg {
			t.Errorf("show %s (a link to a secret): %d %q; want %d %q, as a missing file", p, status, msg, wantStatus, wantMsg)
		}
		status, _, msg = call(t, "POST", base+"/api/generate", jsonBody(map[string]any{"model": p, "prompt": "hi"}), nil)
		if status != http.StatusNotFound || strings.Contains(msg, "root") {
			t.Errorf("generate with %s: %d %q; want 404", p, status, msg)
		}
	}
	status, msg := show(notGGUF)
	if status != http.StatusUnprocessableEntity || !strings.Contains(msg, "not a GGUF file") || strings.Contains(msg, "root") {
		t.Errorf("show of a .gguf file that is not GGUF: %d %q; want 422 without its bytes", status, msg)
	}
	for _, p := range []string{good, libGood} {
		if status, msg := show(p); status != http.StatusOK {
			t.Errorf("show %s (a link to a GGUF file): %d %q", p, status, msg)
		}
	}
}

// TestPathModelProbing: /api/show and /v1/models/{model} answer a file
// that may not be opened as they answer a missing one, and no 404 names
// the server's folders.
func TestPathModelProbing(t *testing.T) {
	_, base, lib, home := guardServer(t, nil, 0)
	secret := secretFile(t)
	missing := filepath.Join(filepath.Dir(secret), "missing")
	// each answers for a model name m with the status and the error, m in
	// it written NAME
	for endpoint, answer := range map[string]func(m string) (int, string){
		"/api/show": func(m string) (int, string) {
			status, _, msg := call(t, "POST", base+"/api/show", jsonBody(map[string]string{"model": m}), nil)
			return status, strings.ReplaceAll(msg, m, "NAME")
		},
		"/v1/models/{model}": func(m string) (int, string) {
			status, _, msg := call(t, "GET", base+"/v1/models/"+url.PathEscape(m), "", nil)
			return status, strings.ReplaceAll(msg, m, "NAME")
		},
	} {
		s1, m1 := answer(secret)
		s2, m2 := answer(missing)
		if s1 != http.StatusNotFound || s1 != s2 || m1 != m2 {
			t.Errorf("%s: an existing file: %d %q; a missing one: %d %q; want one 404 answer", endpoint, s1, m1, s2, m2)
		}
		s3, m3 := answer("nope")
		if s3 != http.StatusNotFound {
			t.Errorf("%s nope: %d", endpoint, s3)
		}
		for _, m := range []string{m1, m3} {
			if strings.Contains(m, lib) || strings.Contains(m, home) || !strings.Contains(m, `model "NAME" not found`) {
				t.Errorf("%s: 404 %q; want `model \"NAME\" not found`, naming no folder", endpoint, m)
			}
		}
	}
}

// TestPathModelHashStops: a sparse .gguf file of 64 GiB named by path is
// hashed only while its request lasts: once the client has gone, the
// handler returns (the server closes) instead of reading on for minutes.
func TestPathModelHashStops(t *testing.T) {
	reg, st, _, home := tinyHome(t)
	srv := server.New(server.Config{Registry: reg, Version: "test", Install: &installer.Options{Home: home, Store: st}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close() })
	big := filepath.Join(t.TempDir(), "big.gguf")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 64<<30); err != nil {
		t.Skipf("no sparse file of 64 GiB here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+"/api/show", strings.NewReader(jsonBody(map[string]string{"model": big})))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("show of a 64 GiB file answered %d within 300 ms", resp.StatusCode)
	}
	closed := make(chan struct{})
	go func() { hs.Close(); close(closed) }() // waits for the handler
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("10 s after its client left, the handler still hashes the file")
	}
}
