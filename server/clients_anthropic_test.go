package server_test

import (
	"os/exec"
	"testing"
)

// TestRealClientsAnthropic drives newAnthropicServer's models with the
// official @anthropic-ai/sdk through testdata/clients/anthropic.mjs, found
// through ANTHROPIC_BASE_URL as Claude Code finds it: messages.create,
// messages.stream and its finalMessage() over thinking, text and tool_use
// blocks (with the events in order), a tool-use round trip (a forced call,
// its tool_result, the answer read over the cached prefix), thinking
// blocks sent and sent back, stop sequences, countTokens, the SDK's error
// classes (NotFoundError, BadRequestError, an error event mid-stream) and
// a bearer token in place of the API key.
func TestRealClientsAnthropic(t *testing.T) {
	if testing.Short() {
		t.Skip("the npm clients are skipped with -short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		needed(t, "node is not on PATH: %v", err)
	}
	modules := installClients(t)
	runClientScript(t, node, modules, newAnthropicServer(t), "anthropic.mjs")
}
