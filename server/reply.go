package server

import "github.com/ollama/ollama/api"

// replySplitter splits a reply as it streams into its content, its
// thinking and its tool calls: a harmony reply by its channels
// (harmony.go), any other by the template's thinking tags and then the
// tool-call parser of the request's tools.
type replySplitter struct {
	think   *thinkSplitter
	tools   *toolStream // nil without tools
	harmony *harmonyStream
}

func newReplySplitter(m thinkMode, tools *toolStream) *replySplitter {
	if m.harmony != nil {
		h := *m.harmony
		if tools != nil {
			h.tools = tools.tools
		}
		return &replySplitter{harmony: &h}
	}
	return &replySplitter{think: newThinkSplitter(m), tools: tools}
}

// add takes the next piece of the reply and returns what is final of it.
func (r *replySplitter) add(text string) (content, thinking string, calls []api.ToolCall) {
	if r.harmony != nil {
		return r.harmony.add(text)
	}
	content, thinking = r.think.add(text)
	content, calls = r.tools.add(content)
	return content, thinking, calls
}

// flush returns what was held back at the end of the reply.
func (r *replySplitter) flush() (content, thinking string, calls []api.ToolCall) {
	if r.harmony != nil {
		return r.harmony.flush()
	}
	content, thinking = r.think.flush()
	content, calls = r.tools.add(content)
	return content + r.tools.flush(), thinking, calls
}

// called reports whether the reply made a tool call.
func (r *replySplitter) called() bool {
	if r.harmony != nil {
		return r.harmony.called()
	}
	return r.tools.called()
}
