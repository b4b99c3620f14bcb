package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// testTemplates are small chat templates for tiny-qwen2's weights: one
// that renders tools (calls are bare JSON objects, as Llama 3.1's), one
// that thinks (its prompt opens the thought, as DeepSeek-R1's does, unless
// enable_thinking is false, which closes an empty one, as Qwen3's does).
var testTemplates = map[string]string{
	"tiny-tools": `{% if tools %}<|tools|>{{ tools | tojson }}{{ '\n' }}{% endif %}` +
		`{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% if m.tool_calls %}{{ m.tool_calls | tojson }}{% endif %}{{ '\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}<|assistant|>{% endif %}`,
	"tiny-think": `{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{{ '\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}<|assistant|>{% if enable_thinking is defined and not enable_thinking %}` +
		`<think>{{ '\n\n' }}</think>{{ '\n\n' }}{% else %}<think>{{ '\n' }}{% endif %}{% endif %}`,
}

// newTemplatedServer serves newTestLibrary's models and, under each name
// of testTemplates, tiny-qwen2's weights carrying that chat template.
func newTemplatedServer(t *testing.T) (*api.Client, string) {
	t.Helper()
	dir := newTestLibrary(t)
	for name, tmpl := range testTemplates {
		writeTinyQwen2(t, filepath.Join(dir, name+".gguf"), func(w *gguf.Writer) { w.Set("tokenizer.chat_template", tmpl) })
	}
	return serveLibrary(t, dir)
}

var callID = regexp.MustCompile(`^call_[a-z0-9]{8}$`)

// TestThinkingDefault: on a model whose template thinks, /api/chat and
// /api/generate split the thought out of the reply unless think is false,
// streamed or not, as Ollama does: the content is the answer alone (here
// empty: the prompt opens the thought and 12 tokens do not close it). A
// level is thinking too.
func TestThinkingDefault(t *testing.T) {
	c, _ := newTemplatedServer(t)
	ctx := context.Background()
	opts := map[string]any{"num_predict": 12, "temperature": 0}
	for _, tc := range []struct {
		name   string
		think  *api.ThinkValue
		thinks bool
	}{
		{"default", nil, true},
		{"a level", &api.ThinkValue{Value: "high"}, true},
		{"think false", &api.ThinkValue{Value: false}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, stream := range []bool{true, false} {
				var content, thinking strings.Builder
				err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-think", Messages: []api.Message{{Role: "user", Content: "answer in JSON"}},
					Think: tc.think, Stream: &stream, Options: opts}, func(r api.ChatResponse) error {
					content.WriteString(r.Message.Content)
					thinking.WriteString(r.Message.Thinking)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				checkThought(t, "chat, "+tc.name, stream, tc.thinks, content.String(), thinking.String())

				content.Reset()
				thinking.Reset()
				err = c.Generate(ctx, &api.GenerateRequest{Model: "tiny-think", Prompt: "answer in JSON", Think: tc.think, Stream: &stream,
					Options: opts}, func(r api.GenerateResponse) error {
					content.WriteString(r.Response)
					thinking.WriteString(r.Thinking)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				checkThought(t, "generate, "+tc.name, stream, tc.thinks, content.String(), thinking.String())
			}
		})
	}
}

// TestThinkingFormat: a format on a model whose prompt opens a thought
// still gets a reply that parses, as content: the thought is closed before
// the constrained answer, on /api/chat, /api/generate and /v1.
func TestThinkingFormat(t *testing.T) {
	c, base := newTemplatedServer(t)
	ctx := context.Background()
	schema := `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`
	opts := map[string]any{"num_predict": 60, "seed": 4}
	no := false
	var chat api.ChatResponse
	err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-think", Messages: []api.Message{{Role: "user", Content: "answer in JSON"}},
		Format: json.RawMessage(schema), Stream: &no, Options: opts}, func(r api.ChatResponse) error { chat = r; return nil })
	if err != nil || !json.Valid([]byte(chat.Message.Content)) || chat.Message.Thinking != "" {
		t.Errorf("chat: %v, content %q, thinking %q; want the JSON as content", err, chat.Message.Content, chat.Message.Thinking)
	}
	var gen api.GenerateResponse
	err = c.Generate(ctx, &api.GenerateRequest{Model: "tiny-think", Prompt: "answer in JSON", Format: json.RawMessage(schema),
		Stream: &no, Options: opts}, func(r api.GenerateResponse) error { gen = r; return nil })
	if err != nil || !json.Valid([]byte(gen.Response)) || gen.Thinking != "" {
		t.Errorf("generate: %v, response %q, thinking %q; want the JSON as the response", err, gen.Response, gen.Thinking)
	}
	var oai struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning"`
			} `json:"message"`
		} `json:"choices"`
	}
	postJSON(t, base+"/v1/chat/completions", `{"model":"tiny-think","messages":[{"role":"user","content":"answer in JSON"}],"seed":4,`+
		`"max_tokens":60,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":`+schema+`}}}`, &oai)
	if m := oai.Choices[0].Message; !json.Valid([]byte(m.Content)) || m.Reasoning != "" {
		t.Errorf("/v1: %+v; want the JSON as content", m)
	}
}

