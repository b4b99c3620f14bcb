package server

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

// GLM-4.5, GLM-4.6 and GLM-4.7 write a tool call as its name and each
// argument as a key and a value, which their chat templates write back
// into the conversation the same way:
//
//	<tool_call>get_weather
//	<arg_key>city</arg_key>
//	<arg_value>Paris</arg_value>
//	</tool_call>
//
// A string value is written as it is, any other as JSON. Ollama's parser
// for the <tool_call> tag reads JSON, so these came back as text.
const (
	glmCall     = "<tool_call>"
	glmCallEnd  = "</tool_call>"
	glmKey      = "<arg_key>"
	glmKeyEnd   = "</arg_key>"
	glmValue    = "<arg_value>"
	glmValueEnd = "</arg_value>"
)

// taggedCalls splits a reply into content and the calls between
// <tool_call> and </tool_call> (or a model's own tags) that read makes of
// their text (GLM's keys and values, Qwen3-Coder's function and
// parameters, MiniMax-M2's invocations, Gemma 4's call) as it streams. Text
// outside calls is content; a call that is not one of the request's
// tools, or not in read's form, makes the rest of the reply, tag
// included, content again.
type taggedCalls struct {
	callMaker
	open, close string // the tags around calls: glmCall and glmCallEnd when ""
	// read makes the calls of the text between a pair of tags (one, or
	// MiniMax's several); false when it is not in read's form.
	read   func(m *callMaker, text string) ([]api.ToolCall, bool)
	buf    string // from the first unfinished call's tag on
	failed bool
}

// Add takes the next piece of the reply.
func (p *taggedCalls) Add(s string) (calls []api.ToolCall, content string) {
	if p.failed {
		return nil, s
	}
	if p.open == "" {
		p.open, p.close = glmCall, glmCallEnd
	}
	p.buf += s
	for {
		i := strings.Index(p.buf, p.open)
		if i < 0 {
			keep := partialSuffix(p.buf, p.open)
			content += p.buf[:len(p.buf)-keep]
			p.buf = p.buf[len(p.buf)-keep:]
			return calls, content
		}
		content += p.buf[:i]
		p.buf = p.buf[i:]
		body := p.buf[len(p.open):]
		end := strings.Index(body, p.close)
		if end < 0 {
			return calls, content
		}
		made, ok := p.read(&p.callMaker, body[:end])
		if !ok {
			p.failed = true
			rest := p.buf
			p.buf = ""
			return calls, content + rest
		}
		calls = append(calls, made...)
		p.buf = body[end+len(p.close):]
	}
}

// oneCall is a read's result of a single call.
func oneCall(c api.ToolCall, ok bool) ([]api.ToolCall, bool) {
	if !ok {
		return nil, false
	}
	return []api.ToolCall{c}, true
}

// held is the unfinished call's text, from its tag on.
func (p *taggedCalls) held() string { return p.buf }

// glmRead reads one of GLM's calls between its tags: the name, then key
// and value pairs, each value as argValueJSON makes it.
func glmRead(p *callMaker, text string) ([]api.ToolCall, bool) {
	name, rest, _ := strings.Cut(text, glmKey)
	name = strings.TrimSpace(name)
	args, ok := p.args(name)
	if !ok {
		return nil, false
	}
	for n := 0; strings.TrimSpace(rest) != ""; n++ {
		if n > 0 {
			rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
			r, ok := strings.CutPrefix(rest, glmKey)
			if !ok {
				return nil, false
			}
			rest = r
		}
		key, after, ok := strings.Cut(rest, glmKeyEnd)
		if !ok {
			return nil, false
		}
		after, ok = strings.CutPrefix(strings.TrimLeftFunc(after, unicode.IsSpace), glmValue)
		if !ok {
			return nil, false
		}
		value, next, ok := strings.Cut(after, glmValueEnd)
		if !ok {
			return nil, false
		}
		args.add(key, value)
		rest = next
	}
	return oneCall(p.call(name, args.json()))
}

// callArgs builds a call's arguments, a JSON object, key by key, each
// value as argValueJSON makes it for its tool.
type callArgs struct {
	tool api.Tool
	obj  bytes.Buffer
}

// args starts the arguments of a call of the request's tool name; false
// when the request has no such tool.
func (p *callMaker) args(name string) (*callArgs, bool) {
	i := slices.IndexFunc(p.tools, func(t api.Tool) bool { return t.Function.Name == name })
	if i < 0 {
		return nil, false
	}
	a := &callArgs{tool: p.tools[i]}
	a.obj.WriteByte('{')
	return a, true
}

func (a *callArgs) add(key, value string) {
	if a.obj.Len() > 1 {
		a.obj.WriteByte(',')
	}
	key = strings.TrimSpace(key)
	k, _ := json.Marshal(key)
	a.obj.Write(k)
	a.obj.WriteByte(':')
	a.obj.Write(argValueJSON(a.tool, key, value))
}

// json is the object so far, closed.
func (a *callArgs) json() []byte { return append(a.obj.Bytes(), '}') }

// argValueJSON is a call's value, written as text, as JSON by the type
// the tool gives its parameter key: a string as it is; a boolean from
// true or false in any case (Qwen's templates write Python's True); any
// other type, or none given, the value itself where it is JSON, else a
// string.
func argValueJSON(t api.Tool, key, value string) []byte {
	var types api.PropertyType
	if props := t.Function.Parameters.Properties; props != nil {
		if prop, ok := props.Get(key); ok {
			types = prop.Type
		}
	}
	v := strings.TrimSpace(value)
	switch {
	case slices.Contains(types, "string"):
	case slices.Contains(types, "boolean") && (strings.EqualFold(v, "true") || strings.EqualFold(v, "false")):
		return []byte(strings.ToLower(v))
	case json.Valid([]byte(v)):
		return []byte(v)
	}
	s, _ := json.Marshal(value)
	return s
}
