package server

import (
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

// MiniMax-M2 writes its calls as one block of invocations, which its chat
// template writes back into the conversation the same way:
//
//	<minimax:tool_call>
//	<invoke name="get_weather">
//	<parameter name="city">Paris</parameter>
//	<parameter name="days">2</parameter>
//	</invoke>
//	</minimax:tool_call>
//
// a string value as it is, any other as JSON.
const (
	mmCall      = "<minimax:tool_call>"
	mmCallEnd   = "</minimax:tool_call>"
	mmInvoke    = `<invoke name="`
	mmInvokeEnd = "</invoke>"
	mmParam     = `<parameter name="`
	mmParamEnd  = "</parameter>"
)

// minimaxRead reads the invocations of one of MiniMax-M2's blocks
// (taggedCalls), each value as argValueJSON makes it.
func minimaxRead(p *callMaker, text string) ([]api.ToolCall, bool) {
	var calls []api.ToolCall
	rest := text
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			return calls, len(calls) > 0
		}
		call, next, ok := minimaxInvoke(p, rest)
		if !ok {
			return nil, false
		}
		calls, rest = append(calls, call), next
	}
}

// minimaxInvoke reads the invocation text starts with, and returns the
// text after it.
func minimaxInvoke(p *callMaker, text string) (api.ToolCall, string, bool) {
	rest, ok := strings.CutPrefix(text, mmInvoke)
	if !ok {
		return api.ToolCall{}, "", false
	}
	name, rest, ok := strings.Cut(rest, `">`)
	if !ok {
		return api.ToolCall{}, "", false
	}
	args, ok := p.args(name)
	if !ok {
		return api.ToolCall{}, "", false
	}
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if r, ok := strings.CutPrefix(rest, mmInvokeEnd); ok {
			call, ok := p.call(name, args.json())
			return call, r, ok
		}
		r, ok := strings.CutPrefix(rest, mmParam)
		if !ok {
			return api.ToolCall{}, "", false
		}
		key, r, ok := strings.Cut(r, `">`)
		if !ok {
			return api.ToolCall{}, "", false
		}
		value, next, ok := strings.Cut(r, mmParamEnd)
		if !ok {
			return api.ToolCall{}, "", false
		}
		args.add(key, value)
		rest = next
	}
}
