package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"folio/server"
)

// TestRealClientsLifecycle drives a server with FOLIO_MAX_LOADED_MODELS 2
// and four models through ollama-js (testdata/clients/lifecycle.mjs): a
// burst of streamed and whole requests across the four (every one is
// answered; none gets 503), unloads of loaded and unloaded models,
// Ollama's full names and not-found error, and the GET / probe.
func TestRealClientsLifecycle(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	ls := newLifecycleServer(t, func(c *server.Config) { c.MaxLoaded, c.MaxQueue = 2, 64 })

	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "clients", "lifecycle.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lifecycle.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "lifecycle.mjs"), ls.base)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum struct {
		OK     bool `json:"ok"`
		Checks []struct {
			Name  string `json:"name"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("node lifecycle.mjs: %v; no JSON summary (%v)\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	for _, c := range sum.Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Error)
		}
	}
	if runErr != nil || !sum.OK || len(sum.Checks) != 4 {
		t.Errorf("node lifecycle.mjs: %v, ok %v, %d checks\nstderr:\n%s", runErr, sum.OK, len(sum.Checks), stderr.String())
	}
	if n := len(ls.loaded()); n < 4 {
		t.Errorf("%d loads: the burst did not reach every model", n)
	}
}
