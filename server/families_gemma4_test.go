package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
)

// gemma4Replies are scripted Gemma 4 replies, token by token, with its
// marks as text (its converter makes them user-defined tokens so that
// they render): a thought, then a call or an answer that ends with a
// stray close.
var gemma4Replies = map[string][]string{
	"gemma4-call":   {"<|channel>", "thought\nThe▁user▁wants▁the▁weather▁in▁Paris.", "<channel|>", "<|tool_call>", `call:get_weather{city:<|"|>Paris<|"|>}`, "<tool_call|>"},
	"gemma4-answer": {"<|channel>", "thought\nA▁greeting.", "<channel|>", "Hello▁world", "!<channel|>"},
}

// TestFamilyGemma4: Gemma 4's real template (read from llama.cpp's
// source) makes a model that takes tools and thinks, and its replies come
// back split through /api/chat, /v1/chat/completions and /v1/responses,
// whole and streamed: the thought channel as thinking or reasoning, the
// call as a structured call, the answer without Gemma's marks.
func TestFamilyGemma4(t *testing.T) {
	tmpl := fixtures.LlamaCppFile(t, "models/templates/google-gemma-4-31B-it.jinja")
	dir := t.TempDir()
	for name, reply := range gemma4Replies {
		s := scripted{template: string(tmpl), bos: "<bos>", eos: "<eos>", start: "\n", reply: reply,
			specials: []string{"<|turn>", "<turn|>", "<|think|>", "<|tool>", "<tool|>", "<|tool_response>", "<tool_response|>"}}
		s.write(t, filepath.Join(dir, name+".gguf"))
	}
	client, base := serveLibraryCtx(t, dir, 2048)
	cases := []struct {
		model, thinking, content, call string // call: name and arguments
	}{
		{"gemma4-call", "The user wants the weather in Paris.", "", `get_weather {"city":"Paris"}`},
		{"gemma4-answer", "A greeting.", "Hello world!", ""},
	}
	for _, c := range cases {
		t.Run(c.model, func(t *testing.T) {
			show, err := client.Show(t.Context(), &api.ShowRequest{Model: c.model})
			if err != nil || fmt.Sprint(show.Capabilities) != "[completion tools thinking]" {
				t.Fatalf("capabilities %v, %v; want completion, tools and thinking", show.Capabilities, err)
			}
			finish := "stop"
			if c.call != "" {
				finish = "tool_calls"
			}
			for _, stream := range []bool{true, false} {
				var thinking, content strings.Builder
				var calls []string
				err := client.Chat(t.Context(), &api.ChatRequest{Model: c.model, Messages: familyMessages(c.model), Tools: weatherTool(), Stream: &stream,
					Options: map[string]any{"temperature": 0, "num_predict": 20}}, func(r api.ChatResponse) error {
					thinking.WriteString(r.Message.Thinking)
					content.WriteString(r.Message.Content)
					for _, call := range r.Message.ToolCalls {
						args, _ := json.Marshal(call.Function.Arguments)
						calls = append(calls, call.Function.Name+" "+string(args))
					}
					return nil
				})
				if err != nil || thinking.String() != c.thinking || content.String() != c.content || strings.Join(calls, "; ") != c.call {
					t.Errorf("/api/chat, stream %v: thinking %q, content %q, calls %q, %v", stream, thinking.String(), content.String(), calls, err)
				}
			}

			body := `{"model":"` + c.model + `","messages":[{"role":"user","content":"What is the weather in Paris?"}],"temperature":0,"max_tokens":20,
				"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
			type message struct {
				Content   *string
				Reasoning string
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			oaiCall := func(m message) string {
				var calls []string
				for _, tc := range m.ToolCalls {
					calls = append(calls, tc.Function.Name+" "+tc.Function.Arguments)
				}
				return strings.Join(calls, "; ")
			}
			text := func(s *string) string {
				if s == nil {
					return ""
				}
				return *s
			}
			var whole struct {
				Choices []struct {
					Message      message
					FinishReason string `json:"finish_reason"`
				}
			}
			postJSON(t, base+"/v1/chat/completions", body+`}`, &whole)
			if ch := whole.Choices[0]; ch.Message.Reasoning != c.thinking || text(ch.Message.Content) != c.content || oaiCall(ch.Message) != c.call || ch.FinishReason != finish {
				t.Errorf("/v1/chat/completions: %+v", ch)
			}
			var reasoning, content, calls string
			for _, ch := range events[struct{ Choices []struct{ Delta message } }](t, base+"/v1/chat/completions", body+`,"stream":true}`) {
				for _, d := range ch.Choices {
					reasoning, content, calls = reasoning+d.Delta.Reasoning, content+text(d.Delta.Content), calls+oaiCall(d.Delta)
				}
			}
			if reasoning != c.thinking || content != c.content || calls != c.call {
				t.Errorf("/v1/chat/completions, streamed: reasoning %q, content %q, calls %q", reasoning, content, calls)
			}

			var r respObject
			postJSON(t, base+"/v1/responses", `{"model":"`+c.model+`","input":"What is the weather in Paris?","temperature":0,"max_output_tokens":20,
				"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`, &r)
			var items []string
			for _, o := range r.Output {
				switch o.Type {
				case "function_call":
					items = append(items, o.Type+" "+o.Name+" "+o.Arguments)
				default:
					items = append(items, o.Type+" "+o.Content[0].Text)
				}
			}
			want := "reasoning " + c.thinking + "; message " + c.content
			if c.call != "" {
				want = "reasoning " + c.thinking + "; function_call " + c.call
			}
			if strings.Join(items, "; ") != want {
				t.Errorf("/v1/responses: output %q, want %q", items, want)
			}
		})
	}
}
