package server_test

import (
	"fmt"
	"net/http"
	"testing"
)

// TestFolioResumeAfterRestart is issue 25's "done when": a conversation of
// 20 turns, reopened after the server restarts on the same FOLIO_HOME,
// shows its first new reply's prompt at least 90% from cache. The
// conversation comes back from folio.db, renders to the tokens it had,
// and the persisted prefix K/V (kvcache.db) serves them; without it the
// new server would compute the whole prompt.
func TestFolioResumeAfterRestart(t *testing.T) {
	h := newFolioHome(t)
	base, stop := h.serve(t, true, nil)
	api := base + "/api/folio/conversations"
	var c folioConv
	folioDo(t, "POST", api, `{"model":"tiny-chat","system":"You answer questions about numbers.",`+
		`"options":{"temperature":0,"num_predict":8}}`, http.StatusCreated, &c)
	var last folioReply
	for turn := 1; turn <= 20; turn++ {
		last = folioChat(t, base, c.ID, fmt.Sprintf(`{"content":"Question %d: what comes after the number %d, and why?"}`, turn, turn*7))
	}
	stop() // models unloaded, their K/V written behind, both databases closed

	base, _ = h.serve(t, true, nil)
	api = base + "/api/folio/conversations"
	got := getConv(t, api, c.ID)
	if len(got.Messages) != 40 || got.Messages[39].ID != last.last.MessageID || got.Messages[39].Content != last.content {
		t.Fatalf("after the restart: %d messages, the last %+v; want 40 ending with %q", len(got.Messages), got.Messages[len(got.Messages)-1], last.content)
	}
	r := folioChat(t, base, c.ID, `{"content":"Question 21: and after that one?"}`)
	ratio := float64(r.last.PromptCachedCount) / float64(r.last.PromptEvalCount)
	t.Logf("turn 20: %d prompt tokens; turn 21 after the restart: %d of %d from cache (%.1f%%), %d of them from disk",
		last.last.PromptEvalCount, r.last.PromptCachedCount, r.last.PromptEvalCount, 100*ratio, r.last.PromptRestoredCount)
	if r.last.PromptEvalCount <= last.last.PromptEvalCount || ratio < 0.9 {
		t.Errorf("turn 21 after a restart: %d of %d prompt tokens from cache (%.1f%%), want >= 90%%",
			r.last.PromptCachedCount, r.last.PromptEvalCount, 100*ratio)
	}
	// the new server's cache started empty: all it reused came from disk;
	// before the restart all came from memory
	if r.last.PromptRestoredCount != r.last.PromptCachedCount || last.last.PromptRestoredCount != 0 {
		t.Errorf("restored from disk: %d of turn 21's %d cached tokens, %d of turn 20's; want all, none",
			r.last.PromptRestoredCount, r.last.PromptCachedCount, last.last.PromptRestoredCount)
	}
	if m := getConv(t, api, c.ID).Messages[41]; m.Stats == nil || m.Stats.PromptCachedCount != r.last.PromptCachedCount ||
		m.Stats.PromptEvalCount != r.last.PromptEvalCount || m.Stats.PromptRestoredCount != r.last.PromptRestoredCount {
		t.Errorf("saved figures %+v, the final chunk's %+v", m.Stats, r.last)
	}
}
