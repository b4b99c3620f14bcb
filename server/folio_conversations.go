package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"folio/store"
)

// The /api/folio/… endpoints keep the chat page's conversations in
// folio.db (Config.Conversations): list, create, read, change and delete
// them here, and reply in one with folioChat (folio_chat.go). They pass
// the guard as every route does, so a foreign web page can neither list
// nor read them.

// defaultTitle is a new conversation's title until its first message
// names it.
const defaultTitle = "New chat"

// titleRunes is how much of the first message a default title takes.
const titleRunes = 48

var errNoConversations = errors.New("this server keeps no conversations")

func (s *Server) folioRoutes() {
	m := s.mux
	m.HandleFunc("GET /api/folio/conversations", s.listConversations)
	m.HandleFunc("POST /api/folio/conversations", s.createConversation)
	m.HandleFunc("GET /api/folio/conversations/{id}", s.getConversation)
	m.HandleFunc("PATCH /api/folio/conversations/{id}", s.patchConversation)
	m.HandleFunc("DELETE /api/folio/conversations/{id}", s.deleteConversation)
	m.HandleFunc("POST /api/folio/conversations/{id}/chat", s.folioChat)
}

// folioSummary is a conversation in the list.
type folioSummary struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Model     string    `json:"model"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Messages  int       `json:"messages"` // how many
}

// folioSettings is a conversation without its messages.
type folioSettings struct {
	ID        string         `json:"id"`
	Title     string         `json:"title"`
	Model     string         `json:"model"`
	System    string         `json:"system"`
	Options   map[string]any `json:"options"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
}

// folioConversation is a conversation with its messages.
type folioConversation struct {
	folioSettings
	Messages []folioMessage `json:"messages"`
}

