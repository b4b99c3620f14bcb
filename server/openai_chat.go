package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/ollama/ollama/api"

	"folio/models/tokenizer"
	"folio/runner"
)

// oaiChatRequest is POST /v1/chat/completions.
type oaiChatRequest struct {
	oaiSampling
	Messages            []oaiMessage       `json:"messages"`
	MaxCompletionTokens *int               `json:"max_completion_tokens"`
	Logprobs            *bool              `json:"logprobs"`
	TopLogprobs         *int               `json:"top_logprobs"`
	ResponseFormat      *oaiResponseFormat `json:"response_format"`
	Tools               api.Tools          `json:"tools"`
	ReasoningEffort     *string            `json:"reasoning_effort"`
	Reasoning           *oaiReasoning      `json:"reasoning"`

	// callTag is the tag a forced tool call starts with (anthropic.go):
	// written after the prompt and read first by the reply's tool parser.
	callTag string
	// whole refuses a prompt longer than the context instead of
	// truncating it, as Anthropic's API does (anthropic.go)
	whole bool
}

// oaiResponseFormat is response_format (and, from /v1/responses,
// text.format).
type oaiResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// oaiReasoning is the reasoning object of chat and responses requests.
type oaiReasoning struct {
	Effort string `json:"effort"`
}

// oaiMessage is a message as OpenAI's clients send it.
type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // a string, an array of parts, or null
	ToolCalls  []oaiToolCall   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Reasoning  string          `json:"reasoning"`
}

type oaiToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"` // JSON text
	} `json:"function"`
}

// messages converts the request's messages to Ollama's: "developer" is
// the system role of newer clients; text parts are joined; images and
// audio are refused (folio runs text models).
func (q *oaiChatRequest) messages() ([]api.Message, error) {
	if len(q.Messages) == 0 {
		return nil, badParam("messages", "messages must hold at least one message")
	}
	toolNames := map[string]string{}
	var out []api.Message
	for i, m := range q.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		msg := api.Message{Role: m.Role, Thinking: m.Reasoning, ToolCallID: m.ToolCallID}
		switch m.Role {
		case "developer":
			msg.Role = "system"
		case "system", "user", "assistant":
		case "tool":
			msg.ToolName = toolNames[m.ToolCallID]
		default:
			return nil, badParam(param+".role", "message %d has role %q: use system, developer, user, assistant or tool", i, m.Role)
		}
		text, err := contentText(m.Content, param)
		if err != nil {
			return nil, err
		}
		msg.Content = text
		for _, tc := range m.ToolCalls {
			call := api.ToolCall{ID: tc.ID, Function: api.ToolCallFunction{Name: tc.Function.Name}}
			if err := json.Unmarshal([]byte(tc.Function.Arguments), &call.Function.Arguments); err != nil {
				return nil, badParam(param+".tool_calls", "message %d: the arguments of tool call %q are not a JSON object: %v", i, tc.ID, err)
			}
			toolNames[tc.ID] = tc.Function.Name
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
		out = append(out, msg)
	}
	return out, nil
}

