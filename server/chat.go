package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if err := decode(r, &req); err != nil {
		writeError(w, err)
		return
	}
	j, text := s.openChat(w, r, req)
	if j == nil {
		return
	}
	defer j.release()
	if req.DebugRenderOnly {
		writeJSON(w, http.StatusOK, api.ChatResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Done: true,
			Message: api.Message{Role: "assistant"}, DebugInfo: &api.DebugInfo{RenderedTemplate: text}})
		return
	}
	j.run(r.Context(), w, streamFlag(req.Stream), newToolStream(j.l, j.conf, req.Tools), func(d ollamaDelta) any {
		return s.chatChunk(req.Model, d)
	})
}

// openChat checks a chat request, holds its model and renders its
// messages into the job's prompt (ids and thinking split set), fitted to
// the context window; it returns the job and the prompt's text. When it
// answers the request itself (an error, a load or an unload) the job is
// nil. /api/chat and /api/folio's conversations share it.
func (s *Server) openChat(w http.ResponseWriter, r *http.Request, req api.ChatRequest) (*ollamaJob, string) {
	if err := checkRequest(req.Model, nil, req.Think); err != nil {
		writeError(w, err)
		return nil, ""
	}
	for i, m := range req.Messages {
		if len(m.Images) > 0 {
			writeError(w, fmt.Errorf("%w: message %d has images: folio runs text models only", errBadRequest, i))
			return nil, ""
		}
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			writeError(w, fmt.Errorf("%w: message %d has role %q: use system, user, assistant or tool", errBadRequest, i, m.Role))
			return nil, ""
		}
	}
	j := s.openOllama(w, r, ollamaRequest{endpoint: "chat", model: req.Model, options: req.Options, format: req.Format, keepAlive: req.KeepAlive,
		tools: req.Tools, think: req.Think, noPrompt: len(req.Messages) == 0}, func(reason string) any {
		return api.ChatResponse{Model: req.Model, CreatedAt: s.cfg.Now().UTC(), Message: api.Message{Role: "assistant"}, Done: true, DoneReason: reason}
	})
	if j == nil {
		return nil, ""
	}
	p := &chatPrompt{s: s, ctx: r.Context(), l: j.l, conf: j.conf, tools: req.Tools, think: j.think, caps: j.caps, constrained: j.c.format != nil}
	text, ids, err := p.fit(j.conf.chatMessages(req.Messages), newWindow(j.l, j.c.opts, req.Truncate))
	if err != nil {
		j.release()
		writeError(w, err)
		return nil, ""
	}
	j.c.ids, j.c.logprobs, j.c.topLog = ids, req.Logprobs, req.TopLogprobs
	j.c.thinkSplit = thinkState(text, j.think, j.caps)
	return j, text
}

