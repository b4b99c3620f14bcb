package server

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/tools"
)

// Tool calls come back to the client as structured calls, not as text:
// when a chat request has tools, the generated text goes through Ollama's
// own tool-call parser (github.com/ollama/ollama/tools), which looks for
// the model's tool-call tag and reads the JSON of each call (a tool name
// from the request and its arguments), so that what a client receives is
// what Ollama would send for the same text.

// toolTags are the tags Jinja templates write before JSON tool calls, in
// the order they are looked for: Hermes' and Qwen's <tool_call>, Granite's
// and Phi-4-mini's <|tool_call|> (a JSON array of calls). A template with
// none (Llama 3.1 writes bare {"name": …} objects) gets "{": the reply is a
// call only if it starts with one. Mistral's [TOOL_CALLS] has its own
// parser (toolcalls_mistral.go), and so have DeepSeek's tokens
// (toolcalls_deepseek.go), GLM's keys and values under <tool_call>
// (toolcalls_glm.go, for templates that write <arg_key>),
// Qwen3-Coder's <function=…> and <parameter=…> (toolcalls_qwenxml.go),
// MiniMax-M2's block (toolcalls_minimax.go) and Gemma 4's <|tool_call>
// (toolcalls_gemma.go). Pythonic calls are left out: their text stays
// text.
var toolTags = []string{"<tool_call>", "<|tool_call|>"}

// callParser reads tool calls out of a reply as it streams.
type callParser interface {
	// Add takes the next piece of the reply and returns the calls it
	// completed and the content that is final.
	Add(text string) (calls []api.ToolCall, content string)
	// held is the text taken and neither returned as content nor read as
	// a call: at the end of a reply without calls, it is content.
	held() string
}

// ollamaCalls is Ollama's parser for a tag.
type ollamaCalls struct {
	p    *tools.Parser
	last bool // the last Add returned neither content nor calls
}

func (o *ollamaCalls) Add(text string) ([]api.ToolCall, string) {
	calls, content := o.p.Add(text)
	o.last = content == "" && len(calls) == 0
	return calls, content
}

// held: under a tag, the parser's buffer is what it has not returned.
// Under "{" or "[" (where Content is the buffer) the buffer also keeps
// text it has returned once the reply turned out to be text, and only
// what the last Add held back is still to come.
func (o *ollamaCalls) held() string {
	if !o.last && o.p.Content() != "" {
		return ""
	}
	return string(o.p.GetBuffer())
}

// toolStream splits a reply into content and tool calls as it streams.
// Whitespace next to a call (a model's "\n\n" before <tool_call>, the
// whitespace a format grammar allows before a bare JSON call) is not
// content: whitespace at the end of the content so far waits until text
// follows it, and is dropped when a call does.
type toolStream struct {
	tools api.Tools // the request's
	p     callParser
	space string // whitespace held back from the end of the content so far
	calls int    // calls returned so far
}

// newToolStream returns the splitter for a request's tools under the
// template the prompt was rendered with; nil without tools.
func newToolStream(l *loaded, conf modelConf, ts api.Tools) *toolStream {
	if len(ts) == 0 {
		return nil
	}
	tmpl := conf.Template
	if tmpl == "" {
		tmpl = l.template
	}
	if strings.Contains(tmpl, mistralMark) {
		return &toolStream{tools: ts, p: &mistralCalls{callMaker: callMaker{tools: ts}}}
	}
	if strings.Contains(tmpl, dsCallsBegin) {
		return &toolStream{tools: ts, p: &deepseekCalls{callMaker: callMaker{tools: ts}}}
	}
	if strings.Contains(tmpl, qxFunction) && strings.Contains(tmpl, qxParam) {
		return &toolStream{tools: ts, p: &taggedCalls{callMaker: callMaker{tools: ts}, read: qwenXMLRead}}
	}
	if strings.Contains(tmpl, mmCall) && strings.Contains(tmpl, "<invoke name=") {
		return &toolStream{tools: ts, p: &taggedCalls{callMaker: callMaker{tools: ts}, open: mmCall, close: mmCallEnd, read: minimaxRead}}
	}
	if strings.Contains(tmpl, gemmaTemplateMark) {
		return &toolStream{tools: ts, p: &taggedCalls{callMaker: callMaker{tools: ts}, open: gemmaCall, close: gemmaCallEnd, read: gemmaRead}}
	}
	if strings.Contains(tmpl, glmKey) {
		return &toolStream{tools: ts, p: &taggedCalls{callMaker: callMaker{tools: ts}, read: glmRead}}
	}
	if gt, ok, err := goTemplate(tmpl, false); ok && err == nil && tmpl != l.template {
		return &toolStream{tools: ts, p: &ollamaCalls{p: tools.NewParser(gt.Text(), ts)}}
	}
	tag := "{"
	for _, t := range toolTags {
		if strings.Contains(tmpl, t) {
			tag = t
			break
		}
	}
	return &toolStream{tools: ts, p: &ollamaCalls{p: tools.NewParserWithTag(ts, tag)}}
}

// add takes the next piece of the reply's content and returns the content
// to pass on and the calls completed by it, each with an id of Ollama's
// form.
func (t *toolStream) add(text string) (content string, calls []api.ToolCall) {
	if t == nil {
		return text, nil
	}
	if text == "" {
		return "", nil
	}
	calls, content = t.p.Add(text)
	for i := range calls {
		calls[i].ID = toolCallID()
	}
	if t.calls > 0 { // after a call
		content = strings.TrimLeftFunc(content, unicode.IsSpace)
	}
	t.calls += len(calls)
	content = t.space + content
	end := len(strings.TrimRightFunc(content, unicode.IsSpace))
	content, t.space = content[:end], content[end:]
	if len(calls) > 0 {
		t.space = ""
	}
	return content, calls
}

// flush returns the text held back at the end of a reply without calls:
// what looked like the start of a call but never became one (a tag and
// what followed it, or the start of a tag) is content, as the model wrote
// it, and so is the whitespace at the end. Ollama's chat handler drops a
// tag's text that does not parse; folio keeps the reply.
func (t *toolStream) flush() string {
	if t == nil || t.calls > 0 {
		return ""
	}
	return t.space + t.p.held()
}

// toolCallID is a call's id as Ollama makes them: "call_" and eight
// lower-case letters or digits.
func toolCallID() string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := []byte("call_--------")
	for i := len("call_"); i < len(b); i++ {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return string(b)
}

// called reports whether the reply made any tool call.
func (t *toolStream) called() bool { return t != nil && t.calls > 0 }

// oaiToolCalls converts calls to OpenAI's form: arguments as JSON text and
// an id per call (OpenAI's clients answer each call by its id).
func oaiToolCalls(calls []api.ToolCall) []oaiToolCall {
	var out []oaiToolCall
	for _, c := range calls {
		var o oaiToolCall
		o.ID = c.ID
		if o.ID == "" {
			o.ID = toolCallID()
		}
		o.Type, o.Function.Name = "function", c.Function.Name
		args, err := json.Marshal(c.Function.Arguments)
		if err != nil {
			args = []byte("{}")
		}
		o.Function.Arguments = string(args)
		out = append(out, o)
	}
	return out
}
