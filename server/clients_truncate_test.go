package server_test

import (
	"os/exec"
	"testing"
)

// TestRealClientsTruncate: ollama-js and openai send prompts longer than
// num_ctx (testdata/clients/truncate.mjs): generate and chat answer,
// truncated; with truncate:false the client gets the 400 naming num_ctx.
func TestRealClientsTruncate(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	_, base := newTestServer(t)
	runClientScript(t, node, modules, base, "truncate.mjs")
}
