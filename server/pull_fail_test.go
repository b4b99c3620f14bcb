package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"folio/installer"
	"folio/installer/fakehub"
)

// TestPullUpstreamFailures: what a registry does wrong is a 404 (it has
// no such model, in Ollama's words) or a 502 (anything else), never a 500,
// and never passes its answer's body on; a layer the disk has no room for
// is a 507 saying how much is needed and free, and leaves no huge sparse
// file behind.
func TestPullUpstreamFailures(t *testing.T) {
	hub := fakehub.New()
	defer hub.Close()
	weights := tinyBytes(t, 1)
	hub.Publish("library", "tiny", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: weights})
	manifest := func(model, digest string, size int64) {
		hub.SetManifest("library", model, "latest", fmt.Appendf(nil,
			`{"schemaVersion":2,"mediaType":%q,"layers":[{"mediaType":%q,"digest":%q,"size":%d}]}`,
			installer.MediaManifest, installer.MediaModel, digest, size))
	}
	manifest("huge", fakehub.Digest(weights), 1<<62)
	manifest("roomless", fakehub.Digest(weights), 1<<49) // 512 TiB: no disk has it free
	manifest("negative", fakehub.Digest(weights), -5)
	manifest("noblob", fakehub.Digest([]byte("not served")), 10)
	_, base, home := newInstallServer(t)
	pull := func(model string, stream bool) (int, string) {
		body := fmt.Sprintf(`{"model": %q, "insecure": true, "stream": %v}`, hub.Host()+"/library/"+model, stream)
		resp, err := http.Post(base+"/api/pull", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	for _, c := range []struct {
		model  string
		fail   int // the hub's status for every request; 0: none
		status int
		want   string
	}{
		{"nosuch", 0, http.StatusNotFound, "pull model manifest: file does not exist"},
		{"tiny", http.StatusInternalServerError, http.StatusBadGateway, "manifests/latest: 500 Internal Server Error"},
		{"tiny", http.StatusForbidden, http.StatusBadGateway, "403 Forbidden"},
		{"noblob", 0, http.StatusBadGateway, "404 Not Found"},
		{"huge", 0, http.StatusBadGateway, "invalid manifest"},
		{"negative", 0, http.StatusBadGateway, "invalid manifest"},
		{"roomless", 0, http.StatusInsufficientStorage, "needs 512.0 TiB more and the disk of"},
	} {
		hub.Fail.Store(int64(c.fail))
		status, body := pull(c.model, false)
		if status != c.status || !json.Valid([]byte(body)) || !strings.Contains(body, c.want) || strings.Contains(body, "fakehub") {
			t.Errorf("pull %s (hub answers %d): %d %s; want %d with %q and nothing of the hub's body", c.model, c.fail, status, body, c.status, c.want)
		}
		if _, body := pull(c.model, true); !strings.Contains(body, c.want) || strings.Contains(body, "fakehub") {
			t.Errorf("pull %s (hub answers %d), streamed: %s; want %q and nothing of the hub's body", c.model, c.fail, body, c.want)
		}
	}
	filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if info, err := d.Info(); err == nil && info.Size() > 1<<30 {
			t.Errorf("left behind: %s of %d bytes", path, info.Size())
		}
		return nil
	})
	hub.Fail.Store(0)
	if status, body := pull("tiny", false); status != http.StatusOK {
		t.Errorf("pull after the failures: %d %s", status, body)
	}
}