// contentText reads a message's content: a string, null, or text parts.
func contentText(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badParam(param+".content", "content must be a string or an array of content parts")
	}
	var texts []string
	for _, p := range parts {
		switch {
		case p.Type == "text" && p.Text != nil:
			texts = append(texts, *p.Text)
		case p.Type == "text":
			return "", badParam(param+".content", "a text part has no text")
		default:
			return "", badParam(param+".content", "content part of type %q: folio runs text models only, send text parts", p.Type)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// format is response_format as Ollama's format field, so that /api/chat's
// check and grammar apply.
func (q *oaiChatRequest) format() (json.RawMessage, error) {
	rf := q.ResponseFormat
	if rf == nil {
		return nil, nil
	}
	switch rf.Type {
	case "", "text":
		return nil, nil
	case "json_object":
		return json.RawMessage(`"json"`), nil
	case "json_schema":
		if rf.JSONSchema == nil || len(rf.JSONSchema.Schema) == 0 {
			return nil, badParam("response_format", "json_schema needs json_schema.schema")
		}
		return rf.JSONSchema.Schema, nil
	}
	return nil, badParam("response_format", "response_format type %q: use text, json_object or json_schema", rf.Type)
}

// think is reasoning_effort (or reasoning.effort) as Ollama's think.
func (q *oaiChatRequest) think() (*api.ThinkValue, error) {
	effort := ""
	switch {
	case q.Reasoning != nil:
		effort = q.Reasoning.Effort
	case q.ReasoningEffort != nil:
		effort = *q.ReasoningEffort
	}
	switch effort {
	case "":
		return nil, nil
	case "none":
		return &api.ThinkValue{Value: false}, nil
	case "low", "medium", "high":
		return &api.ThinkValue{Value: effort}, nil
	}
	return nil, badParam("reasoning_effort", "reasoning_effort %q: use low, medium, high or none", effort)
}

func (s *Server) oaiChat(w http.ResponseWriter, r *http.Request) {
	var req oaiChatRequest
	var c *completion
	var msgs []api.Message
	var think *api.ThinkValue
	l, release, ok := s.begin(w, r, &req, func() (err error) {
		if c, msgs, think, err = req.check(); err == nil {
			err = req.compileFormat(r.Context(), s, c)
		}
		return err
	}, &req.Model)
	if !ok {
		return
	}
	defer release()
	job, err := s.chatJob(r.Context(), l, &req, c, msgs, think)
	if err != nil {
		writeOAIError(w, err)
		return
	}
	defer job.cancel()
	respond(r.Context(), w, job, &req.oaiSampling, &chatWriter{
		head: s.oaiHead("chatcmpl", "chat.completion", req.Model), tok: l.model.Tok, logprobs: c.logprobs, null: chunkUsage(&req.oaiSampling)})
}

// chatJob renders a checked chat request's messages with l's template and
// starts it on the engine; the caller cancels the job when done with it.
func (s *Server) chatJob(ctx context.Context, l *loaded, req *oaiChatRequest, c *completion, msgs []api.Message,
	think *api.ThinkValue) (*oaiJob, error) {
	conf, err := s.confFor(c, req.Model)
	if err != nil {
		return nil, err
	}
	caps := capsOf(modelTemplate(l, conf))
	if think, err = checkCaps(req.Model, caps, req.Tools, think); err != nil {
		return nil, err
	}
	if err := generates(l, req.Model, "chat"); err != nil {
		return nil, err
	}
	if err := req.applyBias(c, l); err != nil {
		return nil, err
	}
	p := &chatPrompt{s: s, ctx: ctx, l: l, conf: conf, tools: req.Tools, think: think, caps: caps, constrained: c.format != nil}
	win := newWindow(l, c.opts, nil)
	win.truncate = !req.whole
	text, ids, err := p.fit(conf.chatMessages(msgs), win)
	if err != nil {
		return nil, err
	}
	if req.callTag != "" {
		text += req.callTag
		ids = append(ids, l.model.Tok.Encode(req.callTag, tokenizer.EncodeOptions{ParseSpecial: true})...)
	}
	if req.whole && len(ids) >= win.numCtx { // the answer needs a token of room
		return nil, fmt.Errorf("%w: prompt is too long: %d tokens > %d maximum: raise the context (FOLIO_CONTEXT_LENGTH, "+
			"or the model's num_ctx parameter) or send less", errBadRequest, len(ids), win.numCtx-1)
	}
	c.model, c.ids = l, ids // the job's prompt is ids (start copies c per prompt)
	c.thinkSplit = thinkState(text, think, caps)
	job := &oaiJob{c: c}
	if len(req.Tools) > 0 {
		job.newTool = func() *toolStream {
			ts := newToolStream(l, conf, req.Tools)
			ts.add(req.callTag)
			return ts
		}
	}
	if err := job.start(ctx, [][]int32{ids}); err != nil {
		job.cancel()
		return nil, err
	}
	return job, nil
}

// check validates the request and returns the completion it asks for
// (without its model, and without the grammar of its response_format,
// which compileFormat adds once the model is found), its messages and its
// think option.
func (q *oaiChatRequest) check() (*completion, []api.Message, *api.ThinkValue, error) {
	maxTokens := q.MaxCompletionTokens
	if maxTokens == nil {
		maxTokens = q.MaxTokens
	}
	raw, n, err := q.options(maxTokens)
	if err != nil {
		return nil, nil, nil, err
	}
	msgs, err := q.messages()
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := q.format(); err != nil {
		return nil, nil, nil, err
	}
	if err := checkRequest(q.Model, nil, nil); err != nil {
		return nil, nil, nil, &paramError{"model", err}
	}
	think, err := q.think()
	if err != nil {
		return nil, nil, nil, err
	}
	logprobs := q.Logprobs != nil && *q.Logprobs
	top := 0
	if q.TopLogprobs != nil {
		top = *q.TopLogprobs
		if !logprobs {
			return nil, nil, nil, badParam("top_logprobs", "top_logprobs needs logprobs: true")
		}
	}
	opts, sample, err := options(raw)
	if err != nil {
		return nil, nil, nil, err
	}
	return &completion{opts: opts, sample: sample, raw: raw, n: n, logprobs: logprobs, topLog: top}, msgs, think, nil
}

// compileFormat compiles a checked request's response_format into c,
// after looking its model up (see Server.compileFormat).
func (q *oaiChatRequest) compileFormat(ctx context.Context, s *Server, c *completion) error {
	format, err := q.format()
	if err == nil {
		c.format, err = s.compileFormat(ctx, q.Model, format, "response_format")
	}
	return err
}

// The chat.completion and chat.completion.chunk objects.
type (
	oaiChatMessage struct {
		Role      string             `json:"role,omitempty"`
		Content   *string            `json:"content,omitempty"`
		Reasoning string             `json:"reasoning,omitempty"`
		ToolCalls []oaiToolCallDelta `json:"tool_calls,omitempty"`
	}
	// oaiToolCallDelta is a tool call in a response: the index of the call
	// within the message (chunks) besides oaiToolCall's fields.
	oaiToolCallDelta struct {
		Index int `json:"index"`
		oaiToolCall
	}
	oaiChatChoice struct {
		Index        int             `json:"index"`
		Message      *oaiChatMessage `json:"message,omitempty"`
		Delta        *oaiChatMessage `json:"delta,omitempty"`
		Logprobs     *oaiLogprobs    `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	}
	oaiLogprobs struct {
		Content []oaiTokenLogprob `json:"content"`
		Refusal []oaiTokenLogprob `json:"refusal"`
	}
	oaiTopLogprob struct {
		Token   string  `json:"token"`
		Logprob float64 `json:"logprob"`
		Bytes   []int   `json:"bytes"`
	}
	oaiTokenLogprob struct {
		oaiTopLogprob
		TopLogprobs []oaiTopLogprob `json:"top_logprobs"`
	}
)

// chatLogprobs converts the engine's log-probabilities, through the
// Ollama form (token text and bytes), to OpenAI's.
func chatLogprobs(tok *tokenizer.Tokenizer, lps []*runner.TokenLogprob) *oaiLogprobs {
	out := &oaiLogprobs{Content: []oaiTokenLogprob{}}
	top := func(t api.TokenLogprob) oaiTopLogprob {
		if t.Bytes == nil {
			t.Bytes = []int{}
		}
		return oaiTopLogprob{Token: t.Token, Logprob: t.Logprob, Bytes: t.Bytes}
	}
	for _, lp := range lps {
		o := ollamaLogprob(tok, lp)
		e := oaiTokenLogprob{oaiTopLogprob: top(o.TokenLogprob), TopLogprobs: []oaiTopLogprob{}}
		for _, t := range o.TopLogprobs {
			e.TopLogprobs = append(e.TopLogprobs, top(t))
		}
		out.Content = append(out.Content, e)
	}
	return out
}

type chatWriter struct {
	head     oaiHead
	tok      *tokenizer.Tokenizer
	logprobs bool
	null     any // the usage of every chunk but the last
}

func (f *chatWriter) whole(choices []oaiChoice, usage oaiUsage) any {
	resp := oaiObject[oaiChatChoice]{oaiHead: f.head, Choices: []oaiChatChoice{}, Usage: &usage}
	for i := range choices {
		c := &choices[i]
		text := c.text.String()
		ch := oaiChatChoice{Index: i, FinishReason: &c.finish,
			Message: &oaiChatMessage{Role: "assistant", Content: &text, Reasoning: c.reasoning.String(),
				ToolCalls: toolCallDeltas(c.calls)}}
		if text == "" && len(c.calls) > 0 {
			ch.Message.Content = nil // as OpenAI: a message of calls has no content
		}
		if f.logprobs {
			ch.Logprobs = chatLogprobs(f.tok, c.lps)
		}
		resp.Choices = append(resp.Choices, ch)
	}
	return resp
}

func (f *chatWriter) chunk(choices ...oaiChatChoice) oaiObject[oaiChatChoice] {
	h := f.head
	h.Object = "chat.completion.chunk"
	return oaiObject[oaiChatChoice]{oaiHead: h, Choices: choices, Usage: f.null}
}

// opening tells the role of every choice, as OpenAI's first chunks do.
func (f *chatWriter) opening(choices int) []any {
	var out []any
	empty := ""
	for i := range choices {
		out = append(out, f.chunk(oaiChatChoice{Index: i, Delta: &oaiChatMessage{Role: "assistant", Content: &empty}}))
	}
	return out
}

func (f *chatWriter) chunks(d oaiDelta) []any {
	var out []any
	if d.content != "" || d.reasoning != "" || d.logprob != nil || len(d.calls) > 0 {
		ch := oaiChatChoice{Index: d.index, Delta: &oaiChatMessage{Reasoning: d.reasoning, ToolCalls: toolCallDeltas(d.calls)}}
		if d.content != "" {
			ch.Delta.Content = &d.content
		}
		if d.logprob != nil {
			ch.Logprobs = chatLogprobs(f.tok, []*runner.TokenLogprob{d.logprob})
		}
		out = append(out, f.chunk(ch))
	}
	if d.finish != "" {
		out = append(out, f.chunk(oaiChatChoice{Index: d.index, Delta: &oaiChatMessage{}, FinishReason: &d.finish}))
	}
	return out
}

func (f *chatWriter) usage(usage oaiUsage) any {
	resp := f.chunk()
	resp.Choices, resp.Usage = []oaiChatChoice{}, &usage
	return resp
}

// toolCallDeltas numbers calls as OpenAI's messages and chunks carry them.
func toolCallDeltas(calls []api.ToolCall) []oaiToolCallDelta {
	var out []oaiToolCallDelta
	for i, c := range oaiToolCalls(calls) {
		out = append(out, oaiToolCallDelta{Index: calls[i].Function.Index, oaiToolCall: c})
	}
	return out
}
