package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"

	"folio/models/template"
)

// Mistral's models mark their tool calls with [TOOL_CALLS], in one of two
// forms, which their chat templates write back into the conversation:
//
//	[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]
//	[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}
//
// The first (Mistral 7B v0.3, Nemo) holds every call in one JSON array; the
// second (Devstral, Mistral Small 3.2, which puts [CALL_ID] and an id
// before [ARGS]) repeats the mark before each call. Ollama's generic
// parser finds a tool's name anywhere after the mark and takes the first
// JSON object after it for its arguments, guessing by key names which
// object that is, so arguments that have a "name" key come back empty; this
// parser reads each form as its template writes it.
const (
	mistralMark   = "[TOOL_CALLS]"
	mistralArgs   = "[ARGS]"
	mistralCallID = "[CALL_ID]"
)

// mistralCalls splits a reply into content and Mistral's tool calls as it
// streams. Text before the first mark is content; a mark followed by
// something that is not a call of one of the request's tools makes the
// rest of the reply, mark included, content again.
type mistralCalls struct {
	callMaker
	buf     string // text from the first mark on, not yet read
	calling bool   // a mark has been seen
	failed  bool   // what followed a mark was not a call: the rest is content
}

// parse results of one call.
type parseStep uint8

const (
	needMore parseStep = iota // the call may still complete
	parsed                    // one or more calls were read
	notACall                  // the text cannot be a call
)

// Add takes the next piece of the reply.
func (p *mistralCalls) Add(s string) (calls []api.ToolCall, content string) {
	if p.failed {
		return nil, s
	}
	p.buf += s
	if !p.calling {
		i := strings.Index(p.buf, mistralMark)
		if i < 0 {
			keep := partialSuffix(p.buf, mistralMark)
			content, p.buf = p.buf[:len(p.buf)-keep], p.buf[len(p.buf)-keep:]
			return nil, content
		}
		content, p.buf, p.calling = p.buf[:i], p.buf[i:], true
	}
	for {
		got, used, step := p.next(p.buf)
		switch step {
		case needMore:
			return calls, content
		case notACall:
			p.failed = true
			rest := p.buf
			p.buf = ""
			return calls, content + rest
		}
		calls = append(calls, got...)
		p.buf = p.buf[used:]
	}
}

// held is the text read since the last call that has not been returned.
func (p *mistralCalls) held() string { return p.buf }

// next reads the calls of one mark at the start of text (after
// whitespace): how many bytes they took, or whether more text may make a
// call of it.
func (p *mistralCalls) next(text string) ([]api.ToolCall, int, parseStep) {
	rest := strings.TrimLeftFunc(text, unicode.IsSpace)
	if rest == "" || strings.HasPrefix(mistralMark, rest) {
		return nil, 0, needMore
	}
	if !strings.HasPrefix(rest, mistralMark) {
		return nil, 0, notACall
	}
	start := len(text) - len(rest) + len(mistralMark)
	body := text[start:]
	trimmed := strings.TrimLeftFunc(body, unicode.IsSpace)
	if trimmed == "" {
		return nil, 0, needMore
	}
	if trimmed[0] == '[' || trimmed[0] == '{' {
		raw, n, step := jsonPrefix(trimmed)
		if step != parsed {
			return nil, 0, step
		}
		calls, ok := p.jsonCalls(raw)
		if !ok {
			return nil, 0, notACall
		}
		return calls, start + len(body) - len(trimmed) + n, parsed
	}
	return p.namedCall(text, start)
}

// namedCall reads name[ARGS]{…} (or name[CALL_ID]id[ARGS]{…}) from
// text[start:].
func (p *mistralCalls) namedCall(text string, start int) ([]api.ToolCall, int, parseStep) {
	body := text[start:]
	i := strings.Index(body, mistralArgs)
	if i < 0 {
		if strings.ContainsAny(body, "{}\n") { // no tool name holds these: the model is not calling
			return nil, 0, notACall
		}
		return nil, 0, needMore
	}
	name, _, _ := strings.Cut(body[:i], mistralCallID)
	args := body[i+len(mistralArgs):]
	trimmed := strings.TrimLeftFunc(args, unicode.IsSpace)
	if trimmed == "" {
		return nil, 0, needMore
	}
	if trimmed[0] != '{' {
		return nil, 0, notACall
	}
	raw, n, step := jsonPrefix(trimmed)
	if step != parsed {
		return nil, 0, step
	}
	call, ok := p.call(strings.TrimSpace(name), raw)
	if !ok {
		return nil, 0, notACall
	}
	return []api.ToolCall{call}, start + i + len(mistralArgs) + len(args) - len(trimmed) + n, parsed
}