type folioMessage struct {
	ID        string      `json:"id"`
	Role      string      `json:"role"`
	Content   string      `json:"content"`
	Thinking  string      `json:"thinking,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	Stopped   bool        `json:"stopped,omitempty"`
	Stats     *folioStats `json:"stats,omitempty"`
}

// folioStats are a reply's figures, as /api/chat's final chunk has them.
type folioStats struct {
	PromptEvalCount   int `json:"prompt_eval_count"`   // the whole prompt
	PromptCachedCount int `json:"prompt_cached_count"` // of it, from the prefix cache
	// of those, loaded from the persisted K/V (after a restart)
	PromptRestoredCount int     `json:"prompt_restored_count"`
	EvalCount           int     `json:"eval_count"`
	EvalDuration        int64   `json:"eval_duration"` // ns
	TokensPerSecond     float64 `json:"tokens_per_second"`
}

// folioChange is the body of a create or a PATCH: the fields sent are set.
type folioChange struct {
	Title   *string        `json:"title"`
	Model   *string        `json:"model"`
	System  *string        `json:"system"`
	Options map[string]any `json:"options"` // the conversation's model options, as /api/chat's
}

// conversations is the store of conversations, or nil after answering 501.
func (s *Server) conversations(w http.ResponseWriter) *store.Registry {
	if s.cfg.Conversations == nil {
		writeError(w, fmt.Errorf("%w: %w: they live in folio.db in FOLIO_HOME, which this server was started without (folio serve opens it)",
			errNotImplemented, errNoConversations))
	}
	return s.cfg.Conversations
}

func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) {
	st := s.conversations(w)
	if st == nil {
		return
	}
	cs, err := st.Conversations(r.URL.Query().Get("q"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]folioSummary, 0, len(cs))
	for _, c := range cs {
		out = append(out, folioSummary{ID: c.ID, Title: c.Title, Model: c.Model,
			CreatedAt: c.Created.UTC(), UpdatedAt: c.Updated.UTC(), Messages: c.Messages})
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": out})
}

func (s *Server) createConversation(w http.ResponseWriter, r *http.Request) {
	st := s.conversations(w)
	if st == nil {
		return
	}
	var ch folioChange
	if err := decode(r, &ch); err != nil {
		writeError(w, err)
		return
	}
	if ch.Model == nil {
		writeError(w, fmt.Errorf("%w: model is required: name the model the conversation chats with", errBadRequest))
		return
	}
	c := store.Conversation{Title: defaultTitle}
	if err := ch.apply(&c); err != nil {
		writeError(w, err)
		return
	}
	c, err := st.CreateConversation(c)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, folioConversation{settingsOf(c), []folioMessage{}})
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request) {
	st := s.conversations(w)
	if st == nil {
		return
	}
	s.turns.settle(r.Context(), r.PathValue("id")) // a stopped reply is read saved
	c, ms, err := st.Conversation(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(c, ms))
}

func (s *Server) patchConversation(w http.ResponseWriter, r *http.Request) {
	st := s.conversations(w)
	if st == nil {
		return
	}
	var ch folioChange
	if err := decode(r, &ch); err != nil {
		writeError(w, err)
		return
	}
	c, _, err := st.Conversation(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	if err := ch.apply(&c); err != nil {
		writeError(w, err)
		return
	}
	if _, err := st.UpdateConversation(c); err != nil {
		writeError(w, err)
		return
	}
	c, ms, err := st.Conversation(c.ID)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, conversationOf(c, ms))
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) {
	st := s.conversations(w)
	if st == nil {
		return
	}
	if err := st.DeleteConversation(r.PathValue("id")); err != nil {
		writeError(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// apply sets the fields ch sends on c, refusing an empty title or model
// and options /api/chat would refuse.
func (ch folioChange) apply(c *store.Conversation) error {
	if ch.Title != nil {
		if strings.TrimSpace(*ch.Title) == "" {
			return fmt.Errorf("%w: title is empty: give the conversation a title", errBadRequest)
		}
		c.Title = *ch.Title
	}
	if ch.Model != nil {
		if strings.TrimSpace(*ch.Model) == "" {
			return fmt.Errorf("%w: model is empty: name the model the conversation chats with", errBadRequest)
		}
		c.Model = *ch.Model
	}
	if ch.System != nil {
		c.System = *ch.System
	}
	if ch.Options != nil {
		if _, _, err := options(ch.Options); err != nil {
			return err
		}
		data, err := json.Marshal(ch.Options)
		if err != nil {
			return fmt.Errorf("%w: options: %v", errBadRequest, err)
		}
		c.Options = string(data)
	}
	return nil
}

// optionsOf is a conversation's stored options; a store never written by
// apply has only objects there.
func optionsOf(c store.Conversation) map[string]any {
	o := map[string]any{}
	if c.Options != "" {
		json.Unmarshal([]byte(c.Options), &o)
	}
	return o
}

func settingsOf(c store.Conversation) folioSettings {
	return folioSettings{ID: c.ID, Title: c.Title, Model: c.Model, System: c.System, Options: optionsOf(c),
		CreatedAt: c.Created.UTC(), UpdatedAt: c.Updated.UTC()}
}

func conversationOf(c store.Conversation, ms []store.Message) folioConversation {
	out := folioConversation{settingsOf(c), make([]folioMessage, 0, len(ms))}
	for _, m := range ms {
		out.Messages = append(out.Messages, messageOf(m))
	}
	return out
}

func messageOf(m store.Message) folioMessage {
	out := folioMessage{ID: m.ID, Role: m.Role, Content: m.Content, Thinking: m.Thinking, CreatedAt: m.Created.UTC(), Stopped: m.Stopped}
	if st := m.Stats; st != nil {
		out.Stats = &folioStats{PromptEvalCount: st.PromptTokens, PromptCachedCount: st.CachedTokens,
			PromptRestoredCount: st.RestoredTokens, EvalCount: st.EvalTokens, EvalDuration: st.EvalDuration.Nanoseconds()}
		if st.EvalDuration > 0 {
			out.Stats.TokensPerSecond = float64(st.EvalTokens) / st.EvalDuration.Seconds()
		}
	}
	return out
}

// titleFrom is a default title made of the start of a first message:
// its words, at most titleRunes runes, cut at a space when one is near.
func titleFrom(text string) string {
	t := []rune(strings.Join(strings.Fields(text), " "))
	if len(t) <= titleRunes {
		return string(t)
	}
	t = t[:titleRunes]
	for i := len(t) - 1; i >= titleRunes/2; i-- {
		if t[i] == ' ' {
			t = t[:i]
			break
		}
	}
	return string(t) + "…"
}