func checkThought(t *testing.T, what string, stream, thinks bool, content, thinking string) {
	t.Helper()
	switch {
	case strings.Contains(content+thinking, "<think>"):
		t.Errorf("%s (stream %v): a tag in content %q or thinking %q", what, stream, content, thinking)
	case thinks && (thinking == "" || content != ""):
		t.Errorf("%s (stream %v): content %q, thinking %q; want the thought alone", what, stream, content, thinking)
	case !thinks && (thinking != "" || content == ""):
		t.Errorf("%s (stream %v): content %q, thinking %q; want the answer alone", what, stream, content, thinking)
	}
}

// TestThinkingRefused: think (true or a level) on a model whose template
// does not think is a 400 with Ollama's message, on /api/chat,
// /api/generate and /v1/chat/completions (reasoning_effort); think false
// is accepted.
func TestThinkingRefused(t *testing.T) {
	c, base := newTemplatedServer(t)
	ctx := context.Background()
	no := false
	opts := map[string]any{"num_predict": 2}
	for _, think := range []any{true, "low"} {
		tv := &api.ThinkValue{Value: think}
		err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-qwen2", Messages: []api.Message{{Role: "user", Content: "hi"}}, Think: tv,
			Stream: &no, Options: opts}, func(api.ChatResponse) error { return nil })
		checkRefused(t, "chat, think "+string(mustJSON(think)), err, `"tiny-qwen2" does not support thinking`)
		err = c.Generate(ctx, &api.GenerateRequest{Model: "tiny-qwen2", Prompt: "hi", Think: tv, Stream: &no, Options: opts},
			func(api.GenerateResponse) error { return nil })
		checkRefused(t, "generate, think "+string(mustJSON(think)), err, `"tiny-qwen2" does not support thinking`)
	}
	err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-qwen2", Messages: []api.Message{{Role: "user", Content: "hi"}},
		Think: &api.ThinkValue{Value: false}, Stream: &no, Options: opts}, func(api.ChatResponse) error { return nil })
	if err != nil {
		t.Errorf("think false: %v", err)
	}
	status, _, data := post(t, base+"/v1/chat/completions", `{"model":"stories260k","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"low"}`)
	if status != 400 || !strings.Contains(string(data), `"param":"reasoning_effort"`) || !strings.Contains(string(data), "does not support thinking") {
		t.Errorf("/v1 reasoning_effort on a model that does not think: %d %s", status, data)
	}
}

func checkRefused(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var se api.StatusError
	if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, msg) {
		t.Errorf("%s: %v; want a 400 saying %s", what, err, msg)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestOpenAIReasoningDefault: /v1/chat/completions follows Ollama's
// compatibility layer: no reasoning_effort is the model's default (a model
// that thinks thinks: message.reasoning, content clean), "none" is think
// false.
func TestOpenAIReasoningDefault(t *testing.T) {
	_, base := newTemplatedServer(t)
	type reply struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning"`
			} `json:"message"`
		} `json:"choices"`
	}
	body := `{"model":"tiny-think","messages":[{"role":"user","content":"answer in JSON"}],"temperature":0,"max_tokens":12`
	var r reply
	postJSON(t, base+"/v1/chat/completions", body+`}`, &r)
	if m := r.Choices[0].Message; m.Reasoning == "" || m.Content != "" || strings.Contains(m.Reasoning, "<think>") {
		t.Errorf("default: %+v; want the reasoning alone", m)
	}
	var none reply
	postJSON(t, base+"/v1/chat/completions", body+`,"reasoning_effort":"none"}`, &none)
	if m := none.Choices[0].Message; m.Reasoning != "" || m.Content == "" {
		t.Errorf("reasoning_effort none: %+v; want the content alone", m)
	}
}

