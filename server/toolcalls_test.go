package server

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

func weatherTools() api.Tools {
	var t api.Tool
	t.Type, t.Function.Name = "function", "get_weather"
	return api.Tools{t}
}

// toolStream splits streamed text into content and calls under the tag of
// the template, whatever the chunking.
func TestToolStream(t *testing.T) {
	qwen := &loaded{template: "{% for m in messages %}{% if m.tool_calls %}<tool_call>\n{{ m.tool_calls[0] | tojson }}\n</tool_call>{% endif %}{% endfor %}"}
	llama := &loaded{template: "{% for m in messages %}{{ m.content }}{% endfor %}"}
	var goConf modelConf // a Modelfile TEMPLATE: its tag is the text before the calls
	goConf.Template = `{{ range .Messages }}{{ .Content }}{{ if .ToolCalls }}[CALL] {{ range .ToolCalls }}{{ json .Function }}{{ end }}{{ end }}{{ end }}`
	for _, tc := range []struct {
		name    string
		l       *loaded
		conf    modelConf
		text    string
		content string
		calls   int
	}{
		{"qwen tag", qwen, modelConf{}, "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "Let me check.", 1},
		{"bare JSON", llama, modelConf{}, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", "", 1},
		{"text first", llama, modelConf{}, "It is {sunny} today", "It is {sunny} today", 0},
		{"Go template tag", llama, goConf, "ok [CALL] {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}", "ok", 1},
		{"unknown tool", llama, modelConf{}, "{\"name\": \"nope\", \"arguments\": {}}", "{\"name\": \"nope\", \"arguments\": {}}", 0},
	} {
		for _, step := range []int{1, 3, 1000} {
			ts := newToolStream(tc.l, tc.conf, weatherTools())
			var content strings.Builder
			var calls []api.ToolCall
			for i := 0; i < len(tc.text); i += step {
				c, k := ts.add(tc.text[i:min(i+step, len(tc.text))])
				content.WriteString(c)
				calls = append(calls, k...)
			}
			content.WriteString(ts.flush())
			if strings.TrimSpace(content.String()) != tc.content || len(calls) != tc.calls {
				t.Errorf("%s, chunks of %d: content %q, %d calls; want %q, %d", tc.name, step, content.String(), len(calls), tc.content, tc.calls)
			}
			for _, call := range calls {
				if call.Function.Name != "get_weather" {
					t.Errorf("%s: call %+v", tc.name, call)
				}
			}
		}
	}
	if newToolStream(llama, modelConf{}, nil) != nil {
		t.Error("a request without tools got a tool parser")
	}
}
