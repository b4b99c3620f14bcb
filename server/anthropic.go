package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ollama/ollama/api"

	"folio/runner"
)

// Anthropic's Messages API (POST /v1/messages), as Claude Code and the
// @anthropic-ai/sdk clients speak it, served over the chat machinery: a
// request becomes the messages, tools and think option of a chat
// completion (chatJob), so rendering, sampling, thinking, tool calls and
// the prefix cache are /v1/chat/completions'. Responses are Anthropic's
// message objects and named SSE events (anthropic_stream.go); errors are
// Anthropic's {"type":"error","error":{…}} with its status codes. The
// x-api-key, anthropic-version and anthropic-beta headers are taken and
// not checked: the server answers loopback (and FOLIO_ORIGINS) only.
func (s *Server) anthropicRoutes() {
	m := s.mux
	m.HandleFunc("POST /v1/messages", s.anthMessages)
	m.HandleFunc("POST /v1/messages/count_tokens", s.anthCountTokens)
	notFound := func(w http.ResponseWriter, r *http.Request) {
		writeAnthError(w, fmt.Errorf("%w: %s %s", errNotFoundPath, r.Method, r.URL.Path))
	}
	m.HandleFunc("/v1/messages", notFound) // other methods
	m.HandleFunc("/v1/messages/", notFound)
}

// anthRequest is the body of POST /v1/messages and of
// /v1/messages/count_tokens (which has no max_tokens).
type anthRequest struct {
	Model         string          `json:"model"`
	MaxTokens     *int            `json:"max_tokens"`
	System        json.RawMessage `json:"system"` // a string or text blocks
	Messages      []anthMessage   `json:"messages"`
	Tools         []anthTool      `json:"tools"`
	ToolChoice    *anthToolChoice `json:"tool_choice"`
	Thinking      *anthThinking   `json:"thinking"`
	StopSequences []string        `json:"stop_sequences"`
	Stream        bool            `json:"stream"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	TopK          *int            `json:"top_k"`
	Metadata      json.RawMessage `json:"metadata"` // user_id; taken, not used
}

type anthMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or content blocks
}

// anthBlock is a content block of a request: text, tool_use, tool_result,
// thinking or redacted_thinking (images and documents are refused).
type anthBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`    // tool_use
	Name      string          `json:"name"`  // tool_use
	Input     json.RawMessage `json:"input"` // tool_use: an object
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or text blocks
	IsError   bool            `json:"is_error"`
	Thinking  *string         `json:"thinking"`
	Signature string          `json:"signature"` // thinking: taken, not checked
}

