package cmd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestCreateChecksFrom: folio create with a server running sends a FROM
// file only once it has parsed as GGUF (magic and header): a secret
// named by a relative path, a file that only starts like GGUF and a cut
// GGUF are refused with what FROM must be, and nothing reaches the
// server but its heartbeat.
func TestCreateChecksFrom(t *testing.T) {
	var mu sync.Mutex
	var asked []string // requests other than the heartbeat
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			return
		}
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r) // no blob is there yet: a client would upload it
	}))
	defer hs.Close()
	t.Setenv("FOLIO_HOST", hs.URL)
	t.Setenv("FOLIO_HOME", t.TempDir())

	root := t.TempDir()
	dir := filepath.Join(root, "a", "b")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(root, "shadow"), []byte("root:$6$salt$hash:19000:0:99999:7:::\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "magic.gguf"), []byte("GGUF\x03\x00\x00\x00 and then nothing of a header"), 0o644)
	whole := tinyModel(t, 1)
	os.WriteFile(filepath.Join(dir, "cut.gguf"), whole[:len(whole)/2], 0o644)
	for _, from := range []string{"../../shadow", "./magic.gguf", "./cut.gguf"} {
		mf := filepath.Join(dir, "Modelfile")
		os.WriteFile(mf, []byte("FROM "+from+"\n"), 0o644)
		out, err := execute(t, "create", "x", "-f", mf)
		if err == nil || !strings.Contains(err.Error(), "FROM must be a GGUF file") || strings.Contains(err.Error(), "root:") {
			t.Errorf("FROM %s: %v; want an error saying what FROM must be", from, err)
		}
		if strings.Contains(out, "uploading") {
			t.Errorf("FROM %s: printed %q", from, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 0 {
		t.Errorf("the server was asked %v; want nothing uploaded", asked)
	}
}
