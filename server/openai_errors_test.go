package server_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpenAIErrors: bad requests get OpenAI's error JSON with the status
// of the one mapping (statusOf), and the server keeps serving.
func TestOpenAIErrors(t *testing.T) {
	_, base := newTestServer(t)
	chat := `{"model": "stories260k", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, `
	for _, c := range []struct {
		path, body  string
		status      int
		param, want string
	}{
		{"/v1/chat/completions", `{"model": "stories260k", "messages": [`, 400, "", "request JSON"},
		{"/v1/chat/completions", `{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}`, 404, "model", "not found"},
		{"/v1/chat/completions", `{"messages": [{"role": "user", "content": "hi"}]}`, 400, "model", "model is required"},
		{"/v1/chat/completions", `{"model": "stories260k", "messages": []}`, 400, "messages", "at least one"},
		{"/v1/chat/completions", chat + `"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "number", "multipleOf": 2}}}}`, 400, "response_format", "multipleOf"},
		{"/v1/chat/completions", chat + `"response_format": {"type": "yaml"}}`, 400, "response_format", "yaml"},
		{"/v1/chat/completions", chat + `"n": 0}`, 400, "n", "at least 1"},
		{"/v1/chat/completions", chat + `"n": 17}`, 400, "", "at most 16"},
		{"/v1/chat/completions", chat + `"top_logprobs": 2}`, 400, "top_logprobs", "logprobs: true"},
		{"/v1/chat/completions", chat + `"logprobs": true, "top_logprobs": 21}`, 400, "", "top_logprobs 21"},
		{"/v1/chat/completions", chat + `"stop": 5}`, 400, "stop", "stop must be"},
		{"/v1/chat/completions", chat + `"temperature": "hot"}`, 400, "", "temperature"},
		{"/v1/chat/completions", chat + `"temperature": -1}`, 400, "", "temperature"},
		{"/v1/chat/completions", chat + `"max_tokens": 0}`, 400, "max_tokens", "max_tokens 0"},
		{"/v1/chat/completions", chat + `"logit_bias": {"600": 10}}`, 400, "logit_bias", "token 600 is outside the vocabulary"},
		{"/v1/chat/completions", chat + `"reasoning_effort": "max"}`, 400, "reasoning_effort", "reasoning_effort"},
		{"/v1/chat/completions", `{"model": "stories260k", "messages": [{"role": "wizard", "content": "x"}]}`, 400, "messages[0].role", "role"},
		{"/v1/chat/completions", `{"model": "stories260k", "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]}`, 400, "messages[0].content", "text models only"},
		{"/v1/completions", `{"model": "stories260k", "prompt": "hi", "echo": true, "logprobs": 1}`, 501, "echo", "echo with logprobs"},
		{"/v1/completions", `{"model": "stories260k", "prompt": "hi", "echo": true, "suffix": "end"}`, 400, "echo", "echo with a suffix"},
		{"/v1/completions", `{"model": "stories260k", "prompt": "hi", "suffix": "end"}`, 400, "suffix", "does not support insert"},
		{"/v1/completions", `{"model": "stories260k", "prompt": "hi", "best_of": 3}`, 501, "best_of", "best_of"},
		{"/v1/completions", `{"model": "stories260k", "prompt": {"a": 1}}`, 400, "prompt", "prompt must be"},
		{"/v1/completions", `{"model": "stories260k", "prompt": [99999999]}`, 400, "", "outside the vocabulary"},
		{"/v1/completions", `{"model": "stories260k", "prompt": "hi", "logprobs": -1}`, 400, "logprobs", "logprobs -1"},
		{"/v1/embeddings", `{"model": "tiny-qwen2", "input": ""}`, 400, "input", "empty"},
		{"/v1/embeddings", `{"model": "tiny-qwen2"}`, 400, "input", "input is required"},
		{"/v1/embeddings", `{"model": "tiny-qwen2", "input": "x", "encoding_format": "int8"}`, 400, "encoding_format", "int8"},
		{"/v1/embeddings", `{"model": "tiny-qwen2", "input": "x", "dimensions": 0}`, 400, "dimensions", "dimensions 0"},
		{"/v1/nothing", `{}`, 404, "", "no such endpoint"},
	} {
		t.Run(c.path+" "+c.want, func(t *testing.T) {
			status, ctype, data := post(t, base+c.path, c.body)
			var e struct {
				Error map[string]any `json:"error"`
			}
			err := json.Unmarshal(data, &e)
			param, _ := e.Error["param"].(string)
			msg, _ := e.Error["message"].(string)
			_, hasCode := e.Error["code"]
			_, hasParam := e.Error["param"]
			if err != nil || status != c.status || !strings.HasPrefix(ctype, "application/json") || param != c.param ||
				!strings.Contains(msg, c.want) || e.Error["type"] == nil || !hasCode || !hasParam {
				t.Errorf("%s %.90s: %d %s; want %d, param %q, message with %q", c.path, c.body, status, data, c.status, c.param, c.want)
			}
		})
	}
	// response_format text is plain generation; the server still serves
	var one chatObject
	postJSON(t, base+"/v1/chat/completions", chat+`"response_format": {"type": "text"}}`, &one)
	if len(one.Choices) != 1 {
		t.Errorf("response_format text: %+v", one)
	}
}
