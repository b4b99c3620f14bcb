package server

import (
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

// DeepSeek's models mark tool calls with tokens of their own, which their
// chat templates write back into the conversation. V3 and R1:
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather
//	```json
//	{"city": "Paris"}
//	```<｜tool▁call▁end｜><｜tool▁calls▁end｜>
//
// (a further call after a newline, inside the same calls mark), and since
// V3.1 the name before the separator and the bare arguments after it:
//
//	<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>
const (
	dsCallsBegin = "<｜tool▁calls▁begin｜>"
	dsCallsEnd   = "<｜tool▁calls▁end｜>"
	dsCallBegin  = "<｜tool▁call▁begin｜>"
	dsCallEnd    = "<｜tool▁call▁end｜>"
	dsSep        = "<｜tool▁sep｜>"
)

// deepseekCalls splits a reply into content and DeepSeek's tool calls as
// it streams. Text before the calls mark is content; after it, anything
// but calls of the request's tools makes the rest of the reply, mark
// included, content again. Text after the closing mark is content.
type deepseekCalls struct {
	callMaker
	buf     string // text from the calls mark on, not yet read
	calling bool   // inside the calls mark
	done    bool   // past it (or not calls): the rest is content
}

// Add takes the next piece of the reply.
func (p *deepseekCalls) Add(s string) (calls []api.ToolCall, content string) {
	if p.done {
		return nil, s
	}
	p.buf += s
	if !p.calling {
		i := strings.Index(p.buf, dsCallsBegin)
		if i < 0 {
			keep := partialSuffix(p.buf, dsCallsBegin)
			content, p.buf = p.buf[:len(p.buf)-keep], p.buf[len(p.buf)-keep:]
			return nil, content
		}
		content, p.buf, p.calling = p.buf[:i], p.buf[i+len(dsCallsBegin):], true
	}
	for {
		rest := strings.TrimLeftFunc(p.buf, unicode.IsSpace)
		switch {
		case strings.HasPrefix(rest, dsCallsEnd):
			p.done = true
			after := rest[len(dsCallsEnd):]
			p.buf = ""
			return calls, content + after
		case rest == "" || strings.HasPrefix(dsCallsEnd, rest) || strings.HasPrefix(dsCallBegin, rest):
			return calls, content
		case !strings.HasPrefix(rest, dsCallBegin):
			return p.fail(calls, content)
		}
		body := rest[len(dsCallBegin):]
		end := strings.Index(body, dsCallEnd)
		if end < 0 {
			if strings.Contains(body, dsCallBegin) || strings.Contains(body, dsCallsEnd) {
				return p.fail(calls, content)
			}
			return calls, content
		}
		call, ok := p.read(body[:end])
		if !ok {
			return p.fail(calls, content)
		}
		calls = append(calls, call)
		p.buf = body[end+len(dsCallEnd):]
	}
}

// fail makes what was held since the calls mark content again, the mark
// with it, when no call was read; after a call, the rest of the reply.
func (p *deepseekCalls) fail(calls []api.ToolCall, content string) ([]api.ToolCall, string) {
	rest := p.buf
	if p.n == 0 {
		rest = dsCallsBegin + rest
	}
	p.buf, p.done = "", true
	return calls, content + rest
}

// read reads one call between its begin and end tokens: type, separator,
// then the name and the arguments fenced as JSON (V3, R1), or name,
// separator, arguments (V3.1).
func (p *deepseekCalls) read(text string) (api.ToolCall, bool) {
	head, args, ok := strings.Cut(text, dsSep)
	if !ok {
		return api.ToolCall{}, false
	}
	head = strings.TrimSpace(head)
	if p.known(head) {
		return p.call(head, []byte(strings.TrimSpace(args)))
	}
	name, fenced, _ := strings.Cut(args, "\n")
	fenced = strings.TrimSpace(fenced)
	if j, ok := strings.CutPrefix(fenced, "```json"); ok {
		fenced = strings.TrimSuffix(strings.TrimSpace(j), "```")
	}
	return p.call(strings.TrimSpace(name), []byte(strings.TrimSpace(fenced)))
}

// known reports whether name is one of the request's tools.
func (p *deepseekCalls) known(name string) bool {
	for _, t := range p.tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// held is the text read since the calls mark that has not been returned.
func (p *deepseekCalls) held() string {
	if p.calling && !p.done && p.n == 0 {
		return dsCallsBegin + p.buf
	}
	return p.buf
}
