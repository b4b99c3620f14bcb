package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
)

// TestTemplateCaps: tools and thinking are read from a model's chat
// template as Ollama reads them: real Jinja templates of
// ../shared/templates, and Go templates by the variables they name and
// the text around {{ .Thinking }}.
func TestTemplateCaps(t *testing.T) {
	dir := filepath.Join(fixtures.Shared(t), "templates")
	for _, tc := range []struct {
		file          string
		tools, thinks bool
	}{
		{"Qwen-Qwen3-0.6B.jinja", true, true},
		{"Qwen-QwQ-32B.jinja", true, true},
		{"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", false, true},
		{"Qwen-Qwen2.5-7B-Instruct.jinja", true, false},
		{"meta-llama-Llama-3.1-8B-Instruct.jinja", true, false},
		{"mistralai-Mistral-Nemo-Instruct-2407.jinja", true, false},
		{"google-gemma-2-2b-it.jinja", false, false},
		{"microsoft-phi-4.jinja", false, false},
	} {
		data, err := os.ReadFile(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		c := capsOf(string(data))
		if c.tools != tc.tools || c.thinks() != tc.thinks || (c.thinks() && (c.thinkOpen != "<think>" || c.thinkClose != "</think>")) {
			t.Errorf("%s: %+v; want tools %v, thinking %v", tc.file, c, tc.tools, tc.thinks)
		}
	}
	for _, tc := range []struct {
		name, tmpl  string
		tools       bool
		open, close string
	}{
		{"Go, tools and thinking", `{{ if .Tools }}{{ .Tools }}{{ end }}{{ range .Messages }}{{ .Content }}` +
			`{{ if .Thinking }}<reason>{{ .Thinking }}</reason>{{ end }}{{ end }}`, true, "<reason>", "</reason>"},
		{"Go, neither", `{{ range .Messages }}<think>{{ .Content }}</think>{{ end }}`, false, "", ""},
		{"Jinja, tools as an attribute", `{% for m in messages %}{{ m.tools }}{% endfor %}`, false, "", ""},
		{"Jinja, tools in text only", `You have tools. {% for m in messages %}{{ m.content }}{% endfor %}`, false, "", ""},
		// Ministral 3 Reasoning's, cut to its thinking blocks and calls
		{"Jinja, Mistral's thinking", `{%- if tools %}[AVAILABLE_TOOLS]{{ tools|tojson }}[/AVAILABLE_TOOLS]{%- endif %}` +
			`{%- for block in message['content'] %}{%- if block['type'] == 'thinking' %}{{- '[THINK]' + block['thinking'] + '[/THINK]' }}{%- endif %}{%- endfor %}`,
			true, "[THINK]", "[/THINK]"},
		{"none", "", false, "", ""},
	} {
		c := capsOf(tc.tmpl)
		if c.tools != tc.tools || c.thinkOpen != tc.open || c.thinkClose != tc.close {
			t.Errorf("%s: %+v", tc.name, c)
		}
	}
}

// TestCheckCaps: a model that thinks thinks unless told think false, at
// any level; one that does not refuses think (true or a level) and tools
// it cannot render, with Ollama's messages.
func TestCheckCaps(t *testing.T) {
	thinker := templateCaps{tools: true, thinkOpen: "<think>", thinkClose: "</think>"}
	plain := templateCaps{}
	for _, tc := range []struct {
		name  string
		caps  templateCaps
		tools api.Tools
		think *api.ThinkValue
		want  any    // the think value rendered with; nil: none
		err   string // "" when accepted
	}{
		{"default on", thinker, nil, nil, true, ""},
		{"false stays", thinker, nil, &api.ThinkValue{Value: false}, false, ""},
		{"a level", thinker, weatherTools(), &api.ThinkValue{Value: "high"}, "high", ""},
		{"no think on a plain model", plain, nil, nil, nil, ""},
		{"false on a plain model", plain, nil, &api.ThinkValue{Value: false}, false, ""},
		{"true on a plain model", plain, nil, &api.ThinkValue{Value: true}, nil, `"m" does not support thinking`},
		{"a level on a plain model", plain, nil, &api.ThinkValue{Value: "low"}, nil, `"m" does not support thinking`},
		{"tools on a plain model", plain, weatherTools(), nil, nil, "m does not support tools"},
	} {
		got, err := checkCaps("m", tc.caps, tc.tools, tc.think)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) || statusOf(err) != 400 {
				t.Errorf("%s: %v; want a 400 saying %s", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case (got == nil) != (tc.want == nil) || (got != nil && got.Value != tc.want):
			t.Errorf("%s: think %+v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestThinkSplitter: thinking is told from the answer as Ollama's parser
// tells it, whatever the chunking: one thought at the start of the reply
// (or opened by the prompt), whitespace after either tag dropped, later
// tags left in the answer.
func TestThinkSplitter(t *testing.T) {
	open := thinkMode{open: "<think>", close: "</think>"}
	inside := open
	inside.inside = true
	for _, tc := range []struct {
		name              string
		mode              thinkMode
		text              string
		content, thinking string
	}{
		{"opened by the reply", open, "\n<think>\nhmm, json\n</think>\n\n{\"ok\":true}", `{"ok":true}`, "hmm, json\n"},
		{"Mistral's tags", thinkMode{open: "[THINK]", close: "[/THINK]"}, "[THINK]The user greets me.[/THINK]Hello!", "Hello!", "The user greets me."},
		{"opened by the prompt", inside, "\nhmm</think>answer", "answer", "hmm"},
		{"no thought", open, "  plain answer <think>", "  plain answer <think>", ""},
		{"a later tag is the answer's", open, "<think>a</think>b<think>c</think>", "b<think>c</think>", "a"},
		{"unclosed", inside, "still thinking", "", "still thinking"},
		{"a partial tag at the end", open, "<thi", "<thi", ""},
		{"not parsed", thinkMode{}, "<think>a</think>b", "<think>a</think>b", ""},
	} {
		for _, step := range []int{1, 2, 5, 1000} {
			s := newThinkSplitter(tc.mode)
			var content, thinking strings.Builder
			for i := 0; i < len(tc.text); i += step {
				c, th := s.add(tc.text[i:min(i+step, len(tc.text))])
				content.WriteString(c)
				thinking.WriteString(th)
			}
			c, th := s.flush()
			content.WriteString(c)
			thinking.WriteString(th)
			if content.String() != tc.content || thinking.String() != tc.thinking {
				t.Errorf("%s, chunks of %d: content %q, thinking %q; want %q, %q", tc.name, step,
					content.String(), thinking.String(), tc.content, tc.thinking)
			}
		}
	}
}

// TestToolStreamWhitespace: whitespace before (or after) a call is not
// content, whatever the chunking, and every call has an id of Ollama's
// form; a reply without calls keeps its whitespace.
func TestToolStreamWhitespace(t *testing.T) {
	qwen := &loaded{template: "{% if tools %}{{ tools | tojson }}{% endif %}<tool_call>"}
	bare := &loaded{template: "{% if tools %}{{ tools | tojson }}{% endif %}"}
	call := `{"name": "get_weather", "arguments": {"city": "Paris"}}`
	id := regexp.MustCompile(`^call_[a-z0-9]{8}$`)
	for _, tc := range []struct {
		name    string
		l       *loaded
		text    string
		content string
		calls   int
	}{
		{"blank lines before a tag", qwen, "\n\n<tool_call>\n" + call + "\n</tool_call>", "", 1},
		{"text, then blank lines, then a tag", qwen, "Let me check.\n\n<tool_call>\n" + call + "\n</tool_call>", "Let me check.", 1},
		{"grammar whitespace before a bare call", bare, "\n  " + call, "", 1},
		{"a space before a bare call, a newline after", bare, " " + call + "\n", "", 1},
		{"no call: whitespace kept", qwen, "Hello \n there\n\n", "Hello \n there\n\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{1, 3, 1000} {
				ts := newToolStream(tc.l, modelConf{}, weatherTools())
				var content strings.Builder
				var calls []api.ToolCall
				for i := 0; i < len(tc.text); i += step {
					c, k := ts.add(tc.text[i:min(i+step, len(tc.text))])
					content.WriteString(c)
					calls = append(calls, k...)
				}
				content.WriteString(ts.flush())
				if content.String() != tc.content || len(calls) != tc.calls {
					t.Errorf("%s, chunks of %d: content %q, %d calls; want %q, %d", tc.name, step, content.String(), len(calls), tc.content, tc.calls)
				}
				for _, c := range calls {
					if !id.MatchString(c.ID) {
						t.Errorf("%s: call id %q, want call_ and eight letters or digits", tc.name, c.ID)
					}
				}
			}
		})
	}
}

// TestRenderThinkLevel: a think level reaches Go templates as .ThinkLevel
// (true as "medium", as Ollama renders it) and Jinja ones as
// reasoning_effort beside enable_thinking.
func TestRenderThinkLevel(t *testing.T) {
	gt, ok, err := goTemplate(`{{ .Think }} {{ .ThinkLevel }}{{ range .Messages }}{{ .Content }}{{ end }}`, true)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	msgs := []api.Message{{Role: "user", Content: "."}}
	for _, tc := range []struct {
		think *api.ThinkValue
		want  string
	}{
		{&api.ThinkValue{Value: true}, "true medium."},
		{&api.ThinkValue{Value: "high"}, "true high."},
		{&api.ThinkValue{Value: false}, "false ."},
	} {
		got, err := renderGo(context.Background(), gt, msgs, nil, tc.think)
		if err != nil || got != tc.want {
			t.Errorf("Go, think %v: %q, %v; want %q", tc.think.Value, got, err, tc.want)
		}
	}
}

// TestContinueFinal: the cut after the last message's content, and the
// error that names what to change when the template does not write it.
func TestContinueFinal(t *testing.T) {
	out := "<u>hi</u><a>The answer is</a>"
	if got, err := continueFinal(out, "The answer is", "m"); err != nil || got != "<u>hi</u><a>The answer is" {
		t.Errorf("cut: %q, %v", got, err)
	}
	if got, err := continueFinal("<a>The answer is</a>", " The answer is\n", "m"); err != nil || got != "<a>The answer is" {
		t.Errorf("trimmed: %q, %v", got, err)
	}
	if _, err := continueFinal("<a>THE ANSWER</a>", "The answer", "m"); !errors.Is(err, errBadRequest) || !strings.Contains(err.Error(), "end the conversation with a user message") {
		t.Errorf("not written: %v", err)
	}
}
