package server_test

import (
	"os/exec"
	"testing"
)

// TestRealClientsCounts: ollama-js and openai-node read the counts of a
// repeated long prompt (testdata/clients/counts.mjs): prompt_eval_count,
// prompt_tokens and input_tokens are the whole prompt every time, the
// repeat's cached count is positive, load_duration is on the final
// answer, and the legacy embeddings are the raw vector /api/embed
// normalizes.
func TestRealClientsCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	_, base := newTestServer(t)
	runClientScript(t, node, modules, base, "counts.mjs")
}
