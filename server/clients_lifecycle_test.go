package server_test

import (
	"os/exec"
	"testing"

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
	if n := runClientScript(t, node, modules, ls.base, "lifecycle.mjs"); n != 4 {
		t.Errorf("lifecycle.mjs ran %d checks, want 4", n)
	}
	if n := len(ls.loaded()); n < 4 {
		t.Errorf("%d loads: the burst did not reach every model", n)
	}
}
