package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	if err := checkRequest(req.Model, nil, req.Think); err != nil {
		writeError(w, err)
		return
	}
	if len(req.Messages) == 0 && unloading(req.KeepAlive) {
		if err := s.models.unload(r.Context(), req.Model); err != nil {
			writeError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, api.ChatResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(),
			Message: api.Message{Role: "assistant"}, Done: true, DoneReason: "unload"})
		return
	}
	for i, m := range req.Messages {
		if len(m.Images) > 0 {
			writeError(w, fmt.Errorf("%w: message %d has images: folio runs text models only", errBadRequest, i))
			return
		}
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			writeError(w, fmt.Errorf("%w: message %d has role %q: use system, user, assistant or tool", errBadRequest, i, m.Role))
			return
		}
	}
	format, err := s.compileFormat(r.Context(), req.Model, req.Format, "format")
	if err != nil {
		writeError(w, err)
		return
	}
	conf, err := s.modelConf(req.Model)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, sample, err := conf.options(req.Options)
	if err != nil {
		writeError(w, err)
		return
	}
	start := time.Now()
	l, release, err := s.models.acquire(r.Context(), req.Model, keepAlive(req.KeepAlive))
	if err != nil {
		writeError(w, err)
		return
	}
	defer release()
	loaded := time.Now()
	if len(req.Messages) == 0 { // a load request
		writeJSON(w, http.StatusOK, api.ChatResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(),
			Message: api.Message{Role: "assistant"}, Done: true, DoneReason: "load"})
		return
	}
	p := &chatPrompt{s: s, ctx: r.Context(), l: l, conf: conf, tools: req.Tools, think: req.Think}
	text, ids, err := p.fit(conf.chatMessages(req.Messages), newWindow(l, opts, req.Truncate))
	if err != nil {
		writeError(w, err)
		return
	}
	if req.DebugRenderOnly {
		writeJSON(w, http.StatusOK, api.ChatResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Done: true,
			Message: api.Message{Role: "assistant"}, DebugInfo: &api.DebugInfo{RenderedTemplate: text}})
		return
	}
	c := &completion{model: l, opts: opts, sample: sample, n: 1, logprobs: req.Logprobs, topLog: req.TopLogprobs,
		format: format, ids: ids}
	c.thinking, c.parseThink = thinkState(text, req.Think)
	st, err := c.start(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	defer st.Cancel()
	out := newResponder(w, streamFlag(req.Stream))
	think := newThinkSplitter(c.thinking, c.parseThink)
	calls := newToolStream(l, conf, req.Tools)
	var content, thinking strings.Builder
	var lps []api.Logprob
	var toolCalls []api.ToolCall
	var cached *int
	for {
		ev, ok := st.Recv(r.Context())
		if !ok {
			return
		}
		resp := api.ChatResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Message: api.Message{Role: "assistant"}}
		resp.Message.Content, resp.Message.Thinking = think.add(ev.Text)
		resp.Message.Content, resp.Message.ToolCalls = calls.add(resp.Message.Content)
		if ev.Logprob != nil {
			resp.Logprobs = []api.Logprob{ollamaLogprob(l.model.Tok, ev.Logprob)}
		}
		if ev.Done {
			if ev.Err != nil {
				out.fail(ev.Err)
				return
			}
			c2, t2 := think.flush()
			c2, more := calls.add(c2)
			resp.Message.Content += c2 + calls.flush()
			resp.Message.Thinking += t2
			resp.Message.ToolCalls = append(resp.Message.ToolCalls, more...)
			resp.Done, resp.DoneReason = true, ev.Reason
			resp.Metrics, cached = metrics(ev.Stats, start, loaded)
		}
		if out.stream {
			m := resp.Message
			if m.Content != "" || m.Thinking != "" || len(m.ToolCalls) > 0 || resp.Logprobs != nil || resp.Done {
				out.send(chatResponse{resp, cached})
			}
		} else {
			content.WriteString(resp.Message.Content)
			thinking.WriteString(resp.Message.Thinking)
			toolCalls = append(toolCalls, resp.Message.ToolCalls...)
			lps = append(lps, resp.Logprobs...)
		}
		if ev.Done {
			if !out.stream {
				resp.Message.Content, resp.Message.Thinking, resp.Logprobs = content.String(), thinking.String(), lps
				resp.Message.ToolCalls = toolCalls
				out.send(chatResponse{resp, cached})
			}
			return
		}
	}
}

