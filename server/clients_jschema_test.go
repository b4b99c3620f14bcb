package server_test

import (
	"os/exec"
	"testing"
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
	runClientScript(t, node, modules, base, "jschema.mjs")
}