// jsonCalls reads the array (or single object) of {"name", "arguments"}
// objects of the older form.
func (p *mistralCalls) jsonCalls(raw []byte) ([]api.ToolCall, bool) {
	type jsonCall struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var list []jsonCall
	if raw[0] == '{' {
		var one jsonCall
		if json.Unmarshal(raw, &one) != nil {
			return nil, false
		}
		list = append(list, one)
	} else if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, false
	}
	var calls []api.ToolCall
	for _, c := range list {
		call, ok := p.call(c.Name, c.Arguments)
		if !ok {
			return nil, false
		}
		calls = append(calls, call)
	}
	return calls, true
}

// callMaker makes the calls of a request's tools, numbered in order.
type callMaker struct {
	tools api.Tools
	n     int // calls made so far
}

// call is a call of the request's tool name with arguments raw (a JSON
// object, a JSON string holding one, or nothing), numbered in order.
func (p *callMaker) call(name string, raw []byte) (api.ToolCall, bool) {
	if !slices.ContainsFunc(p.tools, func(t api.Tool) bool { return t.Function.Name == name }) {
		return api.ToolCall{}, false
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return api.ToolCall{}, false
		}
		raw = []byte(s)
	}
	args := api.NewToolCallFunctionArguments()
	if len(raw) > 0 && (raw[0] != '{' || json.Unmarshal(raw, &args) != nil) {
		return api.ToolCall{}, false
	}
	c := api.ToolCall{Function: api.ToolCallFunction{Name: name, Arguments: args, Index: p.n}}
	p.n++
	return c, true
}

// jsonPrefix finds the JSON value at the start of text: its bytes and
// length, needMore while it is unfinished, notACall if it is not JSON.
func jsonPrefix(text string) ([]byte, int, parseStep) {
	dec := json.NewDecoder(strings.NewReader(text))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, needMore
		}
		return nil, 0, notACall
	}
	return raw, int(dec.InputOffset()), parsed
}

// mistralCallIDs gives a conversation's calls and results the ids Mistral's
// templates accept: 9 letters and digits (the ids Mistral's models were
// trained on), the same in a call and in the result that answers it. The
// templates of Nemo and Small 3.2 refuse any other id and a result without
// one, while folio's own ids (call_ and 8 characters, Ollama's form) and
// OpenAI's are longer, and Ollama's clients answer a call by tool_name
// alone. An id of the right form is kept; another becomes a digest of it
// (the same in the call and in its result); a call without one gets one
// from its place in the conversation, and a result without one the id of
// the earliest unanswered call of its tool (of any tool when it names
// none).
func mistralCallIDs(msgs []template.Message) {
	ids := map[string]string{}
	type pending struct{ name, id string }
	var open []pending
	for i := range msgs {
		m := &msgs[i]
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			tc.ID = mistralID(ids, tc.ID, fmt.Sprintf("\x00call %d.%d", i, j))
			open = append(open, pending{tc.Name, tc.ID})
		}
		if m.Role != "tool" {
			continue
		}
		if m.ToolCallID != "" {
			m.ToolCallID = mistralID(ids, m.ToolCallID, "")
		} else {
			for _, p := range open {
				if m.ToolName == "" || p.name == m.ToolName {
					m.ToolCallID = p.id
					break
				}
			}
		}
		open = slices.DeleteFunc(open, func(p pending) bool { return p.id == m.ToolCallID })
	}
}

// mistralID is id when it has Mistral's form, else its 9-character digest
// (of place when id is empty), remembered in ids.
func mistralID(ids map[string]string, id, place string) string {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	if len(id) == 9 && strings.Trim(id, chars) == "" {
		return id
	}
	if id == "" {
		id = place
	}
	if v, ok := ids[id]; ok {
		return v
	}
	sum := sha256.Sum256([]byte(id))
	b := make([]byte, 9)
	for i := range b {
		b[i] = chars[int(sum[i])%len(chars)]
	}
	ids[id] = string(b)
	return ids[id]
}
