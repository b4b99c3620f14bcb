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
)

// TestRealClientsThinking drives newTemplatedServer's models with ollama-js
// and openai through testdata/clients/thinking.mjs: a model that thinks
// thinks by default (message.thinking set, the content clean; levels and
// false as Ollama takes them), think and tools refused by models whose
// template has neither, and tool calls with Ollama's call_ ids, whole and
// streamed.
func TestRealClientsThinking(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	_, base := newTemplatedServer(t)

	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "clients", "thinking.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "thinking.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "thinking.mjs"), base)
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
		t.Fatalf("node thinking.mjs: %v; no JSON summary (%v)\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	for _, c := range sum.Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Error)
		}
	}
	if runErr != nil || !sum.OK || len(sum.Checks) != 8 {
		t.Errorf("node thinking.mjs: %v, ok %v, %d checks\nstderr:\n%s", runErr, sum.OK, len(sum.Checks), stderr.String())
	}
}
