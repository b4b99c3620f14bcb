package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

// Replies of gpt-oss as its tokens decode (harmony's marks as text, the
// <|return|> or <|call|> that ends the generation as nothing).
const (
	harmonyCallReply = "<|channel|>analysis<|message|>The user asks for the weather in Paris. Use get_weather.<|end|>" +
		"<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}"
	harmonyAnswerReply = "<|channel|>analysis<|message|>A greeting; answer briefly.<|end|>" +
		"<|start|>assistant<|channel|>final<|message|>Hello! How can I help?"
)

// harmonySplit runs a reply through a harmonyStream in pieces of n bytes
// (every mark cut somewhere), and gathers what comes out, in order.
func harmonySplit(prompt, reply string, n int) (content, thinking string, calls []api.ToolCall, order string) {
	h := newHarmonyStream(prompt, false)
	var tool api.Tool
	tool.Type, tool.Function.Name = "function", "get_weather"
	h.tools = api.Tools{tool}
	var c, t strings.Builder
	note := func(cs, ts string, cl []api.ToolCall) {
		if ts != "" && !strings.HasSuffix(order, "t") {
			order += "t"
		}
		if cs != "" && !strings.HasSuffix(order, "c") {
			order += "c"
		}
		for range cl {
			order += "f"
		}
		c.WriteString(cs)
		t.WriteString(ts)
		calls = append(calls, cl...)
	}
	for i := 0; i < len(reply); i += n {
		note(h.add(reply[i:min(i+n, len(reply))]))
	}
	note(h.flush())
	return c.String(), t.String(), calls, order
}

// TestHarmonySplit: a harmony reply's analysis channel is the thinking,
// its final channel the content and its commentary message to a function a
// call, in that order as they stream, whatever the pieces; text that does
// not parse (no channel, an unknown one, arguments that are not a JSON
// object, a recipient that is not a function of the request's tools) stays
// content, as written.
func TestHarmonySplit(t *testing.T) {
	const prompt = "<|start|>user<|message|>hi<|end|><|start|>assistant"
	cases := []struct {
		name, prompt, reply     string
		content, thinking, call string // call: name and arguments
		order                   string // t thinking, c content, f a call
	}{
		{"call", prompt, harmonyCallReply, "", "The user asks for the weather in Paris. Use get_weather.", `get_weather {"city":"Paris"}`, "tf"},
		{"answer", prompt, harmonyAnswerReply, "Hello! How can I help?", "A greeting; answer briefly.", "", "tc"},
		{"recipient first", prompt, "<|channel|>analysis<|message|>x<|end|><|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\":\"Rome\"}<|call|>",
			"", "x", `get_weather {"city":"Rome"}`, "tf"},
		{"preamble then call", prompt, "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather<|message|>{}",
			"Checking.", "", `get_weather {}`, "cf"},
		{"final ends with return", prompt, "<|channel|>final<|message|>Hi<|return|>", "Hi", "", "", "c"},
		{"constrained", prompt + harmonyFinal, `{"a":1}`, `{"a":1}`, "", "", "c"},
		{"no channel", prompt, "Hello there", "Hello there", "", "", "c"},
		{"unknown channel", prompt, "<|channel|>secret<|message|>x", "<|channel|>secret<|message|>x", "", "", "c"},
		{"bad arguments", prompt, "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather json<|message|>{\"city\":",
			"<|start|>assistant<|channel|>commentary to=functions.get_weather json<|message|>{\"city\":", "think", "", "tc"},
		{"not a tool", prompt, "<|channel|>commentary to=functions.f<|message|>{}", "<|channel|>commentary to=functions.f<|message|>{}", "", "", "c"},
		{"not a function", prompt, "<|channel|>commentary to=browser.search<|message|>{}", "<|channel|>commentary to=browser.search<|message|>{}", "", "", "c"},
		{"text after a message", prompt, "<|channel|>final<|message|>Hi<|end|>oops", "Hioops", "", "", "c"},
		{"header without message", prompt, "<|channel|>final", "<|channel|>final", "", "", "c"},
	}
	for _, tc := range cases {
		for _, n := range []int{1, 3, 7, 1 << 20} {
			content, thinking, calls, order := harmonySplit(tc.prompt, tc.reply, n)
			call := ""
			if len(calls) == 1 {
				args, _ := json.Marshal(calls[0].Function.Arguments)
				call = calls[0].Function.Name + " " + string(args)
				if !strings.HasPrefix(calls[0].ID, "call_") {
					t.Errorf("%s: call id %q", tc.name, calls[0].ID)
				}
			}
			if content != tc.content || thinking != tc.thinking || call != tc.call || len(calls) > 1 || order != tc.order {
				t.Errorf("%s, pieces of %d: content %q thinking %q calls %+v order %q; want %q %q %q %q",
					tc.name, n, content, thinking, calls, order, tc.content, tc.thinking, tc.call, tc.order)
			}
		}
	}
}

// TestHarmonyThinkOff: with think false the analysis channel is dropped,
// never content.
func TestHarmonyThinkOff(t *testing.T) {
	h := newHarmonyStream("<|start|>assistant", true)
	c, th, _ := h.add(harmonyAnswerReply)
	c2, th2, _ := h.flush()
	if c+c2 != "Hello! How can I help?" || th+th2 != "" {
		t.Errorf("content %q thinking %q", c+c2, th+th2)
	}
}
