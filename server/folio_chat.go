package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/ollama/ollama/api"

	"folio/store"
)

// folioChatRequest is the body of POST /api/folio/conversations/{id}/chat:
// content alone appends a user message; regenerate replaces the last
// reply; edit with content rewrites that user message and drops what
// followed it. Each is then replied to.
type folioChatRequest struct {
	Content    *string `json:"content"`
	Regenerate bool    `json:"regenerate"`
	Edit       string  `json:"edit"`
}

// folioStart is the first line of a conversation's reply: the
// conversation (its title may have just been set) and the user message
// replied to.
type folioStart struct {
	Conversation folioSettings `json:"conversation"`
	UserMessage  folioMessage  `json:"user_message"`
}

// folioDone is the last line: /api/chat's final chunk, the ID of the
// saved reply, and how many of the cached prompt tokens were loaded from
// the persisted K/V (a conversation resumed after a restart).
type folioDone struct {
	chatResponse
	MessageID           string `json:"message_id"`
	PromptRestoredCount int    `json:"prompt_restored_count"`
}

// folioTurn is what a chat request does to a conversation: the messages
// the reply answers (history, ending with the user message) and the
// change of the store that makes them the conversation's (commit).
type folioTurn struct {
	history []store.Message
	commit  func(st *store.Registry, conv string) (store.Message, error)
}

