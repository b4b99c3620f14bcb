package server

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/ollama/ollama/api"
)

// gpt-oss writes its replies in OpenAI's harmony format: a reply is one or
// more messages, each a header naming its channel (and, for a tool call,
// its recipient) and a body:
//
//	<|channel|>analysis<|message|>…<|end|>
//	<|start|>assistant<|channel|>final<|message|>…<|return|>
//	<|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
//
// (the recipient may also come first: " to=functions.NAME<|channel|>commentary json",
// as the chat template writes calls back). The analysis channel is the
// thinking, the final channel the content, and a commentary message to a
// function of the request's tools a tool call; a commentary message to no
// one (a preamble) is content. <|return|> and <|call|> end the generation, so the last message
// ends with the reply. Text that does not parse as harmony stays content,
// as the model wrote it.

// Harmony's marks. <|start|>, <|channel|>, <|message|>, <|constrain|>
// and (in a vocabulary with <|return|> and <|call|>) <|end|> decode as
// text (the tokenizer's harmonyMarks), as llama.cpp renders them.
const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hConstrain = "<|constrain|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
	// harmonyFinal opens the final channel: a prompt ending with it
	// (closeThought's, for a constrained reply) is answered with content.
	harmonyFinal = "<|channel|>final" + hMessage
)

// harmonyEnds end a message's body; <|start|> also begins the next message
// of a model that left out <|end|>.
var harmonyEnds = []string{hEnd, hCall, hReturn, hStart}

// maxHarmonyHeader bounds a header: longer text before <|message|> is not
// harmony, and stays content.
const maxHarmonyHeader = 256

// isHarmony reports whether a chat template writes harmony (gpt-oss's,
// in Jinja or Ollama's Go syntax).
func isHarmony(tmpl string) bool {
	return strings.Contains(tmpl, hChannel) && strings.Contains(tmpl, hStart+"assistant")
}

// harmonyEffort is the reasoning_effort a harmony template renders for a
// think option: its level ("low", "medium", "high"; true is "medium").
// gpt-oss always reasons: false is the least, "low".
func harmonyEffort(think *api.ThinkValue) string {
	if think != nil && !think.Bool() {
		return "low"
	}
	return think.String()
}

// harmonyPhase is where a harmonyStream is in a reply.
type harmonyPhase uint8

const (
	hBetween harmonyPhase = iota // after a message: only <|start|> (or whitespace) may follow
	hHeader                      // reading a header, up to <|message|>
	hBody                        // reading a body
	hRaw                         // the reply stopped being harmony: the rest is content
)

// harmonyStream splits a harmony reply into content, thinking and tool
// calls as it streams: thinking and content as they come (what may be the
// start of a mark held back), each call when its message ends.
type harmonyStream struct {
	phase   harmonyPhase
	held    string // text not yet passed on
	raw     string // the current message as written, for a message that does not parse
	channel string // the current message's channel
	to      string // its recipient: a function's name for a call
	args    strings.Builder
	noThink bool      // drop the thinking (the request said think false)
	tools   api.Tools // the request's: a call names one of them
	calls   int
}

// newHarmonyStream starts a reply to prompt: after "<|start|>assistant" it
// opens with a header; after an opened final channel (or anything else: a
// prefilled answer it continues) with content.
func newHarmonyStream(prompt string, noThink bool) *harmonyStream {
	h := &harmonyStream{noThink: noThink}
	switch {
	case strings.HasSuffix(prompt, hStart+"assistant"):
		h.phase = hHeader
	case strings.HasSuffix(prompt, hChannel+"analysis"+hMessage):
		h.phase, h.channel = hBody, "analysis"
	default:
		h.phase, h.channel = hBody, "final"
	}
	return h
}

// add takes the next piece of the reply.
func (h *harmonyStream) add(text string) (content, thinking string, calls []api.ToolCall) {
	h.held += text
	var c, t strings.Builder
	for h.step(&c, &t, &calls) {
	}
	return c.String(), h.thought(t.String()), calls
}

// flush ends the reply: a message cut short by the end of the generation
// (by <|return|> or <|call|>, which decode to nothing) ends there.
func (h *harmonyStream) flush() (content, thinking string, calls []api.ToolCall) {
	var c, t strings.Builder
	switch h.phase {
	case hHeader:
		if strings.TrimSpace(h.raw+h.held) != "" {
			c.WriteString(h.raw + h.held)
		}
	case hBody:
		h.body(h.held, &c, &t)
		h.raw += h.held
		h.endMessage(&c, &calls)
	case hBetween:
	case hRaw:
		c.WriteString(h.held)
	}
	h.held = ""
	return c.String(), h.thought(t.String()), calls
}