// render turns messages into the model's prompt text with a chat
// template: tmpl from the request, else the template of the model's
// manifest, else the GGUF file's; each in Ollama's Go syntax or in Jinja
// (gotemplate.go). A model without any gets the messages' contents, system
// first, separated by blank lines, and templated false. The end of ctx (the
// request's) stops the template.
func (s *Server) render(ctx context.Context, l *loaded, conf modelConf, tmpl string, msgs []api.Message, tools api.Tools,
	think *api.ThinkValue) (text string, templated bool, err error) {
	fromRequest := tmpl != ""
	if tmpl == "" {
		tmpl = conf.Template
	}
	if tmpl == "" {
		tmpl = l.template
	}
	if tmpl == "" {
		var parts []string
		for _, m := range msgs {
			if m.Content != "" {
				parts = append(parts, m.Content)
			}
		}
		return strings.Join(parts, "\n\n"), false, nil
	}
	if tmpl != l.template {
		gt, ok, err := goTemplate(tmpl, fromRequest)
		if err != nil {
			return "", true, err
		}
		if ok {
			text, err := renderGo(ctx, gt, msgs, tools, think)
			return text, true, err
		}
	}
	text, err = renderTemplate(ctx, l, tmpl, msgs, tools, think)
	return text, true, err
}

// thinkState says, from the rendered prompt and the request's think
// option, whether generation starts inside a <think> block and whether
// <think> blocks are split out of the text at all.
func thinkState(prompt string, think *api.ThinkValue) (inside, parse bool) {
	if think == nil {
		return false, false
	}
	if b, ok := think.Value.(bool); ok && !b {
		return false, false
	}
	trimmed := strings.TrimRight(prompt, " \n")
	return strings.HasSuffix(trimmed, "<think>"), true
}

// thinkSplitter separates <think>…</think> from the answer in streamed
// text, holding back what may be the start of a tag.
type thinkSplitter struct {
	inside, parse, seen bool
	held                string
}

func newThinkSplitter(inside, parse bool) *thinkSplitter {
	return &thinkSplitter{inside: inside, parse: parse}
}

// add returns the answer text and the thinking text that are final.
func (t *thinkSplitter) add(text string) (content, thinking string) {
	if !t.parse {
		return text, ""
	}
	t.held += text
	var c, th strings.Builder
	for {
		tag := "<think>"
		if t.inside {
			tag = "</think>"
		}
		i := strings.Index(t.held, tag)
		if i < 0 {
			keep := partialSuffix(t.held, tag)
			emit := t.held[:len(t.held)-keep]
			t.held = t.held[len(t.held)-keep:]
			t.write(&c, &th, emit)
			return c.String(), th.String()
		}
		t.write(&c, &th, t.held[:i])
		t.held = t.held[i+len(tag):]
		if t.inside {
			t.held = strings.TrimLeft(t.held, "\n")
		}
		t.inside = !t.inside
		t.seen = true
	}
}

func (t *thinkSplitter) write(c, th *strings.Builder, s string) {
	if t.inside {
		th.WriteString(s)
	} else {
		c.WriteString(s)
	}
}

func (t *thinkSplitter) flush() (content, thinking string) {
	var c, th strings.Builder
	t.write(&c, &th, t.held)
	t.held = ""
	return c.String(), th.String()
}

// partialSuffix is the length of the longest end of s that begins tag.
func partialSuffix(s, tag string) int {
	for k := min(len(tag)-1, len(s)); k > 0; k-- {
		if strings.HasSuffix(s, tag[:k]) {
			return k
		}
	}
	return 0
}
