package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/ollama/ollama/api"
)

// oaiResponsesRequest is POST /v1/responses, OpenAI's newer API, served
// without state as Ollama serves it: the conversation comes whole in
// input, and no response is kept (store is answered false,
// previous_response_id refused). The request becomes a chat request, so
// that rendering, sampling, formats, reasoning and tool calls are the chat
// endpoint's.
type oaiResponsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"` // a string or an array of items
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Temperature     *float64        `json:"temperature"`
	TopP            *float64        `json:"top_p"`
	Stream          bool            `json:"stream"`
	Tools           []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Text       *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
	Reasoning          *oaiReasoning `json:"reasoning"`
	PreviousResponseID string        `json:"previous_response_id"`
	Background         bool          `json:"background"`
	Include            []string      `json:"include"`
}

// responseItem is an item of input: a message (with or without its type)
// or a function call and its output.
type responseItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Args    string          `json:"arguments"`
	Output  json.RawMessage `json:"output"`
}

// chat is the request as a chat completion's.
func (q *oaiResponsesRequest) chat() (*oaiChatRequest, error) {
	switch {
	case q.PreviousResponseID != "":
		return nil, unsupported("previous_response_id", "folio keeps no responses: send the whole conversation in input")
	case q.Background:
		return nil, unsupported("background", "background responses are not supported: leave background out")
	case len(q.Include) > 0:
		return nil, unsupported("include", "include %q is not supported: leave include out", q.Include)
	case q.MaxOutputTokens != nil && *q.MaxOutputTokens < 1:
		return nil, badParam("max_output_tokens", "max_output_tokens %d: use a positive count, or leave it out for no limit", *q.MaxOutputTokens)
	}
	c := &oaiChatRequest{}
	c.Model, c.Stream, c.Temperature, c.TopP, c.MaxTokens = q.Model, q.Stream, q.Temperature, q.TopP, q.MaxOutputTokens
	if q.Instructions != nil {
		c.Messages = append(c.Messages, oaiMessage{Role: "system", Content: jsonString(*q.Instructions)})
	}
	msgs, err := responseMessages(q.Input)
	if err != nil {
		return nil, err
	}
	c.Messages = append(c.Messages, msgs...)
	choice := ""
	if len(q.ToolChoice) > 0 && string(q.ToolChoice) != "null" && json.Unmarshal(q.ToolChoice, &choice) != nil {
		return nil, unsupported("tool_choice", "tool_choice naming a tool is not supported: use auto or none")
	}
	switch choice {
	case "", "auto":
	case "none":
		q.Tools = nil
	default:
		return nil, unsupported("tool_choice", "tool_choice %q is not supported: use auto or none", choice)
	}
	for i, t := range q.Tools {
		if t.Type != "function" || t.Name == "" {
			return nil, unsupported(fmt.Sprintf("tools[%d]", i), "tool %d of type %q: folio calls functions only (type function, with a name)", i, t.Type)
		}
		var tool api.Tool
		tool.Type, tool.Function.Name, tool.Function.Description = "function", t.Name, t.Description
		if len(t.Parameters) > 0 {
			if err := json.Unmarshal(t.Parameters, &tool.Function.Parameters); err != nil {
				return nil, badParam(fmt.Sprintf("tools[%d].parameters", i), "tool %q: parameters must be a JSON schema object: %v", t.Name, err)
			}
		}
		c.Tools = append(c.Tools, tool)
	}
	if q.Text != nil && q.Text.Format != nil {
		f := q.Text.Format
		c.ResponseFormat = &oaiResponseFormat{Type: f.Type}
		if f.Type == "json_schema" {
			c.ResponseFormat.JSONSchema = &struct {
				Schema json.RawMessage `json:"schema"`
			}{f.Schema}
		}
	}
	c.Reasoning = q.Reasoning
	return c, nil
}

