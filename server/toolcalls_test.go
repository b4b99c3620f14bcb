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
	// GLM-4.5's template, cut to its arguments' tags.
	glm := &loaded{template: `{{ '<tool_call>' + tc.name }}{% for k, v in tc.arguments.items() %}<arg_key>{{ k }}</arg_key><arg_value>{{ v }}</arg_value>{% endfor %}`}
	glmCall := "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
	// Qwen3-Coder's template, cut to its call's tags.
	coder := &loaded{template: `{{- '<tool_call>\n<function=' + tool_call.name + '>\n' }}{{- '<parameter=' + args_name + '>\n' }}`}
	coderCall := "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>"
	// MiniMax-M2's template, cut to its block's tags; one block of two calls.
	minimax := &loaded{template: `{%- set toolcall_begin_token = '<minimax:tool_call>' -%}{{- '<invoke name="' + tool_call.name + '">' }}`}
	mmCall := "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n<parameter name=\"days\">2</parameter>\n</invoke>\n</minimax:tool_call>"
	mmTwo := "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n" +
		"<invoke name=\"get_weather\">\n<parameter name=\"city\">Rome</parameter>\n</invoke>\n</minimax:tool_call>"
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
		{"glm", glm, modelConf{}, "Checking.\n" + glmCall, "Checking.", 1, `{"city":"Paris","days":2}`},
		{"glm two calls", glm, modelConf{}, glmCall + "\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n</tool_call>", "", 2, `{"city":"Paris","days":2}`},
		{"glm no arguments", glm, modelConf{}, "<tool_call>get_weather\n</tool_call>", "", 1, `{}`},
		{"glm unknown tool", glm, modelConf{}, "<tool_call>nope\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>",
			"<tool_call>nope\n<arg_key>a</arg_key><arg_value>1</arg_value></tool_call>", 0, ""},
		{"glm JSON in the tag", glm, modelConf{}, "<tool_call>{\"name\": \"get_weather\"}</tool_call>", "<tool_call>{\"name\": \"get_weather\"}</tool_call>", 0, ""},
		{"glm unfinished", glm, modelConf{}, "ok <tool_call>get_weather\n<arg_key>ci", "ok <tool_call>get_weather\n<arg_key>ci", 0, ""},
		{"qwen3-coder", coder, modelConf{}, "Checking.\n\n" + coderCall, "Checking.", 1, `{"city":"Paris","days":2}`},
		{"qwen3-coder two calls", coder, modelConf{}, coderCall + "\n" + coderCall, "", 2, `{"city":"Paris","days":2}`},
		{"qwen3-coder no parameters", coder, modelConf{}, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>", "", 1, `{}`},
		{"qwen3-coder unknown tool", coder, modelConf{}, "<tool_call>\n<function=nope>\n</function>\n</tool_call>",
			"<tool_call>\n<function=nope>\n</function>\n</tool_call>", 0, ""},
		{"qwen3-coder JSON in the tag", coder, modelConf{}, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>",
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>", 0, ""},
		{"minimax-m2", minimax, modelConf{}, "I will look it up.\n" + mmCall, "I will look it up.", 1, `{"city":"Paris","days":2}`},
		{"minimax-m2 two calls in a block", minimax, modelConf{}, mmTwo, "", 2, `{"city":"Paris"}`},
		{"minimax-m2 blocks then text", minimax, modelConf{}, mmCall + "\n" + mmTwo + "\nDone.", "Done.", 3, `{"city":"Paris","days":2}`},
		{"minimax-m2 no parameters", minimax, modelConf{}, "<minimax:tool_call>\n<invoke name=\"get_weather\">\n</invoke>\n</minimax:tool_call>", "", 1, `{}`},
		{"minimax-m2 unknown tool", minimax, modelConf{}, "<minimax:tool_call>\n<invoke name=\"nope\">\n</invoke>\n</minimax:tool_call>",
			"<minimax:tool_call>\n<invoke name=\"nope\">\n</invoke>\n</minimax:tool_call>", 0, ""},
		{"minimax-m2 empty block", minimax, modelConf{}, "<minimax:tool_call>\n</minimax:tool_call>", "<minimax:tool_call>\n</minimax:tool_call>", 0, ""},
		{"minimax-m2 unfinished", minimax, modelConf{}, "ok <minimax:tool_call>\n<invoke name=\"get_we", "ok <minimax:tool_call>\n<invoke name=\"get_we", 0, ""},
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

// TestGLMCallValues: a value is a string where the tool's parameter is
// one, whatever it looks like; elsewhere JSON where it parses (numbers,
// booleans, arrays, objects), else a string; keys keep their order.
func TestGLMCallValues(t *testing.T) {
	var tool api.Tool
	tool.Type, tool.Function.Name = "function", "search"
	tool.Function.Parameters.Properties = api.NewToolPropertiesMap()
	tool.Function.Parameters.Properties.Set("query", api.ToolProperty{Type: api.PropertyType{"string"}})
	tool.Function.Parameters.Properties.Set("limit", api.ToolProperty{Type: api.PropertyType{"integer"}})
	p := &taggedCalls{callMaker: callMaker{tools: api.Tools{tool}}, read: glmRead}
	text := "<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>42</arg_value>\n<arg_key>limit</arg_key>\n<arg_value>5</arg_value>\n" +
		"<arg_key>filters</arg_key>\n<arg_value>{\"lang\": [\"en\", \"fr\"]}</arg_value>\n<arg_key>note</arg_key>\n<arg_value>not JSON: {x}</arg_value>\n</tool_call>"
	calls, content := p.Add(text)
	if content != "" || len(calls) != 1 {
		t.Fatalf("content %q, %d calls", content, len(calls))
	}
	got, _ := json.Marshal(calls[0].Function.Arguments)
	if want := `{"query":"42","limit":5,"filters":{"lang":["en","fr"]},"note":"not JSON: {x}"}`; string(got) != want {
		t.Errorf("arguments %s, want %s", got, want)
	}
}

// TestQwenXMLCallValues: Qwen3-Coder's values by the tool's types: a
// string kept whole (its inner newlines too, the template's own around it
// dropped), Python's True a boolean, a number, a JSON object.
func TestQwenXMLCallValues(t *testing.T) {
	p := &taggedCalls{callMaker: callMaker{tools: api.Tools{writeFileTool("content", "string", "append", "boolean", "mode", "integer")}}, read: qwenXMLRead}
	text := "<tool_call>\n<function=write_file>\n<parameter=content>\nline 1\n  line 2\n</parameter>\n<parameter=append>\nTrue\n</parameter>\n" +
		"<parameter=mode>\n420\n</parameter>\n<parameter=meta>\n{\"a\": [1, 2]}\n</parameter>\n</function>\n</tool_call>"
	oneWriteFile(t, p, text, 5, "", `{"content":"line 1\n  line 2","append":true,"mode":420,"meta":{"a":[1,2]}}`)
}

// writeFileTool is a tool write_file whose parameters are the pairs of
// names and types in kv.
func writeFileTool(kv ...string) api.Tool {
	var tool api.Tool
	tool.Type, tool.Function.Name = "function", "write_file"
	tool.Function.Parameters.Properties = api.NewToolPropertiesMap()
	for i := 0; i+1 < len(kv); i += 2 {
		tool.Function.Parameters.Properties.Set(kv[i], api.ToolProperty{Type: api.PropertyType{kv[i+1]}})
	}
	return tool
}

// feedCalls feeds text to p in pieces of step bytes and returns the
// calls it made and the content it released.
func feedCalls(p callParser, text string, step int) ([]api.ToolCall, string) {
	var calls []api.ToolCall
	var content strings.Builder
	for i := 0; i < len(text); i += step {
		c, s := p.Add(text[i:min(i+step, len(text))])
		calls = append(calls, c...)
		content.WriteString(s)
	}
	return calls, content.String()
}

// oneWriteFile feeds text to p in pieces of step bytes and checks that
// it made content and one call of write_file with arguments args (JSON).
func oneWriteFile(t *testing.T, p *taggedCalls, text string, step int, content, args string) {
	t.Helper()
	calls, got := feedCalls(p, text, step)
	if got != content || len(calls) != 1 || calls[0].Function.Name != "write_file" {
		t.Fatalf("content %q, calls %+v", got, calls)
	}
	if a, _ := json.Marshal(calls[0].Function.Arguments); string(a) != args {
		t.Errorf("arguments %s, want %s", a, args)
	}
}

// TestMinimaxCallValues: MiniMax-M2's values by the tool's types, as its
// template writes them (a string as it is, anything else as JSON): a
// string kept whole, newlines and all, though it looks like a number; a
// boolean, a number and an object as JSON.
func TestMinimaxCallValues(t *testing.T) {
	tool := writeFileTool("path", "string", "content", "string", "append", "boolean")
	p := &taggedCalls{callMaker: callMaker{tools: api.Tools{tool}}, open: mmCall, close: mmCallEnd, read: minimaxRead}
	text := "<think>\nThe user wants a file.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"write_file\">\n<parameter name=\"path\">42</parameter>\n" +
		"<parameter name=\"content\">line 1\n  line 2\n</parameter>\n<parameter name=\"append\">false</parameter>\n" +
		"<parameter name=\"meta\">{\"mode\": 420}</parameter>\n</invoke>\n</minimax:tool_call>"
	oneWriteFile(t, p, text, 7, "<think>\nThe user wants a file.\n</think>\n\n", `{"path":"42","content":"line 1\n  line 2\n","append":false,"meta":{"mode":420}}`)
}
