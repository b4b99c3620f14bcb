package installer_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// serveHome serves the models of st and the GGUF files of lib.
func serveHome(t *testing.T, st *store.Registry, lib string) string {
	t.Helper()
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = []string{lib}, st
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 256},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL
}

// ask posts a short greedy generation of model and returns the status
// and the response text or error.
func ask(t *testing.T, url, model string) (int, string) {
	t.Helper()
	body := `{"model":` + strconvQuote(model) + `,"prompt":"hello","raw":true,"stream":false,"options":{"temperature":0,"num_predict":4}}`
	resp, err := http.Post(url+"/api/generate", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ Response, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: the answer is not JSON: %v", model, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp.StatusCode, out.Response
	}
	return resp.StatusCode, out.Error
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// pullTwo pulls tiny (seed 1) and other (seed 2) into a new home.
func pullTwo(t *testing.T) (home string, st *store.Registry, tiny, other store.Model) {
	t.Helper()
	hub := fakehub.New()
	t.Cleanup(hub.Close)
	publishTiny(t, hub, gguf.TypeQ8_0)
	hub.Publish("library", "other", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: tinyGGUF(t, gguf.TypeQ8_0, 2)})
	home, st = newHome(t)
	var err error
	if tiny, err = installer.Pull(context.Background(), hub.Host()+"/library/tiny:latest", testOptions(home, st)); err != nil {
		t.Fatal(err)
	}
	if other, err = installer.Pull(context.Background(), hub.Host()+"/library/other:latest", testOptions(home, st)); err != nil {
		t.Fatal(err)
	}
	return home, st, tiny, other
}

// TestCorruptBlobRefused: bytes flipped in a registered model's blob (in
// its header, in its weights) or the blob cut short: the model is refused
// with an error that names the damage and the fix, never served; the
// server goes on serving the other model.
func TestCorruptBlobRefused(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{"header", func(t *testing.T, path string) { flip(t, path, 1) }},
		{"weights", func(t *testing.T, path string) { flip(t, path, -4096) }},
		{"truncated", func(t *testing.T, path string) {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, st, tiny, other := pullTwo(t)
			url := serveHome(t, st, t.TempDir())
			_, wantOther := ask(t, url, other.Name)
			c.damage(t, tiny.Path)
			code, msg := ask(t, url, tiny.Name)
			if code == http.StatusOK || code >= 500 && code != http.StatusInsufficientStorage {
				t.Fatalf("the damaged model answered %d %q", code, msg)
			}
			if !strings.Contains(msg, filepath.Base(tiny.Path)) && !strings.Contains(msg, tiny.Name) {
				t.Errorf("the error does not name the model or its file: %q", msg)
			}
			t.Logf("the user sees: %d %s", code, msg)
			if code, got := ask(t, url, other.Name); code != http.StatusOK || got != wantOther {
				t.Errorf("the other model after the fault: %d %q, before %q", code, got, wantOther)
			}
		})
	}
}

// TestTruncatedLibraryGGUF: a GGUF file of the library (FOLIO_MODELS_PATH)
// cut short is refused with an error naming the file; the server goes on.
func TestTruncatedLibraryGGUF(t *testing.T) {
	lib := t.TempDir()
	good := tinyGGUF(t, gguf.TypeQ8_0, 1)
	for name, data := range map[string][]byte{"good.gguf": good, "cut.gguf": good[:len(good)*2/3], "stub.gguf": good[:20]} {
		if err := os.WriteFile(filepath.Join(lib, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, st := newHome(t)
	url := serveHome(t, st, lib)
	for _, name := range []string{"cut", "stub"} {
		code, msg := ask(t, url, name)
		if code < 400 || code >= 500 || !strings.Contains(msg, name+".gguf") {
			t.Errorf("%s: %d %q; want a 4xx naming %s.gguf", name, code, msg, name)
		}
		t.Logf("the user sees: %d %s", code, msg)
	}
	if code, got := ask(t, url, "good"); code != http.StatusOK || got == "" {
		t.Errorf("the good model after the faults: %d %q", code, got)
	}
}

// flip inverts one byte of the file at off (from the end when negative).
func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if off < 0 {
		fi, _ := f.Stat()
		off += fi.Size()
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}