type anthTool struct {
	Type        string          `json:"type"` // "", "custom"; Anthropic's server tools are refused
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type anthToolChoice struct {
	Type string `json:"type"` // auto, any, tool, none
	Name string `json:"name"` // tool
	// DisableParallelToolUse is taken; the engine's calls are the
	// model's, one or more.
	DisableParallelToolUse bool `json:"disable_parallel_tool_use"`
}

type anthThinking struct {
	Type         string `json:"type"` // enabled, disabled
	BudgetTokens int    `json:"budget_tokens"`
}

// anthPlan is a checked request: the chat request it becomes (model,
// sampling, tools), its completion, messages and think option, and the
// tool call it forces ("": none; "any": one of the tools; else a name).
type anthPlan struct {
	chat  *oaiChatRequest
	c     *completion
	msgs  []api.Message
	think *api.ThinkValue
	force string
	// schemas are the tools' input_schema as sent, by name: a forced
	// call's arguments are held to them
	schemas map[string]json.RawMessage
}

// check validates q and turns it into a plan; counting (count_tokens)
// needs no max_tokens.
func (q *anthRequest) check(counting bool) (*anthPlan, error) {
	if q.Model == "" {
		return nil, badParam("model", "model is required: name a folio model")
	}
	chat := &oaiChatRequest{}
	chat.Model, chat.Temperature, chat.TopP = q.Model, q.Temperature, q.TopP
	switch {
	case q.MaxTokens == nil && !counting:
		return nil, badParam("max_tokens", "max_tokens is required: the most tokens to generate")
	case q.MaxTokens != nil && *q.MaxTokens < 1:
		return nil, badParam("max_tokens", "max_tokens %d: use a positive count", *q.MaxTokens)
	}
	if !counting {
		chat.MaxTokens = q.MaxTokens
	}
	if len(q.StopSequences) > 0 {
		stop, _ := json.Marshal(q.StopSequences)
		chat.Stop = stop
	}
	raw, _, err := chat.options(chat.MaxTokens)
	if err != nil {
		return nil, err
	}
	if q.TopK != nil {
		raw["top_k"] = *q.TopK
	}
	chat.whole = true // Anthropic refuses a prompt over the context; Claude Code then compacts
	p := &anthPlan{chat: chat, schemas: map[string]json.RawMessage{}}
	for _, t := range q.Tools {
		p.schemas[t.Name] = t.InputSchema
	}
	if p.msgs, err = q.messages(); err != nil {
		return nil, err
	}
	if chat.Tools, err = q.tools(); err != nil {
		return nil, err
	}
	if p.force, err = q.toolChoice(chat); err != nil {
		return nil, err
	}
	if p.think, err = q.think(p.force != ""); err != nil {
		return nil, err
	}
	opts, sample, err := options(raw)
	if err != nil {
		return nil, err
	}
	p.c = &completion{opts: opts, sample: sample, raw: raw, n: 1}
	return p, nil
}

// messages reads system and messages into chat messages: a system
// message first; a user turn's tool_result blocks become tool messages
// (naming the tool of their tool_use) and its text a user message, in the
// order they come; an assistant turn's text, thinking and tool_use blocks
// one assistant message. A last assistant message is the start of the
// reply, as with Claude.
func (q *anthRequest) messages() ([]api.Message, error) {
	if len(q.Messages) == 0 {
		return nil, badParam("messages", "messages must hold at least one message")
	}
	var out []api.Message
	system, err := anthText(q.System, "system")
	if err != nil {
		return nil, err
	}
	if system != "" {
		out = append(out, api.Message{Role: "system", Content: system})
	}
	toolNames := map[string]string{} // tool_use id → tool name
	for i, m := range q.Messages {
		param := fmt.Sprintf("messages[%d]", i)
		if m.Role != "user" && m.Role != "assistant" {
			return nil, badParam(param+".role", "message %d has role %q: use user or assistant (the system prompt is the system field)", i, m.Role)
		}
		blocks, err := anthBlocks(m.Content, param+".content")
		if err != nil {
			return nil, err
		}
		if m.Role == "assistant" {
			msg, err := assistantMessage(blocks, param, toolNames)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
			continue
		}
		var text []string
		flush := func() {
			if len(text) > 0 {
				out = append(out, api.Message{Role: "user", Content: strings.Join(text, "\n")})
				text = nil
			}
		}
		for j, b := range blocks {
			bp := fmt.Sprintf("%s.content[%d]", param, j)
			switch b.Type {
			case "text":
				if b.Text == nil {
					return nil, badParam(bp+".text", "a text block has no text")
				}
				text = append(text, *b.Text)
			case "tool_result":
				if b.ToolUseID == "" {
					return nil, badParam(bp+".tool_use_id", "a tool_result block needs the tool_use_id of the tool_use it answers")
				}
				result, err := anthText(b.Content, bp+".content")
				if err != nil {
					return nil, err
				}
				if b.IsError {
					result = "Error: " + result
				}
				flush()
				out = append(out, api.Message{Role: "tool", Content: result, ToolCallID: b.ToolUseID, ToolName: toolNames[b.ToolUseID]})
			default:
				return nil, refusedBlock(b.Type, bp, "user")
			}
		}
		flush()
	}
	return out, nil
}

// assistantMessage is an assistant turn's blocks as one message, and
// records the names of its tool calls by id.
func assistantMessage(blocks []anthBlock, param string, toolNames map[string]string) (api.Message, error) {
	msg := api.Message{Role: "assistant"}
	var text, thought []string
	for j, b := range blocks {
		bp := fmt.Sprintf("%s.content[%d]", param, j)
		switch b.Type {
		case "text":
			if b.Text == nil {
				return msg, badParam(bp+".text", "a text block has no text")
			}
			text = append(text, *b.Text)
		case "thinking":
			if b.Thinking != nil {
				thought = append(thought, *b.Thinking)
			}
		case "redacted_thinking":
			// Claude's encrypted thinking: nothing a local model can read
		case "tool_use":
			call := api.ToolCall{ID: b.ID, Function: api.ToolCallFunction{Name: b.Name}}
			if b.Name == "" || b.ID == "" {
				return msg, badParam(bp, "a tool_use block needs an id and a name")
			}
			input := b.Input
			if len(input) == 0 || string(input) == "null" {
				input = json.RawMessage("{}")
			}
			if err := json.Unmarshal(input, &call.Function.Arguments); err != nil {
				return msg, badParam(bp+".input", "the input of tool_use %q must be a JSON object: %v", b.ID, err)
			}
			call.Function.Index = len(msg.ToolCalls)
			toolNames[b.ID] = b.Name
			msg.ToolCalls = append(msg.ToolCalls, call)
		default:
			return msg, refusedBlock(b.Type, bp, "assistant")
		}
	}
	msg.Content, msg.Thinking = strings.Join(text, "\n"), strings.Join(thought, "\n")
	return msg, nil
}

// refusedBlock is the error for a content block a turn cannot carry here.
func refusedBlock(typ, param, role string) error {
	switch typ {
	case "image", "document":
		return badParam(param, "%s blocks are not supported: folio runs text models only; send text blocks", typ)
	case "":
		return badParam(param+".type", "a content block has no type")
	}
	if role == "user" {
		return badParam(param+".type", "a user content block of type %q: use text or tool_result", typ)
	}
	return badParam(param+".type", "an assistant content block of type %q: use text, thinking or tool_use", typ)
}

// anthBlocks reads content: a string (one text block) or blocks.
func anthBlocks(raw json.RawMessage, param string) ([]anthBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthBlock{{Type: "text", Text: &s}}, nil
	}
	var blocks []anthBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, badParam(param, "content must be a string or an array of content blocks")
	}
	return blocks, nil
}

