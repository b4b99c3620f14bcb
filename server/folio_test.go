package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"folio/models/gguf"
	"folio/runner"
	"folio/server"
	"folio/store"
)

// chatTemplate is a plain chat template (no thinking) for tiny-qwen2's
// weights, as the conversation tests' "tiny-chat".
const chatTemplate = `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ '\n' }}{% endfor %}` +
	`{% if add_generation_prompt %}<|assistant|>{% endif %}`

// folioHome is a library of tiny-chat and tiny-think (tiny-qwen2's
// weights under chatTemplate and testTemplates' thinking one) and a
// FOLIO_HOME whose folio.db keeps the conversations and whose kvcache.db
// the persisted K/V.
type folioHome struct {
	lib, home string
}

func newFolioHome(t *testing.T) folioHome {
	t.Helper()
	h := folioHome{lib: t.TempDir(), home: t.TempDir()}
	for name, tmpl := range map[string]string{"tiny-chat": chatTemplate, "tiny-think": testTemplates["tiny-think"]} {
		writeTinyQwen2(t, filepath.Join(h.lib, name+".gguf"), func(w *gguf.Writer) { w.Set("tokenizer.chat_template", tmpl) })
	}
	return h
}

// serve starts a server over h (with the persisted K/V when kv) and
// returns its URL and a stop that closes it as folio serve does at exit:
// listener, models (their K/V written behind), kvcache.db, folio.db.
// Stop is idempotent and also runs at cleanup.
func (h folioHome) serve(t *testing.T, kv bool, edit func(*server.Config)) (string, func()) {
	t.Helper()
	st, err := store.OpenRegistry(h.home, store.RegistryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs, reg.Store = []string{h.lib}, st
	cfg := server.Config{Registry: reg, Conversations: st, Version: "test", Load: runner.LoadOptions{NumCtx: 4096}}
	var kvs *store.KVStore
	if kv {
		if kvs, err = store.OpenKV(h.home, store.KVOptions{}); err != nil {
			t.Fatal(err)
		}
		cfg.Store = kvs
	}
	if edit != nil {
		edit(&cfg)
	}
	srv := server.New(cfg)
	hs := httptest.NewServer(srv)
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		hs.Close()
		srv.Close()
		if kvs != nil {
			kvs.Close()
		}
		st.Close()
	}
	t.Cleanup(stop)
	return hs.URL, stop
}