// TestToolsRefused: tools for a model whose template does not render them
// are a 400 saying it "does not support tools", as Ollama's, on /api/chat
// and the OpenAI endpoints (naming the tools field).
func TestToolsRefused(t *testing.T) {
	c, base := newTemplatedServer(t)
	no := false
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Messages: []api.Message{{Role: "user", Content: "weather?"}},
		Tools: weatherToolsAPI(), Stream: &no}, func(api.ChatResponse) error { return nil })
	checkRefused(t, "/api/chat", err, "tiny-qwen2 does not support tools")
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"tiny-qwen2","messages":[{"role":"user","content":"weather?"}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`},
		{"/v1/responses", `{"model":"tiny-qwen2","input":"weather?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			status, _, data := post(t, base+tc.path, tc.body)
			if status != 400 || !strings.Contains(string(data), `"param":"tools"`) || !strings.Contains(string(data), "does not support tools") {
				t.Errorf("%s: %d %s", tc.path, status, data)
			}
		})
	}
}

// TestToolCallWhitespace: a forced call at temperature 1 (the format
// grammar lets a reply start with whitespace) comes back as one call with
// an id of Ollama's form and no content at all, whatever the seed.
func TestToolCallWhitespace(t *testing.T) {
	c, _ := newTemplatedServer(t)
	no := false
	for seed := range 8 {
		var content string
		var calls []api.ToolCall
		err := c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-tools", Messages: []api.Message{{Role: "user", Content: "weather?"}},
			Tools: weatherToolsAPI(), Format: json.RawMessage(weatherSchema), Stream: &no,
			Options: map[string]any{"temperature": 1, "seed": seed, "num_predict": 400}}, func(r api.ChatResponse) error {
			content += r.Message.Content
			calls = append(calls, r.Message.ToolCalls...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if content != "" || len(calls) != 1 || !callID.MatchString(calls[0].ID) {
			t.Errorf("seed %d: content %q, calls %+v; want one call with an id and no content", seed, content, calls)
		}
	}
}

// TestJinjaPrefill: a conversation that ends with an assistant message is
// rendered so that the model continues that message, under Jinja templates
// as under Ollama's Go ones (Qwen 2.5's and Qwen3's real templates here):
// cut after its content, neither closed nor followed by a new turn.
func TestJinjaPrefill(t *testing.T) {
	dir := filepath.Join(fixtures.Shared(t), "templates")
	msgs := []api.Message{{Role: "user", Content: "What is 2+2?"}, {Role: "assistant", Content: "The answer is"}}
	for _, tc := range []struct{ file, want string }{
		{"Qwen-Qwen2.5-7B-Instruct.jinja", "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n" +
			"<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\nThe answer is"},
		{"Qwen-Qwen3-0.6B.jinja", "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nThe answer is"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			tmpl, err := os.ReadFile(filepath.Join(dir, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			c, _ := newTestServer(t, func(w *gguf.Writer) { w.Set("tokenizer.chat_template", string(tmpl)) })
			no := false
			var got string
			err = c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Messages: msgs, Stream: &no, DebugRenderOnly: true},
				func(r api.ChatResponse) error { got = r.DebugInfo.RenderedTemplate; return nil })
			if err != nil || got != tc.want {
				t.Errorf("%s: %q, %v\nwant %q", tc.file, got, err, tc.want)
			}
		})
	}
}

// TestShowToolsAndThinking: /api/show lists tools and thinking as requests
// find them: from what the template renders, not from words in its text.
func TestShowToolsAndThinking(t *testing.T) {
	c, _ := newTemplatedServer(t)
	for model, want := range map[string]string{"tiny-tools": "completion tools", "tiny-think": "completion thinking", "tiny-qwen2": "completion"} {
		r, err := c.Show(context.Background(), &api.ShowRequest{Model: model})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(r.Capabilities); got != "["+want+"]" {
			t.Errorf("%s: capabilities %s, want [%s]", model, got, want)
		}
	}
	c, _ = newTestServer(t, func(w *gguf.Writer) {
		w.Set("tokenizer.chat_template", "Answer without tools.{% for m in messages %}{{ m.content }}{% endfor %}")
	})
	r, err := c.Show(context.Background(), &api.ShowRequest{Model: "tiny-qwen2"})
	if err != nil || fmt.Sprint(r.Capabilities) != "[completion]" {
		t.Errorf("a template that names tools in its text only: %v, %v; want [completion]", r.Capabilities, err)
	}
}

func weatherToolsAPI() api.Tools {
	var t api.Tool
	t.Type, t.Function.Name = "function", "get_weather"
	return api.Tools{t}
}
