package server

import (
	"encoding/json"
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
	// Mistral's templates, cut to what decides the parser; Granite's tag.
	nemo := &loaded{template: `{%- if message.tool_calls %}{{- "[TOOL_CALLS][" }}{{ tool_call.function|tojson }}{% endif %}`}
	devstral := &loaded{template: `{{- "[TOOL_CALLS]" + tool['function']['name'] + "[ARGS]" + arguments }}`}
	granite := &loaded{template: `respond only with <|tool_call|> followed by a JSON list of tools used.`}
	var phiConf modelConf // Phi-4-mini's calls, as an Ollama Modelfile TEMPLATE writes them back
	phiConf.Template = `{{ range .Messages }}{{ .Content }}{{ if .ToolCalls }}<|tool_call|>[{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}{{ end }}]<|/tool_call|>{{ end }}{{ end }}`
	// DeepSeek's template, cut to its calls mark; its V3/R1 call and V3.1's.
	deepseek := &loaded{template: `{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>'}}`}
	dsV3 := "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜>"
	dsV31 := "<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Rome\"}<｜tool▁call▁end｜>"
	for _, tc := range []struct {
		name    string
		l       *loaded
		conf    modelConf
		text    string
		content string
		calls   int
		args    string // the first call's arguments as JSON, when given
	}{
		{"qwen tag", qwen, modelConf{}, "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "Let me check.", 1, ""},
		{"bare JSON", llama, modelConf{}, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}", "", 1, ""},
		{"text first", llama, modelConf{}, "It is {sunny} today", "It is {sunny} today", 0, ""},
		{"Go template tag", llama, goConf, "ok [CALL] {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}", "ok", 1, ""},
		{"unknown tool", llama, modelConf{}, "{\"name\": \"nope\", \"arguments\": {}}", "{\"name\": \"nope\", \"arguments\": {}}", 0, ""},
		{"qwen tag, not a call", qwen, modelConf{}, "<tool_call>\nI cannot", "<tool_call>\nI cannot", 0, ""},
		{"start of a tag at the end", qwen, modelConf{}, "ok <tool_c", "ok <tool_c", 0, ""},
		{"mistral JSON array", nemo, modelConf{}, "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]", "", 2, `{"city":"Paris"}`},
		{"mistral ARGS", devstral, modelConf{}, "Checking.[TOOL_CALLS]get_weather[ARGS]{\"name\": \"Paris\", \"days\": 2}\n[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}", "Checking.", 2, `{"name":"Paris","days":2}`},
		{"mistral CALL_ID", devstral, modelConf{}, "[TOOL_CALLS]get_weather[CALL_ID]a1B2c3D4e[ARGS]{\"city\": \"Paris\"}", "", 1, `{"city":"Paris"}`},
		{"mistral unknown tool", devstral, modelConf{}, "[TOOL_CALLS]nope[ARGS]{}", "[TOOL_CALLS]nope[ARGS]{}", 0, ""},
		{"mistral bad JSON", nemo, modelConf{}, "[TOOL_CALLS][{\"name\": get_weather}] and more", "[TOOL_CALLS][{\"name\": get_weather}] and more", 0, ""},
		{"mistral prose after the mark", devstral, modelConf{}, "[TOOL_CALLS] is a token {x}", "[TOOL_CALLS] is a token {x}", 0, ""},
		{"granite", granite, modelConf{}, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "", 1, `{"city":"Paris"}`},
		{"deepseek V3", deepseek, modelConf{}, "Checking." + dsV3 + "<｜tool▁calls▁end｜>", "Checking.", 1, `{"city":"Paris"}`},
		{"deepseek two calls", deepseek, modelConf{}, dsV3 + "\n" + dsV31 + "<｜tool▁calls▁end｜>", "", 2, `{"city":"Paris"}`},
		{"deepseek V3.1", deepseek, modelConf{}, "<｜tool▁calls▁begin｜>" + dsV31 + "<｜tool▁calls▁end｜>", "", 1, `{"city":"Rome"}`},
		{"deepseek unknown tool", deepseek, modelConf{}, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜>",
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>nope<｜tool▁sep｜>{}<｜tool▁call▁end｜>", 0, ""},
		{"deepseek unfinished", deepseek, modelConf{}, "ok <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{",
			"ok <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{", 0, ""},
		{"deepseek prose after the mark", deepseek, modelConf{}, "<｜tool▁calls▁begin｜> is a token", "<｜tool▁calls▁begin｜> is a token", 0, ""},
		{"phi-4-mini", llama, phiConf, "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]<|/tool_call|>", "", 1, `{"city":"Rome"}`},
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
			if tc.args != "" && len(calls) > 0 {
				if got, _ := json.Marshal(calls[0].Function.Arguments); string(got) != tc.args {
					t.Errorf("%s, chunks of %d: arguments %s, want %s", tc.name, step, got, tc.args)
				}
			}
		}
	}
	if newToolStream(llama, modelConf{}, nil) != nil {
		t.Error("a request without tools got a tool parser")
	}
}