// folioConv is a conversation as the API writes it.
type folioConv struct {
	ID        string         `json:"id"`
	Title     string         `json:"title"`
	Model     string         `json:"model"`
	System    string         `json:"system"`
	Options   map[string]any `json:"options"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	Messages  []folioMsg     `json:"messages"`
}

type folioMsg struct {
	ID        string    `json:"id"`
	Role      string    `json:"role"`
	Content   string    `json:"content"`
	Thinking  string    `json:"thinking"`
	CreatedAt time.Time `json:"created_at"`
	Stopped   bool      `json:"stopped"`
	Stats     *struct {
		PromptEvalCount     int     `json:"prompt_eval_count"`
		PromptCachedCount   int     `json:"prompt_cached_count"`
		PromptRestoredCount int     `json:"prompt_restored_count"`
		EvalCount           int     `json:"eval_count"`
		EvalDuration        int64   `json:"eval_duration"`
		TokensPerSecond     float64 `json:"tokens_per_second"`
	} `json:"stats"`
}

// folioReply is a reply's stream: its first line, its chunks, its last.
type folioReply struct {
	first struct {
		Conversation folioConv `json:"conversation"`
		UserMessage  folioMsg  `json:"user_message"`
	}
	lines             []map[string]any // every line after the first, as sent
	content, thinking string           // the chunks' message deltas joined
	last              struct {
		Done                bool   `json:"done"`
		DoneReason          string `json:"done_reason"`
		PromptEvalCount     int    `json:"prompt_eval_count"`
		PromptCachedCount   int    `json:"prompt_cached_count"`
		PromptRestoredCount int    `json:"prompt_restored_count"`
		EvalCount           int    `json:"eval_count"`
		EvalDuration        int64  `json:"eval_duration"`
		MessageID           string `json:"message_id"`
	}
}

// folioDo sends a request to the API and decodes a JSON answer of want
// into v (when not nil); it returns the status and the error text.
func folioDo(t *testing.T, method, u, body string, want int, v any) string {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s %s: %d %s, want %d", method, u, body, resp.StatusCode, data, want)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, u, err, data)
		}
	}
	return errorText(data)
}

// folioChat posts a chat request and reads its whole NDJSON stream.
func folioChat(t *testing.T, base, id, body string) folioReply {
	t.Helper()
	resp, err := http.Post(base+"/api/folio/conversations/"+id+"/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("chat %s: %d %s %s", body, resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	var r folioReply
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		if i == 0 {
			if err := json.Unmarshal(sc.Bytes(), &r.first); err != nil {
				t.Fatalf("first line %s: %v", sc.Bytes(), err)
			}
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %s: %v", sc.Bytes(), err)
		}
		if e, ok := m["error"]; ok {
			t.Fatalf("chat %s: error line %v", body, e)
		}
		r.lines = append(r.lines, m)
		msg, _ := m["message"].(map[string]any)
		c, _ := msg["content"].(string)
		th, _ := msg["thinking"].(string)
		r.content += c
		r.thinking += th
		json.Unmarshal(sc.Bytes(), &r.last)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if !r.last.Done || r.last.MessageID == "" {
		t.Fatalf("chat %s: the last line %+v is not done with a message_id", body, r.lines[len(r.lines)-1])
	}
	return r
}

// apiChatLines runs body on /api/chat, streaming, and returns its lines.
func apiChatLines(t *testing.T, base, body string) []map[string]any {
	t.Helper()
	status, ctype, data := post(t, base+"/api/chat", body)
	if status != http.StatusOK || ctype != "application/x-ndjson" {
		t.Fatalf("/api/chat %s: %d %s %s", body, status, ctype, data)
	}
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	return lines
}

func keysOf(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func joinContent(lines []map[string]any) string {
	var b strings.Builder
	for _, l := range lines {
		msg, _ := l["message"].(map[string]any)
		s, _ := msg["content"].(string)
		b.WriteString(s)
	}
	return b.String()
}

// TestFolioConversations: every endpoint and field of /api/folio's
// conversations: create (title default, system, options), list (newest
// first, q), read, rename and change, chat (the first line, /api/chat's
// chunks, the final chunk with message_id; the reply equals /api/chat's
// for the same messages and options, and is saved with its figures), the
// title taken from the first message, regenerate, edit-and-resend and
// delete.
func TestFolioConversations(t *testing.T) {
	base, _ := newFolioHome(t).serve(t, false, nil)
	api := base + "/api/folio/conversations"
	opts := `{"temperature":0,"num_predict":6,"seed":7}`

	var a folioConv
	folioDo(t, "POST", api, `{"model":"tiny-chat","system":"You are terse.","options":`+opts+`}`, http.StatusCreated, &a)
	if a.ID == "" || a.Title != "New chat" || a.Model != "tiny-chat" || a.System != "You are terse." ||
		a.Options["temperature"] != 0.0 || a.Options["num_predict"] != 6.0 || a.Options["seed"] != 7.0 ||
		a.CreatedAt.IsZero() || !a.UpdatedAt.Equal(a.CreatedAt) || a.Messages == nil || len(a.Messages) != 0 {
		t.Fatalf("created %+v", a)
	}
	var b folioConv
	folioDo(t, "POST", api, `{"model":"tiny-think","title":"Thoughts on Go"}`, http.StatusCreated, &b)
	if b.Title != "Thoughts on Go" || b.System != "" || len(b.Options) != 0 {
		t.Fatalf("created %+v", b)
	}

	// the first reply: the conversation is named after the message
	question := "What is the capital of France, and why is it called that way today?"
	r := folioChat(t, base, a.ID, `{"content":"`+question+`"}`)
	if r.first.Conversation.ID != a.ID || r.first.Conversation.Title != "What is the capital of France, and why is it…" ||
		r.first.Conversation.Messages != nil || r.first.UserMessage.Role != "user" || r.first.UserMessage.Content != question ||
		r.first.UserMessage.ID == "" || r.first.UserMessage.CreatedAt.IsZero() {
		t.Fatalf("first line %+v", r.first)
	}
	// the same messages on /api/chat give the same chunks, field for field
	ref := apiChatLines(t, base, `{"model":"tiny-chat","options":`+opts+`,"messages":[`+
		`{"role":"system","content":"You are terse."},{"role":"user","content":"`+question+`"}]}`)
	if want := joinContent(ref); r.content != want || want == "" {
		t.Errorf("reply %q, /api/chat's %q", r.content, want)
	}
	if len(r.lines) < 2 || !slices.Equal(keysOf(r.lines[0]), keysOf(ref[0])) {
		t.Errorf("chunk fields %v, /api/chat's %v", keysOf(r.lines[0]), keysOf(ref[0]))
	}
	last, refLast := r.lines[len(r.lines)-1], ref[len(ref)-1]
	if got, want := keysOf(last), append(keysOf(refLast), "message_id", "prompt_restored_count"); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("final chunk fields %v, want /api/chat's, message_id and prompt_restored_count: %v", got, want)
	}
	if r.last.DoneReason != "length" || r.last.EvalCount != 6 || r.last.PromptEvalCount < 20 || r.last.EvalDuration <= 0 ||
		r.last.PromptRestoredCount != 0 {
		t.Errorf("final chunk %+v", r.last)
	}

	got := getConv(t, api, a.ID)
	if len(got.Messages) != 2 || got.Messages[0].ID != r.first.UserMessage.ID || got.Messages[0].Stats != nil ||
		got.Messages[1].ID != r.last.MessageID || got.Messages[1].Role != "assistant" || got.Messages[1].Content != r.content ||
		got.Messages[1].Stopped || got.Messages[1].Thinking != "" {
		t.Fatalf("after a reply: %+v", got.Messages)
	}
	st := got.Messages[1].Stats
	if st == nil || st.PromptEvalCount != r.last.PromptEvalCount || st.PromptCachedCount != r.last.PromptCachedCount || st.PromptRestoredCount != 0 ||
		st.EvalCount != 6 || st.EvalDuration != r.last.EvalDuration || st.TokensPerSecond <= 0 ||
		!approx(st.TokensPerSecond, 6/(float64(st.EvalDuration)/1e9)) {
		t.Errorf("reply stats %+v (final chunk %+v)", st, r.last)
	}
	if !got.UpdatedAt.After(a.UpdatedAt) || got.Title != r.first.Conversation.Title {
		t.Errorf("conversation after a reply: %+v", got)
	}

	// a second turn: the first reply's prompt is the prefix cache's
	r2 := folioChat(t, base, a.ID, `{"content":"And of Italy?"}`)
	if r2.last.PromptCachedCount < r.last.PromptEvalCount/16*16 || r2.first.Conversation.Title != r.first.Conversation.Title {
		t.Errorf("turn 2: %d of %d prompt tokens cached, want at least turn 1's full blocks (%d); title %q",
			r2.last.PromptCachedCount, r2.last.PromptEvalCount, r.last.PromptEvalCount, r2.first.Conversation.Title)
	}
	got = getConv(t, api, a.ID)
	if len(got.Messages) != 4 {
		t.Fatalf("after two turns: %d messages", len(got.Messages))
	}

	// regenerate: the last reply is replaced, the user message kept
	rg := folioChat(t, base, a.ID, `{"regenerate":true}`)
	after := getConv(t, api, a.ID)
	if rg.first.UserMessage.ID != got.Messages[2].ID || len(after.Messages) != 4 || after.Messages[3].ID != rg.last.MessageID ||
		after.Messages[3].ID == got.Messages[3].ID || after.Messages[3].Content != rg.content {
		t.Fatalf("regenerate: first %+v, messages %+v", rg.first, after.Messages)
	}

	// edit-and-resend of the first message: what followed it is gone
	ed := folioChat(t, base, a.ID, `{"edit":"`+got.Messages[0].ID+`","content":"Hello there"}`)
	after = getConv(t, api, a.ID)
	if ed.first.UserMessage.ID != got.Messages[0].ID || ed.first.UserMessage.Content != "Hello there" || len(after.Messages) != 2 ||
		after.Messages[0].Content != "Hello there" || after.Messages[1].ID != ed.last.MessageID || after.Messages[1].Content != ed.content {
		t.Fatalf("edit: first %+v, messages %+v", ed.first, after.Messages)
	}
	if want := joinContent(apiChatLines(t, base, `{"model":"tiny-chat","options":`+opts+`,"messages":[`+
		`{"role":"system","content":"You are terse."},{"role":"user","content":"Hello there"}]}`)); ed.content != want {
		t.Errorf("edited reply %q, /api/chat's %q", ed.content, want)
	}

	// a thinking model: the thought is kept apart from the answer
	folioDo(t, "PATCH", api+"/"+b.ID, `{"options":{"num_predict":12,"temperature":0}}`, http.StatusOK, nil)
	th := folioChat(t, base, b.ID, `{"content":"answer in JSON"}`)
	got = getConv(t, api, b.ID)
	if th.thinking == "" || len(got.Messages) != 2 || got.Messages[1].Thinking != th.thinking || got.Messages[1].Content != th.content ||
		got.Title != "Thoughts on Go" {
		t.Fatalf("thinking reply: streamed %q / %q, saved %+v, title %q", th.thinking, th.content, got.Messages, got.Title)
	}

	// list: newest updated first, q filters titles ignoring case
	var list struct {
		Conversations []struct {
			ID        string    `json:"id"`
			Title     string    `json:"title"`
			Model     string    `json:"model"`
			CreatedAt time.Time `json:"created_at"`
			UpdatedAt time.Time `json:"updated_at"`
			Messages  int       `json:"messages"`
		} `json:"conversations"`
	}
	folioDo(t, "GET", api, "", http.StatusOK, &list)
	if len(list.Conversations) != 2 || list.Conversations[0].ID != b.ID || list.Conversations[0].Messages != 2 ||
		list.Conversations[0].Model != "tiny-think" || list.Conversations[1].ID != a.ID || list.Conversations[1].Messages != 2 ||
		list.Conversations[1].CreatedAt.IsZero() || list.Conversations[1].UpdatedAt.Before(list.Conversations[1].CreatedAt) {
		t.Fatalf("list %+v", list)
	}
	folioDo(t, "GET", api+"?q=CAPITAL", "", http.StatusOK, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != a.ID {
		t.Fatalf("search CAPITAL: %+v", list)
	}

	// rename and change: the fields sent, and only those
	got = folioConv{}
	folioDo(t, "PATCH", api+"/"+a.ID, `{"title":"Capitals"}`, http.StatusOK, &got)
	if got.Title != "Capitals" || got.System != "You are terse." || got.Options["seed"] != 7.0 || len(got.Messages) != 2 {
		t.Fatalf("rename: %+v", got)
	}
	got = folioConv{}
	folioDo(t, "PATCH", api+"/"+a.ID, `{"model":"tiny-think","system":"","options":{"num_ctx":1024}}`, http.StatusOK, &got)
	if got.Title != "Capitals" || got.Model != "tiny-think" || got.System != "" || len(got.Options) != 1 || got.Options["num_ctx"] != 1024.0 {
		t.Fatalf("change: %+v", got)
	}
	folioDo(t, "GET", api+"?q=capitals", "", http.StatusOK, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != a.ID || list.Conversations[0].Title != "Capitals" {
		t.Fatalf("search after rename: %+v", list)
	}

	folioDo(t, "DELETE", api+"/"+a.ID, "", http.StatusNoContent, nil)
	folioDo(t, "GET", api+"/"+a.ID, "", http.StatusNotFound, nil)
	folioDo(t, "GET", api, "", http.StatusOK, &list)
	if len(list.Conversations) != 1 || list.Conversations[0].ID != b.ID {
		t.Fatalf("after delete: %+v", list)
	}
}

// getConv reads a conversation.
func getConv(t *testing.T, api, id string) folioConv {
	t.Helper()
	var c folioConv
	folioDo(t, "GET", api+"/"+id, "", http.StatusOK, &c)
	return c
}

func approx(a, b float64) bool { return a > b*0.999 && a < b*1.001 }

// TestFolioErrors: unknown conversations and messages are 404, bad JSON,
// a missing model, bad options, an empty message, an edit of a reply and
// a regenerate of nothing are 400 with what to change, and none of them
// changes the conversation. A server without folio.db answers 501.
func TestFolioErrors(t *testing.T) {
	base, _ := newFolioHome(t).serve(t, false, nil)
	api := base + "/api/folio/conversations"
	var c folioConv
	folioDo(t, "POST", api, `{"model":"tiny-chat","options":{"num_predict":2}}`, http.StatusCreated, &c)
	for _, tc := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{"GET", "/nope", "", 404, `conversation "nope"`},
		{"PATCH", "/nope", `{"title":"x"}`, 404, `conversation "nope"`},
		{"DELETE", "/nope", "", 404, `conversation "nope"`},
		{"POST", "/nope/chat", `{"content":"hi"}`, 404, `conversation "nope"`},
		{"POST", "", `{"model":`, 400, "request JSON"},
		{"POST", "", ``, 400, "empty request body"},
		{"POST", "", `{"title":"no model"}`, 400, "model is required"},
		{"POST", "", `{"model":""}`, 400, "model is empty"},
		{"POST", "", `{"model":"tiny-chat","options":{"temperature":"hot"}}`, 400, "temperature"},
		{"POST", "", `{"model":"tiny-chat","options":{"num_ctx":-1}}`, 400, "num_ctx"},
		{"PATCH", "/" + c.ID, `{"title":`, 400, "request JSON"},
		{"PATCH", "/" + c.ID, `{"title":"  "}`, 400, "title is empty"},
		{"PATCH", "/" + c.ID, `{"options":{"top_p":"x"}}`, 400, "top_p"},
		{"POST", "/" + c.ID + "/chat", `{"content":`, 400, "request JSON"},
		{"POST", "/" + c.ID + "/chat", `{"content":" "}`, 400, "content is empty"},
		{"POST", "/" + c.ID + "/chat", `{}`, 400, "content is empty"},
		{"POST", "/" + c.ID + "/chat", `{"regenerate":true}`, 400, "nothing to regenerate"},
		{"POST", "/" + c.ID + "/chat", `{"regenerate":true,"content":"x"}`, 400, "regenerate takes neither"},
		{"POST", "/" + c.ID + "/chat", `{"edit":"nope","content":"x"}`, 404, `message "nope"`},
	} {
		if msg := folioDo(t, tc.method, api+tc.path, tc.body, tc.status, nil); !strings.Contains(msg, tc.says) {
			t.Errorf("%s %s %s: error %q, want it to say %q", tc.method, tc.path, tc.body, msg, tc.says)
		}
	}
	r := folioChat(t, base, c.ID, `{"content":"hi"}`)
	if msg := folioDo(t, "POST", api+"/"+c.ID+"/chat", `{"edit":"`+r.last.MessageID+`","content":"x"}`, 400, nil); !strings.Contains(msg, "only a user message can be edited") {
		t.Errorf("edit of a reply: %q", msg)
	}
	// a model that is not there: 404, and the message is not kept
	folioDo(t, "PATCH", api+"/"+c.ID, `{"model":"missing"}`, http.StatusOK, nil)
	folioDo(t, "POST", api+"/"+c.ID+"/chat", `{"content":"lost?"}`, http.StatusNotFound, nil)
	got := getConv(t, api, c.ID)
	if len(got.Messages) != 2 || got.Title != "hi" || got.Model != "missing" {
		t.Fatalf("after the errors: %+v", got)
	}

	bare, _ := newFolioHome(t).serve(t, false, func(cfg *server.Config) { cfg.Conversations = nil })
	if msg := folioDo(t, "GET", bare+"/api/folio/conversations", "", http.StatusNotImplemented, nil); !strings.Contains(msg, "folio.db") {
		t.Errorf("without folio.db: %q", msg)
	}
}

// TestFolioStop: a client that goes away mid-reply (the page's stop
// button aborts its fetch) leaves the reply as far as it was sent, saved
// with stopped: true, and the conversation goes on from it. (A reader
// slower than the engine, stopped after the engine finished, keeps what it
// was sent too: TestLooksInBrowser.)
func TestFolioStop(t *testing.T) {
	base, _ := newFolioHome(t).serve(t, false, nil)
	api := base + "/api/folio/conversations"
	var c folioConv
	folioDo(t, "POST", api, `{"model":"tiny-chat","options":{"num_predict":3000,"temperature":0}}`, http.StatusCreated, &c)

	seen := stopChat(t, api, c.ID, `{"content":"tell me a long story"}`, nil)
	var got folioConv
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = getConv(t, api, c.ID)
		if len(got.Messages) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(got.Messages) != 2 {
		t.Fatalf("the stopped reply was not saved: %+v", got.Messages)
	}
	m := got.Messages[1]
	if m.Role != "assistant" || !m.Stopped || !strings.HasPrefix(m.Content, seen) {
		t.Fatalf("stopped reply %+v, want stopped and starting with what streamed (%q)", m, seen)
	}
	if m.Stats != nil && m.Stats.EvalCount >= 3000 {
		t.Errorf("the stopped reply ran to its end: %+v", m.Stats)
	}
	t.Logf("stopped after %d bytes streamed; %d saved", len(seen), len(m.Content))

	// the next turn answers the conversation with the stopped reply in it
	folioDo(t, "PATCH", api+"/"+c.ID, `{"options":{"num_predict":2}}`, http.StatusOK, nil)
	r := folioChat(t, base, c.ID, `{"content":"go on"}`)
	got = getConv(t, api, c.ID)
	if len(got.Messages) != 4 || got.Messages[1].Content != m.Content || got.Messages[3].ID != r.last.MessageID || got.Messages[3].Stopped {
		t.Fatalf("after the stop: %+v", got.Messages)
	}

	// regenerate sent at once after a stop replaces the stopped reply:
	// it waits for that reply to be saved
	folioDo(t, "PATCH", api+"/"+c.ID, `{"options":{"num_predict":3000,"temperature":0}}`, http.StatusOK, nil)
	stopChat(t, api, c.ID, `{"content":"another long one"}`, func() {
		folioDo(t, "PATCH", api+"/"+c.ID, `{"options":{"num_predict":2,"temperature":0}}`, http.StatusOK, nil)
	})
	rg := folioChat(t, base, c.ID, `{"regenerate":true}`)
	got = getConv(t, api, c.ID)
	if len(got.Messages) != 6 || got.Messages[4].Content != "another long one" || got.Messages[5].ID != rg.last.MessageID ||
		got.Messages[5].Stopped || got.Messages[5].Stats.EvalCount != 2 {
		t.Fatalf("regenerate right after a stop: %+v", got.Messages)
	}
}

// stopChat starts a chat request, reads its first line and three chunks,
// calls during (when not nil), and aborts the request as the page's stop
// button does; it returns the text streamed.
func stopChat(t *testing.T, api, id, body string, during func()) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", api+"/"+id+"/chat", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var seen string
	for n := 0; n < 4 && sc.Scan(); n++ {
		var l struct {
			Message struct{ Content string }
			Done    bool
		}
		json.Unmarshal(sc.Bytes(), &l)
		if l.Done {
			t.Fatal("the reply ended before it was stopped")
		}
		seen += l.Message.Content
	}
	if during != nil {
		during()
	}
	if seen == "" {
		t.Fatal("no text before the stop")
	}
	return seen
}

// TestFolioGuard: a page of another origin can neither list, read,
// change nor chat in conversations (403, and no CORS header to read an
// answer by) unless FOLIO_ORIGINS names it; a page that rebinds its own
// name to the loopback server (a foreign Host) is refused too. The page
// served by this host (same origin) and clients without an Origin pass.
func TestFolioGuard(t *testing.T) {
	h := newFolioHome(t)
	base, stop := h.serve(t, false, nil)
	api := base + "/api/folio/conversations"
	var c folioConv
	folioDo(t, "POST", api, `{"model":"tiny-chat","title":"private"}`, http.StatusCreated, &c)
	host := strings.TrimPrefix(base, "http://")
	type check struct{ method, path, body string }
	checks := []check{
		{"GET", "", ""}, {"GET", "?q=private", ""}, {"GET", "/" + c.ID, ""}, {"POST", "", `{"model":"tiny-chat"}`},
		{"PATCH", "/" + c.ID, `{"title":"mine"}`}, {"DELETE", "/" + c.ID, ""}, {"POST", "/" + c.ID + "/chat", `{"content":"hi"}`},
	}
	for _, k := range checks {
		for name, hdr := range map[string]map[string]string{
			"foreign origin": {"Origin": "https://evil.example"},
			"rebound host":   {"Host": "evil.example:" + strings.Split(host, ":")[1]},
		} {
			status, header, msg := call(t, k.method, api+k.path, k.body, hdr)
			if status != http.StatusForbidden || header.Get("Access-Control-Allow-Origin") != "" || strings.Contains(msg, "private") {
				t.Errorf("%s %s from a %s: %d %q, CORS %q; want 403", k.method, k.path, name, status, msg, header.Get("Access-Control-Allow-Origin"))
			}
		}
	}
	if got := getConv(t, api, c.ID); got.Title != "private" || len(got.Messages) != 0 {
		t.Fatalf("refused requests changed the conversation: %+v", got)
	}
	for _, hdr := range []map[string]string{{"Origin": base}, {"Origin": "http://localhost:1234"}, nil} {
		if status, _, _ := call(t, "GET", api+"/"+c.ID, "", hdr); status != http.StatusOK {
			t.Errorf("GET with %v: %d, want 200", hdr, status)
		}
	}
	stop()

	// FOLIO_ORIGINS opens them to the origin it names
	base, _ = h.serve(t, false, func(cfg *server.Config) { cfg.Origins = []string{"https://chat.example"} })
	api = base + "/api/folio/conversations"
	status, header, _ := call(t, "GET", api+"/"+c.ID, "", map[string]string{"Origin": "https://chat.example"})
	if status != http.StatusOK || header.Get("Access-Control-Allow-Origin") != "https://chat.example" {
		t.Errorf("GET from an origin of FOLIO_ORIGINS: %d, CORS %q", status, header.Get("Access-Control-Allow-Origin"))
	}
	if status, _, _ := call(t, "GET", api, "", map[string]string{"Origin": "https://evil.example"}); status != http.StatusForbidden {
		t.Errorf("list from another origin: %d, want 403", status)
	}
}