// anthText reads a string or text blocks (system, a tool_result's
// content) as text, the blocks joined by newlines.
func anthText(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	blocks, err := anthBlocks(raw, param)
	if err != nil {
		return "", err
	}
	var texts []string
	for j, b := range blocks {
		if b.Type != "text" || b.Text == nil {
			return "", refusedText(b.Type, fmt.Sprintf("%s[%d]", param, j))
		}
		texts = append(texts, *b.Text)
	}
	return strings.Join(texts, "\n"), nil
}

func refusedText(typ, param string) error {
	if typ == "image" || typ == "document" {
		return badParam(param, "%s blocks are not supported: folio runs text models only; send text blocks", typ)
	}
	return badParam(param, "a block of type %q: send text blocks (with their text)", typ)
}

// tools reads the request's tools as chat tools; Anthropic's server tools
// (web search, code execution, its bash and editor) are refused by type.
func (q *anthRequest) tools() (api.Tools, error) {
	var out api.Tools
	seen := map[string]bool{}
	for i, t := range q.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch {
		case t.Type != "" && t.Type != "custom":
			return nil, badParam(param+".type", "tool %d of type %q is one of Anthropic's server tools, which folio does not run: define it as a custom tool with a name and an input_schema", i, t.Type)
		case t.Name == "":
			return nil, badParam(param+".name", "tool %d has no name", i)
		case seen[t.Name]:
			return nil, badParam(param+".name", "tool name %q comes twice: tool names must be unique", t.Name)
		}
		seen[t.Name] = true
		var tool api.Tool
		tool.Type, tool.Function.Name, tool.Function.Description = "function", t.Name, t.Description
		if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
			if err := json.Unmarshal(t.InputSchema, &tool.Function.Parameters); err != nil {
				return nil, badParam(param+".input_schema", "tool %q: input_schema must be a JSON schema object: %v", t.Name, err)
			}
		}
		out = append(out, tool)
	}
	return out, nil
}