func (h *harmonyStream) thought(t string) string {
	if h.noThink {
		return ""
	}
	return t
}

// called reports whether the reply made a tool call.
func (h *harmonyStream) called() bool { return h != nil && h.calls > 0 }

// step moves what it can of held on and reports whether it changed phase.
func (h *harmonyStream) step(c, t *strings.Builder, calls *[]api.ToolCall) bool {
	switch h.phase {
	case hRaw:
		c.WriteString(h.held)
		h.held = ""
		return false
	case hBetween:
		rest := strings.TrimLeftFunc(h.held, unicode.IsSpace)
		switch {
		case strings.HasPrefix(rest, hStart):
			h.held, h.raw, h.phase = rest[len(hStart):], hStart, hHeader
			return true
		case strings.HasPrefix(hStart, rest): // whitespace, or the start of <|start|>
			return false
		}
		h.phase = hRaw
		return true
	case hHeader:
		i := strings.Index(h.held, hMessage)
		if i < 0 {
			if len(h.raw)+len(h.held) > maxHarmonyHeader {
				h.toRaw()
				return true
			}
			return false
		}
		header := h.held[:i]
		h.raw += h.held[:i+len(hMessage)]
		h.held = h.held[i+len(hMessage):]
		if !h.header(header) {
			h.toRaw()
			return true
		}
		h.phase = hBody
		return true
	}
	// hBody
	end, at := "", -1
	for _, e := range harmonyEnds {
		if i := strings.Index(h.held, e); i >= 0 && (at < 0 || i < at) {
			end, at = e, i
		}
	}
	if at < 0 {
		keep := 0
		for _, e := range harmonyEnds {
			keep = max(keep, partialSuffix(h.held, e))
		}
		part := h.held[:len(h.held)-keep]
		h.body(part, c, t)
		h.raw += part
		h.held = h.held[len(part):]
		return false
	}
	h.body(h.held[:at], c, t)
	h.raw += h.held[:at]
	h.held = h.held[at:]
	if end != hStart {
		h.held = h.held[len(end):]
	}
	h.endMessage(c, calls)
	if h.phase != hRaw {
		h.phase = hBetween
	}
	return true
}

// header reads a message's header (what precedes <|message|>, after
// <|start|>): an optional role "assistant", the channel, and a recipient.
func (h *harmonyStream) header(s string) bool {
	s = strings.TrimPrefix(s, "assistant")
	h.channel, h.to = "", ""
	s = strings.ReplaceAll(s, hConstrain, " ")
	before, after, ok := strings.Cut(s, hChannel)
	if !ok || strings.Contains(after, "<|") {
		return false
	}
	words := append(strings.Fields(before), strings.Fields(after)...)
	if f := strings.Fields(after); len(f) > 0 {
		h.channel = f[0]
	}
	for _, w := range words {
		if to, ok := strings.CutPrefix(w, "to="); ok {
			h.to = to
		}
	}
	switch h.channel {
	case "analysis", "final":
		return h.to == ""
	case "commentary":
		return h.to == "" || strings.HasPrefix(h.to, "functions.")
	}
	return false
}

// body passes on a piece of the current message's body.
func (h *harmonyStream) body(s string, c, t *strings.Builder) {
	switch {
	case h.to != "":
		h.args.WriteString(s)
	case h.channel == "analysis":
		t.WriteString(s)
	default: // final, or a preamble on commentary
		c.WriteString(s)
	}
}

// endMessage ends the current message: a call's arguments become the call,
// or, when they are not a JSON object or the function is not one of the
// request's tools, the message's text is content.
func (h *harmonyStream) endMessage(c *strings.Builder, calls *[]api.ToolCall) {
	defer func() { h.raw, h.to, h.channel = "", "", ""; h.args.Reset() }()
	if h.to == "" {
		return
	}
	name := strings.TrimPrefix(h.to, "functions.")
	args := api.NewToolCallFunctionArguments()
	raw := bytes.TrimSpace([]byte(h.args.String()))
	if !slices.ContainsFunc(h.tools, func(t api.Tool) bool { return t.Function.Name == name }) ||
		len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &args) != nil {
		c.WriteString(h.raw)
		h.phase = hRaw
		return
	}
	*calls = append(*calls, api.ToolCall{ID: toolCallID(), Function: api.ToolCallFunction{
		Name: name, Arguments: args, Index: h.calls}})
	h.calls++
}

// toRaw gives up on harmony: the current message as written, and all that
// follows, is content.
func (h *harmonyStream) toRaw() {
	h.held = h.raw + h.held
	h.raw, h.phase = "", hRaw
}
