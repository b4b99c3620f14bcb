package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/internal/fixtures"
	"folio/server"
	"folio/store"
)

// TestCopyRules: /api/copy takes the names pull and create take, and
// registers only weights that open as GGUF: bad names are 400 with a
// short message, a source that leads to a secret is "not found" and a
// .gguf file that is not GGUF is 422; none of them reaches /api/tags.
func TestCopyRules(t *testing.T) {
	_, base, _, _ := guardServer(t, nil, 0)
	tmp := t.TempDir()
	secretLink := link(t, secretFile(t), filepath.Join(tmp, "x.gguf"))
	notGGUF := filepath.Join(tmp, "notes.gguf")
	os.WriteFile(notGGUF, []byte("root:x:0:0:root:/root:/bin/bash\n"), 0o644)
	copyOf := func(src, dst string) (int, string) {
		status, _, msg := call(t, "POST", base+"/api/copy", jsonBody(map[string]string{"source": src, "destination": dst}), nil)
		return status, msg
	}
	for _, dst := range []string{"a\x00b", "a:b:c", strings.Repeat("a", 20<<20), "../../escape", "a b", "/abs"} {
		status, msg := copyOf("tiny", dst)
		if status != http.StatusBadRequest || !strings.Contains(msg, "destination") || len(msg) > 1024 {
			t.Errorf("copy to %.40q: %d %.200q (%d bytes); want 400 naming the destination, in under 1 KiB", dst, status, msg, len(msg))
		}
	}
	if status, msg := copyOf(secretLink, "leak"); status != http.StatusNotFound || strings.Contains(msg, "root") {
		t.Errorf("copy of a .gguf link to a secret: %d %q; want 404", status, msg)
	}
	if status, msg := copyOf(notGGUF, "notes"); status != http.StatusUnprocessableEntity || !strings.Contains(msg, "not a GGUF file") || strings.Contains(msg, "root") {
		t.Errorf("copy of a .gguf file that is not GGUF: %d %q; want 422 without its bytes", status, msg)
	}
	if status, msg := copyOf("tiny", "mine:v1"); status != http.StatusOK {
		t.Fatalf("copy of a library model: %d %q", status, msg)
	}
	resp, err := http.Get(base + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tags api.ListResponse
	if err := json.NewDecoder(resp.Body).Decode(&tags); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range tags.Models {
		names = append(names, m.Name)
	}
	if strings.Join(names, " ") != "mine:v1 tiny:latest" {
		t.Errorf("/api/tags lists %q; want the copy and its source only", names)
	}
}

// TestCopyKeepsManifest: a copy of a pulled model has its system prompt,
// as Ollama's copy shares the manifest.
func TestCopyKeepsManifest(t *testing.T) {
	c, name, _ := pullConfigured(t, fakehub.Layer{MediaType: installer.MediaSystem, Data: []byte("be brief")})
	ctx := context.Background()
	if err := c.Copy(ctx, &api.CopyRequest{Source: name, Destination: "mine"}); err != nil {
		t.Fatal(err)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "mine"})
	if err != nil || show.System != "be brief" {
		t.Errorf("show of the copy: system %q, %v; want the source's", show.System, err)
	}
}

// copyServer serves tiny.gguf's library with an installer home in home
// (a fresh folder when ""), keeping reserve bytes of its disk free.
func copyServer(t *testing.T, home string, reserve int64) (string, *store.Registry) {
	t.Helper()
	reg, _, _, _ := tinyHome(t)
	if home == "" {
		home = t.TempDir()
	}
	st, err := store.OpenRegistry(home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg.Store = st
	srv := server.New(server.Config{Registry: reg, Version: "test", Install: &installer.Options{Home: home, Store: st, DiskReserve: reserve}})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs.URL, st
}

// TestCopyDiskFull: a copy onto a disk without room is 507 saying what to
// free, and registers nothing: seen through the installer's reserve,
// which a copy keeps as an upload does.
func TestCopyDiskFull(t *testing.T) {
	base, st := copyServer(t, "", 1<<62)
	status, _, msg := call(t, "POST", base+"/api/copy", `{"source":"tiny","destination":"mine"}`, nil)
	if status != http.StatusInsufficientStorage || !strings.Contains(msg, "free disk space") || !strings.Contains(msg, "FOLIO_HOME") {
		t.Errorf("copy on a full disk: %d %q; want 507 saying to free disk space", status, msg)
	}
	if ms, _ := st.Models(); len(ms) != 0 {
		t.Errorf("registered %v", ms)
	}
}

// TestCopyDiskFullTmpfs fills a real 2 MiB tmpfs holding the home, with
// the reserve off, so that the copy's own writes find the disk full; it
// needs the right to mount and skips without it.
func TestCopyDiskFullTmpfs(t *testing.T) {
	home, _ := fixtures.SmallDisk(t, "2m")
	base, st := copyServer(t, home, -1)
	filler, err := os.Create(filepath.Join(home, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close()
	for _, err = filler.Write(make([]byte, 64<<10)); err == nil; _, err = filler.Write(make([]byte, 4<<10)) {
	}
	status, _, msg := call(t, "POST", base+"/api/copy", `{"source":"tiny","destination":"mine"}`, nil)
	if status != http.StatusInsufficientStorage || !strings.Contains(msg, "free disk space") {
		t.Errorf("copy on a full tmpfs: %d %q; want 507 saying to free disk space", status, msg)
	}
	if ms, _ := st.Models(); len(ms) != 0 {
		t.Errorf("registered %v", ms)
	}
}
