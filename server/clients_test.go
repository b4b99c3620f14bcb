package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// needed fails under CI, where every tool must be present, and skips
// elsewhere (the rule of folio/internal/fixtures).
func needed(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// TestRealClients drives a live server with two clients nobody here
// wrote, the npm packages ollama (ollama-js) and openai, through
// testdata/clients/clients.mjs: streaming and non-streaming chat and
// generate, embeddings, tags, show, ps, copy and delete, version; and
// OpenAI's chat.completions, completions, embeddings, models, responses
// (whole, and through the SDK's stream helper: text, reasoning and a
// function call) and errors.
// The Go client of github.com/ollama/ollama/api is TestOllamaClient.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	_, base := newTemplatedServer(t)
	runClientScript(t, node, modules, base, "clients.mjs")
}

// runClientScript runs testdata/clients/<script> with node against the
// server at base and reports every check of its JSON summary that failed.
func runClientScript(t *testing.T, node, modules, base, script string) (checks int) {
	t.Helper()
	// The script runs beside a link to the installed packages, so that
	// its imports resolve; nothing is installed in the repository.
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "clients", script))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, script), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script), base)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var sum struct {
		OK       bool              `json:"ok"`
		Versions map[string]string `json:"versions"`
		Checks   []struct {
			Name  string `json:"name"`
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatalf("node %s: %v; no JSON summary (%v)\nstdout:\n%s\nstderr:\n%s", script, runErr, err, stdout.String(), stderr.String())
	}
	t.Logf("%s: clients %v; %d checks", script, sum.Versions, len(sum.Checks))
	for _, c := range sum.Checks {
		if !c.OK {
			t.Errorf("%s: %s", c.Name, c.Error)
		}
	}
	if runErr != nil || !sum.OK || len(sum.Checks) == 0 {
		t.Errorf("node %s: %v, ok %v, %d checks\nstderr:\n%s", script, runErr, sum.OK, len(sum.Checks), stderr.String())
	}
	return len(sum.Checks)
}

// installClients installs testdata/clients/package.json once per content
// into $FOLIO_NPM_CLIENTS (default the user cache, ~/.cache/folio/npm-clients)
// and returns its node_modules folder.
func installClients(t *testing.T) string {
	t.Helper()
	pkg, err := os.ReadFile(filepath.Join("testdata", "clients", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getenv("FOLIO_NPM_CLIENTS")
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		root = filepath.Join(cache, "folio", "npm-clients")
	}
	h := sha256.Sum256(pkg)
	dir := filepath.Join(root, hex.EncodeToString(h[:8]))
	modules := filepath.Join(dir, "node_modules")
	marker := filepath.Join(modules, ".folio-installed")
	if _, err := os.Stat(marker); err == nil {
		return modules
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		needed(t, "npm is not on PATH: %v", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	// Install into a fresh folder and rename it into place, so that a
	// broken or concurrent install never leaves a half-filled one.
	tmp, err := os.MkdirTemp(root, "install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), pkg, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		needed(t, "npm install of the client packages failed: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "node_modules", ".folio-installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(marker); serr != nil { // not another install that won the race
			os.RemoveAll(dir)
			if err := os.Rename(tmp, dir); err != nil {
				t.Fatal(err)
			}
		}
	}
	return modules
}
