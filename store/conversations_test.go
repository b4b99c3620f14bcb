package store

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestConversations: create, list (newest updated first, filtered by
// title ignoring case), read, update, messages appended in order with
// their figures, edit and truncate, delete with its messages.
func TestConversations(t *testing.T) {
	clk := newClock()
	s := openRegistryTest(t, "", RegistryOptions{Now: clk.Now})
	a, err := s.CreateConversation(Conversation{Title: "Ärger mit Rust", Model: "m1", System: "be brief", Options: `{"seed":1}`})
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	b, err := s.CreateConversation(Conversation{Title: "Go generics", Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || len(a.ID) != 16 || b.Options != "{}" || !a.Created.Equal(clk.t.Add(-time.Second)) {
		t.Fatalf("created %+v and %+v", a, b)
	}
	titles := func(q string) []string {
		t.Helper()
		cs, err := s.Conversations(q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			out = append(out, c.Title)
		}
		return out
	}
	if got := titles(""); !slices.Equal(got, []string{"Go generics", "Ärger mit Rust"}) {
		t.Fatalf("list: %q", got)
	}
	if got := titles("äRGER"); !slices.Equal(got, []string{"Ärger mit Rust"}) { // non-ASCII folded too
		t.Fatalf("search äRGER: %q", got)
	}
	if got := titles("nothing"); len(got) != 0 {
		t.Fatalf("search nothing: %q", got)
	}

	clk.Add(time.Second)
	u, err := s.AddMessage(a.ID, Message{Role: "user", Content: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	st := &ReplyStats{PromptTokens: 30, CachedTokens: 16, RestoredTokens: 8, EvalTokens: 5, EvalDuration: 250 * time.Millisecond}
	r1, err := s.AddMessage(a.ID, Message{Role: "assistant", Content: "hello", Thinking: "greet", Stats: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMessage(a.ID, Message{Role: "user", Content: "more"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMessage(a.ID, Message{Role: "assistant", Content: "mo", Stopped: true}); err != nil {
		t.Fatal(err)
	}
	if got := titles(""); got[0] != "Ärger mit Rust" { // a message updates its conversation
		t.Fatalf("after a message: %q", got)
	}
	c, ms, err := s.Conversation(a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if c.Title != a.Title || c.System != "be brief" || c.Options != `{"seed":1}` || c.Messages != 4 || !c.Updated.Equal(clk.t) {
		t.Fatalf("conversation %+v", c)
	}
	if len(ms) != 4 || ms[0].ID != u.ID || ms[0].Stats != nil || ms[1].ID != r1.ID || ms[1].Thinking != "greet" ||
		*ms[1].Stats != *st || ms[2].Content != "more" || !ms[3].Stopped || ms[3].Stats != nil {
		t.Fatalf("messages %+v", ms)
	}

	if err := s.EditMessage(a.ID, ms[2].ID, "less"); err != nil {
		t.Fatal(err)
	}
	if _, ms, _ = s.Conversation(a.ID); len(ms) != 3 || ms[2].Content != "less" {
		t.Fatalf("after edit: %+v", ms)
	}
	if err := s.TruncateAfter(a.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	if _, ms, _ = s.Conversation(a.ID); len(ms) != 1 || ms[0].ID != u.ID {
		t.Fatalf("after truncate: %+v", ms)
	}
	if _, err := s.AddMessage(a.ID, Message{Role: "assistant", Content: "again"}); err != nil {
		t.Fatal(err)
	}
	if _, ms, _ = s.Conversation(a.ID); len(ms) != 2 || ms[1].Content != "again" {
		t.Fatalf("after a message past a truncation: %+v", ms)
	}

	a.Title, a.Model, a.System, a.Options = "renamed", "m3", "", `{"temperature":0.5}`
	if got, err := s.UpdateConversation(a); err != nil || got.Title != "renamed" || got.Model != "m3" || got.System != "" ||
		got.Options != `{"temperature":0.5}` || got.Messages != 2 {
		t.Fatalf("update: %+v, %v", got, err)
	}

	if err := s.DeleteConversation(a.ID); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.db.QueryRow("SELECT count(*) FROM messages").Scan(&left); err != nil || left != 0 {
		t.Fatalf("messages left after delete: %d, %v", left, err)
	}
	for name, err := range map[string]error{
		"read":     func() error { _, _, err := s.Conversation(a.ID); return err }(),
		"update":   func() error { _, err := s.UpdateConversation(a); return err }(),
		"delete":   s.DeleteConversation(a.ID),
		"add":      func() error { _, err := s.AddMessage(a.ID, Message{Role: "user"}); return err }(),
		"edit":     s.EditMessage(b.ID, "nope", "x"),
		"truncate": s.TruncateAfter(b.ID, "nope"),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of an unknown conversation or message: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := s.AddMessage(b.ID, Message{Role: "system", Content: "x"}); err == nil {
		t.Error("a message of role system was stored")
	}
}

// TestConversationsMigration: a folio.db of an older schema opens at the
// current one with what it held kept: schema 1 (models, no
// conversations), and schema 2 (conversations whose replies have no
// restored count).
func TestConversationsMigration(t *testing.T) {
	for _, from := range []int{1, 2} {
		home := t.TempDir()
		db, err := openDB(filepath.Join(home, registryFile), "FULL", 4096)
		if err != nil {
			t.Fatal(err)
		}
		if err := migrate(db, registryMigrations[:from]); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO models (name, created, modified) VALUES ('old:latest', 1, 1)`); err != nil {
			t.Fatal(err)
		}
		if from >= 2 {
			if _, err := db.Exec(`INSERT INTO conversations VALUES ('c1', 'kept', 'old:latest', 'sys', '{}', 1, 2);
				INSERT INTO messages (id, conversation, seq, role, content, prompt_tokens, cached_tokens, eval_tokens, eval_ns, created)
				VALUES ('m1', 'c1', 1, 'assistant', 'hello', 10, 4, 2, 5, 3)`); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		s := openRegistryTest(t, home, RegistryOptions{})
		if m, err := s.Model("old:latest"); err != nil || m.Name != "old:latest" {
			t.Fatalf("from schema %d: model %+v, %v", from, m, err)
		}
		var v int
		if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(registryMigrations) {
			t.Fatalf("from schema %d: user_version %d, %v; want %d", from, v, err, len(registryMigrations))
		}
		if from >= 2 {
			c, ms, err := s.Conversation("c1")
			if err != nil || c.Title != "kept" || len(ms) != 1 || ms[0].Content != "hello" ||
				*ms[0].Stats != (ReplyStats{PromptTokens: 10, CachedTokens: 4, EvalTokens: 2, EvalDuration: 5}) {
				t.Fatalf("from schema %d: %+v %+v %v", from, c, ms, err)
			}
		}
		if _, err := s.CreateConversation(Conversation{Title: "t", Model: "old:latest"}); err != nil {
			t.Fatal(err)
		}
	}
}
