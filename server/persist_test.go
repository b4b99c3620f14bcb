package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/models/gguf"
	"folio/models/synth"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// TestPersistedPrefixAcrossRestart: turn 2 of a conversation, after the
// server restarts on the same FOLIO_HOME, computes only its new tokens.
func TestPersistedPrefixAcrossRestart(t *testing.T) {
	lib, home := t.TempDir(), t.TempDir()
	if err := synth.WriteTiny(filepath.Join(lib, "tiny.gguf"), "llama", gguf.TypeQ8_0, 8); err != nil {
		t.Fatal(err)
	}
	var base string
	start := func() func() {
		st, err := store.OpenRegistry(home, store.RegistryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kv, err := store.OpenKV(home, store.KVOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reg := server.NewLibraryRegistry(nil)
		reg.Dirs, reg.Store = []string{lib}, st
		srv := server.New(server.Config{Registry: reg, Store: kv, Load: runner.LoadOptions{NumCtx: 2048}})
		hs := httptest.NewServer(srv)
		base = hs.URL
		return func() { hs.Close(); srv.Close(); kv.Close(); st.Close() }
	}
	stream := false
	history := strings.Repeat("the quick brown fox jumps over the lazy dog ", 25) // ~1,100 byte tokens
	// the prompt tokens computed are prompt_eval_count (the whole prompt)
	// less prompt_cached_count
	type answer struct {
		api.ChatResponse
		PromptCachedCount int `json:"prompt_cached_count"`
	}
	turn := func(msgs []api.Message) (answer, int) {
		body, err := json.Marshal(api.ChatRequest{Model: "tiny", Stream: &stream, Messages: msgs,
			Options: map[string]any{"temperature": 0, "num_predict": 4}})
		if err != nil {
			t.Fatal(err)
		}
		var resp answer
		postJSON(t, base+"/api/chat", string(body), &resp)
		return resp, resp.PromptEvalCount - resp.PromptCachedCount
	}
	stop := start()
	msgs := []api.Message{{Role: "user", Content: history}}
	first, computed1 := turn(msgs)
	stop() // unloads the model and writes the queue behind
	if computed1 < 1000 {
		t.Fatalf("turn 1 computed %d prompt tokens", computed1)
	}

	stop = start()
	defer stop()
	msgs = append(msgs, first.Message, api.Message{Role: "user", Content: "and then?"})
	second, computed2 := turn(msgs)
	// the new text (the answer and the next question, ~20 byte tokens) plus
	// the unfinished last block of turn 1 (< 16 tokens)
	if computed2 > 48 || second.PromptEvalCount < computed1 {
		t.Errorf("turn 2 after a restart computed %d of its %d prompt tokens; want only the new ones (< 48)", computed2, second.PromptEvalCount)
	}
	t.Logf("turn 1 computed %d prompt tokens; turn 2 after the restart %d of %d", computed1, computed2, second.PromptEvalCount)

	// /api/ps reports what is cached in memory and on disk
	var ps struct {
		Models []struct {
			CachedTokens int   `json:"cached_tokens"`
			StoredTokens int64 `json:"stored_tokens"`
		} `json:"models"`
	}
	resp, err := http.Get(base + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil || len(ps.Models) != 1 ||
		ps.Models[0].CachedTokens < 1000 || ps.Models[0].StoredTokens < 1000 {
		t.Errorf("ps: %v %+v", err, ps)
	}
}