// responseMessages reads input: a string (one user message) or items.
// Consecutive function calls join the assistant message before them (or a
// new one); reasoning items are dropped, as a server without state must.
func responseMessages(raw json.RawMessage) ([]oaiMessage, error) {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return []oaiMessage{{Role: "user", Content: jsonString(text)}}, nil
	}
	var items []responseItem
	if err := json.Unmarshal(raw, &items); err != nil || len(items) == 0 {
		return nil, badParam("input", "input must be a string or a non-empty array of items")
	}
	var out []oaiMessage
	for i, it := range items {
		param := fmt.Sprintf("input[%d]", i)
		switch it.Type {
		case "", "message":
			switch it.Role {
			case "user", "assistant", "system", "developer":
			default:
				return nil, badParam(param+".role", "input item %d has role %q: use user, assistant, system or developer", i, it.Role)
			}
			text, err := responseContent(it.Content, param+".content")
			if err != nil {
				return nil, err
			}
			if n := len(out); it.Role == "assistant" && n > 0 && thoughtOnly(out[n-1]) {
				out[n-1].Content = jsonString(text) // the answer of the reasoning before it
				continue
			}
			out = append(out, oaiMessage{Role: it.Role, Content: jsonString(text)})
		case "function_call":
			var args map[string]any
			if it.Name == "" || json.Unmarshal([]byte(it.Args), &args) != nil {
				return nil, badParam(param, "function call %d needs a name and arguments that are a JSON object (as text)", i)
			}
			var tc oaiToolCall
			tc.ID, tc.Type, tc.Function.Name, tc.Function.Arguments = it.CallID, "function", it.Name, it.Args
			if n := len(out); n == 0 || out[n-1].Role != "assistant" {
				out = append(out, oaiMessage{Role: "assistant"})
			}
			out[len(out)-1].ToolCalls = append(out[len(out)-1].ToolCalls, tc)
		case "function_call_output":
			text, err := responseContent(it.Output, param+".output")
			if err != nil {
				return nil, err
			}
			out = append(out, oaiMessage{Role: "tool", ToolCallID: it.CallID, Content: jsonString(text)})
		case "reasoning":
			// the thinking of the assistant turn that follows (the call or
			// the answer), as harmony templates write it back
			text, err := reasoningContent(it.Content, param+".content")
			if err != nil {
				return nil, err
			}
			if text != "" {
				out = append(out, oaiMessage{Role: "assistant", Reasoning: text})
			}
		default:
			return nil, badParam(param+".type", "input item %d of type %q: use message, function_call or function_call_output", i, it.Type)
		}
	}
	return out, nil
}

// thoughtOnly reports whether m is an assistant turn of a reasoning item
// alone, so far.
func thoughtOnly(m oaiMessage) bool {
	return m.Role == "assistant" && m.Reasoning != "" && len(m.Content) == 0 && len(m.ToolCalls) == 0
}

// reasoningContent reads a reasoning item's content: reasoning_text parts
// (its summary is left out: the model's own text is what goes back).
func reasoningContent(raw json.RawMessage, param string) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badParam(param, "a reasoning item's content must be an array of reasoning_text parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "reasoning_text" {
			return "", badParam(param, "reasoning content part of type %q: send reasoning_text parts", p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// responseContent reads an item's content: a string or parts of text
// (input_text, output_text; images and files are refused: folio runs text
// models).
func responseContent(raw json.RawMessage, param string) (string, error) {
	var s string
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", badParam(param, "content must be a string or an array of content parts")
	}
	var texts []string
	for _, p := range parts {
		switch {
		case (p.Type == "input_text" || p.Type == "output_text" || p.Type == "text") && p.Text != nil:
			texts = append(texts, *p.Text)
		case p.Type == "input_text" || p.Type == "output_text" || p.Type == "text":
			return "", badParam(param, "a %s part has no text", p.Type)
		default:
			return "", badParam(param, "content part of type %q: folio runs text models only, send input_text parts", p.Type)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// responsesParam renames the chat fields an error of the chat request's
// check names to the fields of this request they came from.
func responsesParam(err error) error {
	var pe *paramError
	if !errors.As(err, &pe) {
		return err
	}
	names := map[string]string{"response_format": "text.format", "reasoning_effort": "reasoning.effort", "max_tokens": "max_output_tokens"}
	if to, ok := names[pe.param]; ok {
		return &paramError{to, pe.err}
	}
	if strings.HasPrefix(pe.param, "messages") {
		return &paramError{"input", pe.err}
	}
	return err
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func (s *Server) oaiResponses(w http.ResponseWriter, r *http.Request) {
	var req oaiResponsesRequest
	var chat *oaiChatRequest
	var c *completion
	var msgs []api.Message
	var think *api.ThinkValue
	l, release, ok := s.begin(w, r, &req, func() (err error) {
		if chat, err = req.chat(); err == nil {
			if c, msgs, think, err = chat.check(); err == nil {
				err = chat.compileFormat(r.Context(), s, c)
			}
			err = responsesParam(err)
		}
		return err
	}, &req.Model)
	if !ok {
		return
	}
	defer release()
	job, err := s.chatJob(r.Context(), l, chat, c, msgs, think)
	if err != nil {
		writeOAIError(w, responsesParam(err))
		return
	}
	defer job.cancel()
	b := &responseBuilder{req: &req, tools: chat.Tools, id: fmt.Sprintf("resp_%016x", rand.Uint64()), created: s.cfg.Now().Unix()}
	if !req.Stream {
		choices, err := job.collect(r.Context())
		if err != nil {
			writeOAIError(w, err)
			return
		}
		ch := &choices[0]
		b.reasoning, b.text, b.calls = ch.reasoning.String(), ch.text.String(), ch.calls
		writeJSON(w, http.StatusOK, b.response(ch.finish, &job.usage))
		return
	}
	streamResponse(r.Context(), w, job, b)
}
