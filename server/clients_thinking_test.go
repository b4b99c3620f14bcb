package server_test

import (
	"os/exec"
	"testing"
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
	runClientScript(t, node, modules, base, "thinking.mjs")
}