// toolChoice applies tool_choice to chat's tools and returns the call it
// forces: none drops the tools (the model is not told of them), any and
// tool force a call (forcedCall says how).
func (q *anthRequest) toolChoice(chat *oaiChatRequest) (string, error) {
	tc := q.ToolChoice
	if tc == nil {
		return "", nil
	}
	switch tc.Type {
	case "auto":
		return "", nil
	case "none":
		chat.Tools = nil
		return "", nil
	case "any", "tool":
	default:
		return "", badParam("tool_choice.type", "tool_choice type %q: use auto, any, tool or none", tc.Type)
	}
	if len(chat.Tools) == 0 {
		return "", badParam("tool_choice", "tool_choice %q needs tools", tc.Type)
	}
	if tc.Type == "any" {
		return "any", nil
	}
	for _, t := range q.Tools {
		if t.Name == tc.Name {
			return tc.Name, nil
		}
	}
	return "", badParam("tool_choice.name", "tool_choice names tool %q, which is not among the request's tools", tc.Name)
}

// think maps thinking to the model's think switch: enabled is on (its
// budget must be at least 1,024 tokens and below max_tokens, as Claude's;
// the thought counts toward max_tokens), disabled off, and adaptive or
// none the model's default, as Ollama does. A forced tool call cannot
// think, as with Claude.
func (q *anthRequest) think(forced bool) (*api.ThinkValue, error) {
	th := q.Thinking
	if th == nil {
		th = &anthThinking{Type: "adaptive"}
	}
	switch th.Type {
	case "disabled":
		return &api.ThinkValue{Value: false}, nil
	case "adaptive": // the model decides: one that thinks does, unless forced to call
		if forced {
			return &api.ThinkValue{Value: false}, nil
		}
		return nil, nil
	case "enabled":
	default:
		return nil, badParam("thinking.type", "thinking type %q: use enabled, adaptive or disabled", th.Type)
	}
	switch {
	case forced:
		return nil, badParam("thinking", "thinking may not be enabled when tool_choice forces tool use: use tool_choice auto, or disable thinking")
	case th.BudgetTokens < 1024:
		return nil, badParam("thinking.budget_tokens", "thinking.budget_tokens %d: use at least 1024", th.BudgetTokens)
	case q.MaxTokens != nil && th.BudgetTokens >= *q.MaxTokens:
		return nil, badParam("thinking.budget_tokens", "thinking.budget_tokens %d must be below max_tokens %d", th.BudgetTokens, *q.MaxTokens)
	}
	return &api.ThinkValue{Value: true}, nil
}

