package server

import (
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

// Qwen3-Coder writes a tool call as XML-like tags inside <tool_call>,
// which its chat template writes back into the conversation the same way:
//
//	<tool_call>
//	<function=get_weather>
//	<parameter=city>
//	Paris
//	</parameter>
//	</function>
//	</tool_call>
//
// each value on lines of its own: a string as it is, a mapping or a list
// as JSON, anything else as Python's str (True, 5). Ollama's parser for
// the <tool_call> tag reads JSON, so these came back as text.
const (
	qxFunction    = "<function="
	qxFunctionEnd = "</function>"
	qxParam       = "<parameter="
	qxParamEnd    = "</parameter>"
)

// qwenXMLRead reads one of Qwen3-Coder's calls between the <tool_call>
// tags (taggedCalls), each value as argValueJSON makes it.
func qwenXMLRead(p *callMaker, text string) ([]api.ToolCall, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(text), qxFunction)
	if !ok {
		return nil, false
	}
	name, rest, ok := strings.Cut(rest, ">")
	if !ok {
		return nil, false
	}
	args, ok := p.args(strings.TrimSpace(name))
	if !ok {
		return nil, false
	}
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if r, ok := strings.CutPrefix(rest, qxFunctionEnd); ok {
			if strings.TrimSpace(r) != "" {
				return nil, false
			}
			break
		}
		r, ok := strings.CutPrefix(rest, qxParam)
		if !ok {
			return nil, false
		}
		key, r, ok := strings.Cut(r, ">")
		if !ok {
			return nil, false
		}
		value, next, ok := strings.Cut(r, qxParamEnd)
		if !ok {
			return nil, false
		}
		// the template puts the value between newlines of its own
		args.add(key, strings.TrimSuffix(strings.TrimPrefix(value, "\n"), "\n"))
		rest = next
	}
	return oneCall(p.call(strings.TrimSpace(name), args.json()))
}