// folioChat renders a conversation (system prompt and messages) with its
// model's template and options, replies on /api/chat's path (openChat,
// generate) and streams /api/chat's chunks between a first line and a
// last that say what was saved. The conversation changes only once the
// model is ready; the reply is saved when it ends, and also when the
// client goes away (the stop button), then marked stopped.
func (s *Server) folioChat(w http.ResponseWriter, r *http.Request) {
	st := s.conversations(w)
	if st == nil {
		return
	}
	var req folioChatRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	release, err := s.turns.begin(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	conv, msgs, err := st.Conversation(r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	turn, err := planTurn(req, msgs)
	if err != nil {
		writeError(w, err)
		return
	}
	chat := api.ChatRequest{Model: conv.Model, Options: optionsOf(conv)}
	noteModel(r, &chat)
	if conv.System != "" {
		chat.Messages = append(chat.Messages, api.Message{Role: "system", Content: conv.System})
	}
	for _, m := range turn.history {
		chat.Messages = append(chat.Messages, api.Message{Role: m.Role, Content: m.Content, Thinking: m.Thinking})
	}
	j, _ := s.openChat(w, r, chat)
	if j == nil {
		return
	}
	defer j.release()
	user, err := turn.commit(st, conv.ID)
	if err == nil && conv.Title == defaultTitle {
		if t := titleFrom(turn.history[0].Content); t != "" {
			conv.Title = t
			_, err = st.UpdateConversation(conv)
		}
	}
	if err == nil {
		conv, _, err = st.Conversation(conv.ID)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	out := newResponder(w, true)
	out.send(folioStart{settingsOf(conv), messageOf(user)})
	all, last, err := j.generate(r.Context(), nil, func(d ollamaDelta) {
		if !d.empty() {
			out.send(s.chatChunk(conv.Model, d))
		}
	})
	reply := store.Message{Role: "assistant", Content: all.content, Thinking: all.thinking, Stopped: !all.done}
	if all.cached != nil {
		reply.Stats = &store.ReplyStats{PromptTokens: all.metrics.PromptEvalCount, CachedTokens: *all.cached,
			RestoredTokens: all.restored, EvalTokens: all.metrics.EvalCount, EvalDuration: all.metrics.EvalDuration}
	}
	if !all.done && reply.Content == "" && reply.Thinking == "" { // stopped or failed before a word
		if err != nil {
			out.fail(err)
		}
		return
	}
	saved, serr := st.AddMessage(conv.ID, reply)
	if serr != nil && (err != nil || !all.done) { // the client hears of the first error only, or of none
		s.cfg.Log.Warn("folio: a reply cut short was not saved", "conversation", conv.ID, "err", serr)
	}
	switch {
	case err != nil:
		out.fail(err)
	case !all.done: // the client went away; its reply is kept
	case serr != nil:
		out.fail(serr)
	default:
		out.send(folioDone{s.chatChunk(conv.Model, last), saved.ID, all.restored})
	}
}

// planTurn is what req does to a conversation of msgs.
func planTurn(req folioChatRequest, msgs []store.Message) (folioTurn, error) {
	content := ""
	if req.Content != nil {
		content = *req.Content
	}
	switch {
	case req.Regenerate && (req.Content != nil || req.Edit != ""):
		return folioTurn{}, fmt.Errorf("%w: regenerate takes neither content nor edit: send {\"regenerate\": true} alone", errBadRequest)
	case req.Regenerate:
		last := -1
		for i, m := range msgs {
			if m.Role == "user" {
				last = i
			}
		}
		if last < 0 {
			return folioTurn{}, fmt.Errorf("%w: nothing to regenerate: the conversation has no user message", errBadRequest)
		}
		user := msgs[last]
		return folioTurn{history: msgs[:last+1], commit: func(st *store.Registry, conv string) (store.Message, error) {
			return user, st.TruncateAfter(conv, user.ID)
		}}, nil
	case strings.TrimSpace(content) == "":
		return folioTurn{}, fmt.Errorf("%w: content is empty: send {\"content\": \"...\"}, {\"regenerate\": true} or {\"edit\": \"<message id>\", \"content\": \"...\"}", errBadRequest)
	case req.Edit != "":
		for i, m := range msgs {
			if m.ID != req.Edit {
				continue
			}
			if m.Role != "user" {
				return folioTurn{}, fmt.Errorf("%w: message %q is the model's reply: only a user message can be edited (regenerate replaces a reply)", errBadRequest, m.ID)
			}
			m.Content = content
			return folioTurn{history: append(msgs[:i:i], m), commit: func(st *store.Registry, conv string) (store.Message, error) {
				return m, st.EditMessage(conv, m.ID, content)
			}}, nil
		}
		return folioTurn{}, fmt.Errorf("%w: message %q in this conversation", store.ErrNotFound, req.Edit)
	}
	user := store.Message{Role: "user", Content: content}
	return folioTurn{history: append(msgs[:len(msgs):len(msgs)], user), commit: func(st *store.Registry, conv string) (store.Message, error) {
		return st.AddMessage(conv, user)
	}}, nil
}

// turns are the conversations replying now, one reply at a time each: a
// chat request waits for the reply before it to be saved, so that a
// regenerate sent right after a stop replaces the stopped reply, not the
// one before it.
type turns struct {
	mu  sync.Mutex
	now map[string]*turn // by conversation ID
}

// turn is a reply in progress.
type turn struct {
	ctx  context.Context // its request's: ended when its client went away
	done chan struct{}   // closed once the reply is saved
}

// begin waits for the conversation's reply in progress, if any, and makes
// the caller's the one; release ends it. An error means ctx ended first.
func (ts *turns) begin(ctx context.Context, id string) (release func(), err error) {
	mine := &turn{ctx: ctx, done: make(chan struct{})}
	for {
		ts.mu.Lock()
		t := ts.now[id]
		if t == nil {
			if ts.now == nil {
				ts.now = map[string]*turn{}
			}
			ts.now[id] = mine
			ts.mu.Unlock()
			return func() {
				ts.mu.Lock()
				delete(ts.now, id)
				ts.mu.Unlock()
				close(mine.done)
			}, nil
		}
		ts.mu.Unlock()
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// settle waits, while ctx lasts, until a reply of the conversation whose
// client went away (stopped) is saved; a reply still streaming to its
// client is not waited for.
func (ts *turns) settle(ctx context.Context, id string) {
	ts.mu.Lock()
	t := ts.now[id]
	ts.mu.Unlock()
	if t == nil || t.ctx.Err() == nil {
		return
	}
	select {
	case <-t.done:
	case <-ctx.Done():
	}
}
