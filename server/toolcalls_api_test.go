package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ollama/ollama/api"
)

// TestChatToolCalls: a reply that is a tool call (forced here by a format
// schema, with a model whose template has no tool-call tag, so bare JSON
// objects are calls) arrives as message.tool_calls with an id of Ollama's
// form, streamed or not, and not as content.
func TestChatToolCalls(t *testing.T) {
	c, _ := newTemplatedServer(t)
	ctx := context.Background()
	var tool api.Tool
	tool.Type, tool.Function.Name = "function", "get_weather"
	schema := json.RawMessage(weatherSchema)
	for _, stream := range []bool{true, false} {
		req := &api.ChatRequest{Model: "tiny-tools", Messages: []api.Message{{Role: "user", Content: "weather?"}},
			Tools: api.Tools{tool}, Format: schema, Stream: &stream, Options: map[string]any{"temperature": 0, "num_predict": 400}}
		var content string
		var calls []api.ToolCall
		err := c.Chat(ctx, req, func(r api.ChatResponse) error {
			content += r.Message.Content
			calls = append(calls, r.Message.ToolCalls...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || content != "" {
			t.Fatalf("stream %v: content %q, calls %+v; want one call and no content", stream, content, calls)
		}
		city, _ := calls[0].Function.Arguments.Get("city")
		if calls[0].Function.Name != "get_weather" || (city != "Paris" && city != "Rome") || !callID.MatchString(calls[0].ID) {
			t.Errorf("stream %v: call %+v", stream, calls[0])
		}
	}
	// Without tools the same reply is text.
	no := false
	var content string
	err := c.Chat(ctx, &api.ChatRequest{Model: "tiny-tools", Messages: []api.Message{{Role: "user", Content: "weather?"}},
		Format: schema, Stream: &no, Options: map[string]any{"temperature": 0, "num_predict": 400}},
		func(r api.ChatResponse) error { content += r.Message.Content; return nil })
	if err != nil || !json.Valid([]byte(content)) {
		t.Errorf("without tools: %q, %v; want the JSON as content", content, err)
	}
}

// TestOpenAIToolCalls: the same forced call through /v1/chat/completions
// comes back as message.tool_calls (arguments as JSON text, an id each)
// with finish_reason tool_calls, whole and in chunks.
func TestOpenAIToolCalls(t *testing.T) {
	_, base := newTemplatedServer(t)
	body := `{"model":"tiny-tools","messages":[{"role":"user","content":"weather?"}],"temperature":0,"max_tokens":400,
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],
		"response_format":{"type":"json_schema","json_schema":{"name":"call","schema":` + weatherSchema + `}}`
	type call struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct{ Name, Arguments string }
	}
	var whole struct {
		Choices []struct {
			Message struct {
				Content   *string `json:"content"`
				ToolCalls []call  `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	postJSON(t, base+"/v1/chat/completions", body+`}`, &whole)
	ch := whole.Choices[0]
	if len(ch.Message.ToolCalls) != 1 || ch.FinishReason != "tool_calls" || ch.Message.Content != nil {
		t.Fatalf("whole: %+v", ch)
	}
	tc := ch.Message.ToolCalls[0]
	var args map[string]string
	if tc.Function.Name != "get_weather" || tc.Type != "function" || !callID.MatchString(tc.ID) ||
		json.Unmarshal([]byte(tc.Function.Arguments), &args) != nil || (args["city"] != "Paris" && args["city"] != "Rome") {
		t.Errorf("whole: call %+v", tc)
	}
	type chunk struct {
		Choices []struct {
			Delta struct {
				Content   *string `json:"content"`
				ToolCalls []call  `json:"tool_calls"`
			}
			FinishReason *string `json:"finish_reason"`
		}
	}
	var calls []call
	finish := ""
	for _, c := range events[chunk](t, base+"/v1/chat/completions", body+`,"stream":true}`) {
		for _, ch := range c.Choices {
			calls = append(calls, ch.Delta.ToolCalls...)
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				t.Errorf("stream: content %q besides the call", *ch.Delta.Content)
			}
			if ch.FinishReason != nil {
				finish = *ch.FinishReason
			}
		}
	}
	if len(calls) != 1 || calls[0].Function.Name != "get_weather" || finish != "tool_calls" {
		t.Errorf("stream: calls %+v, finish %q", calls, finish)
	}
}

const weatherSchema = `{"type":"object","properties":{"name":{"const":"get_weather"},
	"arguments":{"type":"object","properties":{"city":{"enum":["Paris","Rome"]}},"required":["city"]}},
	"required":["name","arguments"]}`