// anthError is the error object of Anthropic's error JSON.
type anthError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthErrorOf is err's status (statusOf's; a full queue or a model that is
// being reloaded is 529, Anthropic's "overloaded") and error object.
func anthErrorOf(err error) (int, anthError) {
	status := statusOf(err)
	if errors.Is(err, runner.ErrBusy) {
		status = 529
	}
	typ := "invalid_request_error"
	switch {
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		typ = "request_too_large"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	return status, anthError{Type: typ, Message: err.Error()}
}

// anthErrorBody is {"type":"error","error":{…}}, in a response and as the
// data of a stream's error event.
type anthErrorBody struct {
	Type  string    `json:"type"`
	Error anthError `json:"error"`
}

// writeAnthError sends Anthropic's error JSON.
func writeAnthError(w http.ResponseWriter, err error) {
	status, e := anthErrorOf(err)
	writeJSON(w, status, anthErrorBody{Type: "error", Error: e})
}

// anthBegin decodes and checks a request and acquires its model; on an
// error it answers, and ok is false.
func (s *Server) anthBegin(w http.ResponseWriter, r *http.Request, counting bool) (q *anthRequest, p *anthPlan, l *loaded, release func(), ok bool) {
	q = &anthRequest{}
	err := decode(r, q)
	if err == nil {
		p, err = q.check(counting)
	}
	if err == nil {
		l, release, err = s.models.acquire(r.Context(), q.Model, nil)
	}
	if err != nil {
		writeAnthError(w, err)
		return nil, nil, nil, nil, false
	}
	return q, p, l, release, true
}

func (s *Server) anthMessages(w http.ResponseWriter, r *http.Request) {
	q, p, l, release, ok := s.anthBegin(w, r, false)
	if !ok {
		return
	}
	defer release()
	if err := s.forceCall(r, l, p); err != nil {
		writeAnthError(w, err)
		return
	}
	job, err := s.chatJob(r.Context(), l, p.chat, p.c, p.msgs, p.think)
	if err != nil {
		writeAnthError(w, err)
		return
	}
	defer job.cancel()
	m := newAnthMessage(q.Model, len(job.c.ids))
	if !q.Stream {
		choices, err := job.collect(r.Context())
		if err != nil {
			writeAnthError(w, err)
			return
		}
		ch := &choices[0]
		m.add(oaiDelta{reasoning: ch.reasoning.String(), content: ch.text.String(), calls: ch.calls})
		m.finish(ch.finish, ch.stopped, job.usage)
		writeJSON(w, http.StatusOK, m.msg)
		return
	}
	m.stream(r.Context(), w, job)
}

// anthCountTokens answers count_tokens: the tokens of the prompt the same
// request to /v1/messages would render, {"input_tokens": N}.
func (s *Server) anthCountTokens(w http.ResponseWriter, r *http.Request) {
	_, p, l, release, ok := s.anthBegin(w, r, true)
	if !ok {
		return
	}
	defer release()
	conf, err := s.modelConf(p.chat.Model)
	caps := capsOf(modelTemplate(l, conf))
	if err == nil {
		p.think, err = checkCaps(p.chat.Model, caps, p.chat.Tools, p.think)
	}
	if err != nil {
		writeAnthError(w, err)
		return
	}
	// the prompt /v1/messages renders (chatJob), before a forced call's tag
	cp := &chatPrompt{s: s, ctx: r.Context(), l: l, conf: conf, tools: p.chat.Tools, think: p.think, caps: caps}
	_, ids, err := cp.encode(conf.chatMessages(p.msgs))
	if err != nil {
		writeAnthError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": len(ids)})
}

// forcedCall is the JSON schema of one tool's call, its name first as
// models write it (the grammar keeps the order of properties).
type forcedCall struct {
	Type       string `json:"type"`
	Properties struct {
		Name struct {
			Const string `json:"const"`
		} `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"properties"`
	Required             []string `json:"required"`
	AdditionalProperties bool     `json:"additionalProperties"`
}

// forceCall makes a plan that forces a tool call do so on l: the reply is
// constrained to a call's JSON, {"name": …, "arguments": …} of the named
// tool (or of any of them) with the arguments its input_schema allows,
// and, under a template whose calls follow a tag (<tool_call>,
// <|tool_call|>), the prompt ends with that tag. A template whose calls
// are written otherwise (Mistral's [TOOL_CALLS], harmony's channels, a
// Modelfile's Go template) cannot be forced: a 400 says so.
func (s *Server) forceCall(r *http.Request, l *loaded, p *anthPlan) error {
	if p.force == "" {
		return nil
	}
	conf, err := s.modelConf(p.chat.Model)
	if err != nil {
		return err
	}
	tmpl := modelTemplate(l, conf)
	if !capsOf(tmpl).tools {
		return nil // chatJob refuses the tools
	}
	if _, isGo, _ := goTemplate(tmpl, false); isGo || isHarmony(tmpl) || strings.Contains(tmpl, mistralMark) {
		return badParam("tool_choice", "%s's chat template writes tool calls in a form folio cannot force: use tool_choice auto", p.chat.Model)
	}
	tag := ""
	for _, t := range toolTags {
		if strings.Contains(tmpl, t) {
			tag = t
			break
		}
	}
	var calls []any
	for _, t := range p.chat.Tools {
		if p.force != "any" && t.Function.Name != p.force {
			continue
		}
		args := p.schemas[t.Function.Name]
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{"type":"object"}`)
		}
		var call forcedCall
		call.Type, call.Required = "object", []string{"name", "arguments"}
		call.Properties.Name.Const, call.Properties.Arguments = t.Function.Name, args
		calls = append(calls, call)
	}
	var schema any = map[string]any{"anyOf": calls}
	if len(calls) == 1 {
		schema = calls[0]
	}
	format, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	if p.c.format, err = s.compileFormat(r.Context(), p.chat.Model, format, "tool_choice"); err != nil {
		return err
	}
	p.chat.callTag = tag
	return nil
}
