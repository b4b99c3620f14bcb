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

// TestRealClientsJSONSchema drives a live server through
// testdata/clients/jschema.mjs: ollama-js's format and openai-node's
// response_format with Pydantic- and Zod-shaped schemas (pattern, format,
// number bounds, prefixItems, additionalProperties beside properties,
// minProperties) at temperature 1, every reply checked against its schema
// in JavaScript; and a keyword the grammar cannot enforce, a 400 naming it.
func TestRealClientsJSONSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	_, base := newTestServer(t)
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "clients", "jschema.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jschema.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "jschema.mjs"), base)
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
		t.Fatalf("node jschema.mjs: %v; no JSON summary (%v)\nstdout:\n%s\nstderr:\n%s", runErr, err, stdout.String(), stderr.String())
	}
	t.Logf("%d checks", len(sum.Checks))
	for _, c := range sum.Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Error)
		}
	}
	if runErr != nil || !sum.OK || len(sum.Checks) < 5 {
		t.Errorf("node jschema.mjs: %v, ok %v, %d checks\nstderr:\n%s", runErr, sum.OK, len(sum.Checks), stderr.String())
	}
}