// chatChunk is /api/chat's answer object for a delta of model's reply.
func (s *Server) chatChunk(model string, d ollamaDelta) chatResponse {
	resp := api.ChatResponse{Model: model, CreatedAt: s.cfg.Now().UTC(), Logprobs: d.logprobs,
		Message: api.Message{Role: "assistant", Content: d.content, Thinking: d.thinking, ToolCalls: d.calls}}
	if d.done {
		resp.Done, resp.DoneReason, resp.Metrics = true, d.reason, d.metrics
		return chatResponse{resp, d.cached}
	}
	return chatResponse{resp, nil}
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

// thinkMode says how a reply's thinking is told from its answer.
type thinkMode struct {
	open, close string // the template's thinking tags; "" leaves the reply whole
	inside      bool   // the prompt ends with open: the reply starts as thinking
	// channel is the mark open begins with where a model thinks in
	// channels (Gemma 4's <|channel>): a thought may then open anywhere in
	// the reply, and marks outside one (the mark without the thought's
	// name, a stray close) are dropped, not content.
	channel string
	noThink bool // drop the thinking (the request said think false)
	// harmony is the start of a harmony reply's split (each reply
	// copies it); nil when the template does not write harmony
	harmony *harmonyStream
}

// thinkState is the think mode of a reply to prompt: the model's thinking
// tags when the request thinks (checkCaps turned the default on for a
// model that thinks), and whether the rendered prompt already opened one.
func thinkState(prompt string, think *api.ThinkValue, caps templateCaps) thinkMode {
	if caps.harmony {
		return thinkMode{harmony: newHarmonyStream(prompt, !think.Bool())}
	}
	channels := caps.thinkOpen == gemmaThink
	if !channels && (!think.Bool() || !caps.thinks()) {
		return thinkMode{}
	}
	inside := strings.HasSuffix(strings.TrimSpace(prompt), caps.thinkOpen)
	m := thinkMode{open: caps.thinkOpen, close: caps.thinkClose, inside: inside}
	if channels {
		// split with think false too: the prompt then closes an empty
		// thought, and a stray close may still follow the answer
		m.channel, m.noThink = gemmaChannel, !think.Bool()
	}
	return m
}

// closeThought closes the thought a prompt opens for a reply that cannot
// think: a constrained one (format), whose first token is the answer's.
func closeThought(prompt string, think *api.ThinkValue, caps templateCaps) string {
	if caps.harmony && strings.HasSuffix(prompt, hStart+"assistant") {
		return prompt + harmonyFinal
	}
	if m := thinkState(prompt, think, caps); m.inside {
		return prompt + "\n" + m.close + "\n\n"
	}
	return prompt
}

// thinkSplitter separates a reply's thinking from its answer as it
// streams, as Ollama's thinking parser does: one thought, opened at the
// start of the reply (after whitespace) or by the prompt, and closed by
// the close tag; the whitespace after either tag is dropped, and the rest
// of the reply is the answer, tags and all. What may be the start of a tag
// is held back until it is known. A model that thinks in channels
// (thinkMode.channel) may open further thoughts in its answer, as
// llama.cpp's parser for Gemma 4 reads it; their text is thinking too.
type thinkSplitter struct {
	thinkMode
	state   thinkPhase
	eatWS   bool // drop the whitespace that follows a tag
	held    string
	content strings.Builder
	thought strings.Builder
}

// thinkPhase is where a thinkSplitter is in a reply.
type thinkPhase uint8

const (
	beforeThought thinkPhase = iota // only whitespace so far: a thought may open
	inThought
	afterThought // the answer
)

func newThinkSplitter(m thinkMode) *thinkSplitter {
	t := &thinkSplitter{thinkMode: m, state: afterThought}
	switch {
	case m.open == "":
	case m.inside:
		t.state, t.eatWS = inThought, true
	default:
		t.state = beforeThought
	}
	return t
}

// add returns the answer text and the thinking text that are final.
func (t *thinkSplitter) add(text string) (content, thinking string) {
	if t.open == "" {
		return text, ""
	}
	t.held += text
	for t.step() {
	}
	content, thinking = t.content.String(), t.thought.String()
	t.content.Reset()
	t.thought.Reset()
	if t.noThink {
		thinking = ""
	}
	return content, thinking
}

// step moves what it can of held to the answer or the thought and reports
// whether the phase changed (another step may then move more).
func (t *thinkSplitter) step() bool {
	if t.eatWS {
		t.held = strings.TrimLeftFunc(t.held, unicode.IsSpace)
		if t.held == "" {
			return false
		}
		t.eatWS = false
	}
	switch t.state {
	case beforeThought:
		rest := strings.TrimLeftFunc(t.held, unicode.IsSpace)
		switch {
		case strings.HasPrefix(rest, t.open):
			t.held, t.state, t.eatWS = rest[len(t.open):], inThought, true
			return true
		case strings.HasPrefix(t.open, rest): // whitespace, or the start of the tag
			return false
		}
		t.state = afterThought
		return true
	case inThought:
		if i := strings.Index(t.held, t.close); i >= 0 {
			t.thought.WriteString(t.held[:i])
			t.held, t.state, t.eatWS = t.held[i+len(t.close):], afterThought, true
			return true
		}
		keep := partialSuffix(t.held, t.close)
		t.thought.WriteString(t.held[:len(t.held)-keep])
		t.held = t.held[len(t.held)-keep:]
		return false
	}
	if t.channel != "" {
		return t.channelStep()
	}
	t.content.WriteString(t.held)
	t.held = ""
	return false
}

// channelStep moves the answer up to the next channel mark to content and
// reads the mark: the open tag opens a thought, the channel mark without
// the thought's name (an empty channel) and a close outside a thought are
// dropped. What may be the start of a mark is held back.
func (t *thinkSplitter) channelStep() bool {
	i, j := strings.Index(t.held, t.channel), strings.Index(t.held, t.close)
	if i < 0 && j < 0 {
		keep := max(partialSuffix(t.held, t.channel), partialSuffix(t.held, t.close))
		t.content.WriteString(t.held[:len(t.held)-keep])
		t.held = t.held[len(t.held)-keep:]
		return false
	}
	if i < 0 || j >= 0 && j < i { // a stray close
		t.content.WriteString(t.held[:j])
		t.held = t.held[j+len(t.close):]
		return true
	}
	t.content.WriteString(t.held[:i])
	t.held = t.held[i:]
	switch {
	case strings.HasPrefix(t.held, t.open):
		t.held, t.state, t.eatWS = t.held[len(t.open):], inThought, true
	case strings.HasPrefix(t.open, t.held): // the thought's name may follow
		return false
	default:
		t.held = t.held[len(t.channel):]
	}
	return true
}

// flush returns what was held back at the end of the reply: the end of
// an unclosed thought is thinking, and a channel mark whose name never
// came is dropped.
func (t *thinkSplitter) flush() (content, thinking string) {
	held := t.held
	t.held = ""
	switch {
	case t.state == inThought && !t.noThink:
		return "", held
	case t.state == inThought, t.channel != "" && strings.HasPrefix(held, t.channel):
		return "", ""
	}
	return held, ""
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
