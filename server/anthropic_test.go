package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// qwen3Scripted is a scripted model (scripted_test.go) under Qwen3's real
// chat template: after the generation prompt it thinks "plan", answers
// "Sure" and calls get_weather in Qwen's <tool_call> tags, so that one
// reply holds a thinking, a text and a tool_use block. Its <think> and
// </think> are plain tokens, which decode to their text as Qwen3's
// user-defined ones do (control tokens decode to nothing).
var qwen3Scripted = scripted{bos: "<|endoftext|>", eos: "<|im_end|>",
	specials: []string{"<|im_start|>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"},
	start:    "\n", reply: []string{"<think>", "plan", "</think>", "Sure", "<tool_call>", `{"name":"get_weather","arguments":{"city":"Paris"}}`, "</tool_call>"}}

// newAnthropicServer serves newTemplatedServer's models (tiny-tools,
// tiny-think, tiny-qwen2), qwen3Scripted as "qwen3-scripted" and the
// scripted Mistral Nemo ("nemo", whose calls follow [TOOL_CALLS]).
func newAnthropicServer(t *testing.T) string {
	t.Helper()
	dir := newTestLibrary(t)
	for name, tmpl := range testTemplates {
		writeTinyQwen2(t, filepath.Join(dir, name+".gguf"), func(w *gguf.Writer) { w.Set("tokenizer.chat_template", tmpl) })
	}
	shared := filepath.Join(fixtures.Shared(t), "templates")
	for name, m := range map[string]struct {
		file string
		s    scripted
	}{"qwen3-scripted": {"Qwen-Qwen3-0.6B.jinja", qwen3Scripted}, "nemo": familyModels["nemo"]} {
		tmpl, err := os.ReadFile(filepath.Join(shared, m.file))
		if err != nil {
			t.Fatal(err)
		}
		m.s.template = string(tmpl)
		m.s.write(t, filepath.Join(dir, name+".gguf"))
	}
	_, base := serveLibraryCtx(t, dir, 4096) // Qwen3's tools preamble is ~600 tokens of the scripted vocabulary's bytes
	return base
}

// anthPost posts body to base+path with the headers Anthropic's clients
// send and returns the status and the decoded JSON answer.
func anthPost(t *testing.T, base, path string, body any) (int, map[string]any) {
	t.Helper()
	resp := anthDo(t, base, path, body)
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: the answer is not JSON: %v", path, err)
	}
	return resp.StatusCode, out
}

func anthDo(t *testing.T, base, path string, body any) *http.Response {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", base+path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "any")
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("anthropic-beta", "interleaved-thinking-2025-05-14")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// anthEvent is one server-sent event of a stream.
type anthEvent struct {
	name string
	data map[string]any
}

// anthStream posts a streaming request and reads its events, checking
// that each event's name is its data's type.
func anthStream(t *testing.T, base string, body map[string]any) []anthEvent {
	t.Helper()
	body["stream"] = true
	resp := anthDo(t, base, "/v1/messages", body)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		data, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: status %d, Content-Type %q: %s", resp.StatusCode, ct, data)
	}
	var out []anthEvent
	var name string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("event %s: data %q: %v", name, line, err)
			}
			if data["type"] != name {
				t.Errorf("event %q carries type %v", name, data["type"])
			}
			out = append(out, anthEvent{name, data})
			name = ""
		case line != "":
			t.Fatalf("stream line %q: want event: or data:", line)
		}
	}
	return out
}

var (
	msgID  = regexp.MustCompile(`^msg_[A-Za-z0-9]{24}$`)
	toolID = regexp.MustCompile(`^toolu_[A-Za-z0-9]{24}$`)
)

var weatherTools = []map[string]any{{"name": "get_weather", "description": "The weather in a city",
	"input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string", "enum": []string{"Paris", "Rome"}}},
		"required": []string{"city"}}}}

func userSays(text string) []map[string]any {
	return []map[string]any{{"role": "user", "content": text}}
}

// TestAnthropicStreamEvents: a reply that thinks, answers and calls a tool
// streams as Anthropic's events in their order (message_start, ping; a
// thinking block of thinking_delta then signature_delta; a text block of
// text_delta; a tool_use block with a toolu_ id and the input as
// input_json_delta; message_delta with stop_reason tool_use and the
// usage; message_stop), and the same request whole gives the message the
// events build, field for field.
func TestAnthropicStreamEvents(t *testing.T) {
	base := newAnthropicServer(t)
	body := map[string]any{"model": "qwen3-scripted", "max_tokens": 2000, "messages": userSays("Weather in Paris?"), "tools": weatherTools,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}, "temperature": 0,
		"system": []map[string]any{{"type": "text", "text": "You are terse."}}}
	events := anthStream(t, base, body)
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	want := []string{"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if !slices.Equal(names, want) {
		t.Fatalf("events %v\nwant %v\n%v", names, want, events)
	}
	start := events[0].data["message"].(map[string]any)
	if !msgID.MatchString(fmt.Sprint(start["id"])) || start["type"] != "message" || start["role"] != "assistant" ||
		start["model"] != "qwen3-scripted" || start["stop_reason"] != nil || start["stop_sequence"] != nil || len(start["content"].([]any)) != 0 {
		t.Errorf("message_start: %v", start)
	}
	if u := start["usage"].(map[string]any); u["input_tokens"].(float64) < 10 || u["output_tokens"] != 0.0 {
		t.Errorf("message_start usage: %v", u)
	}
	block := func(i int) map[string]any { return events[i].data["content_block"].(map[string]any) }
	delta := func(i int) map[string]any { return events[i].data["delta"].(map[string]any) }
	indexes := []float64{0, 0, 0, 0, 1, 1, 1, 2, 2, 2}
	for i, e := range events[2:12] {
		if e.data["index"] != indexes[i] {
			t.Errorf("event %d (%s): index %v, want %v", i+2, e.name, e.data["index"], indexes[i])
		}
	}
	if b := block(2); b["type"] != "thinking" || b["thinking"] != "" || b["signature"] != "" {
		t.Errorf("thinking block start: %v", b)
	}
	if d := delta(3); d["type"] != "thinking_delta" || d["thinking"] != "plan" {
		t.Errorf("thinking delta: %v", d)
	}
	sig := delta(4)
	if sig["type"] != "signature_delta" || sig["signature"] == "" {
		t.Errorf("signature delta: %v", sig)
	}
	if b := block(6); b["type"] != "text" || b["text"] != "" {
		t.Errorf("text block start: %v", b)
	}
	if d := delta(7); d["type"] != "text_delta" || d["text"] != "Sure" {
		t.Errorf("text delta: %v", d)
	}
	tb := block(9)
	if tb["type"] != "tool_use" || !toolID.MatchString(fmt.Sprint(tb["id"])) || tb["name"] != "get_weather" || fmt.Sprint(tb["input"]) != "map[]" {
		t.Errorf("tool_use block start: %v", tb)
	}
	if d := delta(10); d["type"] != "input_json_delta" || d["partial_json"] != `{"city":"Paris"}` {
		t.Errorf("input_json_delta: %v", d)
	}
	md := events[12].data
	if d := md["delta"].(map[string]any); d["stop_reason"] != "tool_use" || d["stop_sequence"] != nil {
		t.Errorf("message_delta: %v", md)
	}
	u := md["usage"].(map[string]any)
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		if _, ok := u[k]; !ok {
			t.Errorf("message_delta usage lacks %s: %v", k, u)
		}
	}
	if u["output_tokens"] != 7.0 {
		t.Errorf("output_tokens %v, want the reply's 7 tokens", u["output_tokens"])
	}

	delete(body, "stream")
	status, m := anthPost(t, base, "/v1/messages", body)
	if status != 200 {
		t.Fatalf("whole: %d %v", status, m)
	}
	content := m["content"].([]any)
	if len(content) != 3 {
		t.Fatalf("whole: content %v", content)
	}
	th, tx, tu := content[0].(map[string]any), content[1].(map[string]any), content[2].(map[string]any)
	if th["type"] != "thinking" || th["thinking"] != "plan" || th["signature"] != sig["signature"] {
		t.Errorf("whole thinking block %v; the stream's signature %v", th, sig["signature"])
	}
	if tx["type"] != "text" || tx["text"] != "Sure" {
		t.Errorf("whole text block %v", tx)
	}
	if tu["type"] != "tool_use" || !toolID.MatchString(fmt.Sprint(tu["id"])) || tu["name"] != "get_weather" || fmt.Sprint(tu["input"]) != "map[city:Paris]" {
		t.Errorf("whole tool_use block %v", tu)
	}
	if !msgID.MatchString(fmt.Sprint(m["id"])) || m["type"] != "message" || m["role"] != "assistant" || m["model"] != "qwen3-scripted" ||
		m["stop_reason"] != "tool_use" || m["stop_sequence"] != nil {
		t.Errorf("whole message: %v", m)
	}
	mu := m["usage"].(map[string]any)
	if mu["output_tokens"] != 7.0 || mu["input_tokens"].(float64)+mu["cache_read_input_tokens"].(float64) != start["usage"].(map[string]any)["input_tokens"] ||
		mu["cache_creation_input_tokens"] != 0.0 {
		t.Errorf("whole usage %v; the prompt is %v tokens", mu, start["usage"])
	}
}

// TestAnthropicStopReasons: each stop_reason, whole and streamed (the
// message_delta's): end_turn at the model's end token, max_tokens at
// max_tokens, stop_sequence with the stop string that matched (the text
// ends before it), tool_use when the reply calls a tool.
func TestAnthropicStopReasons(t *testing.T) {
	base := newAnthropicServer(t)
	think := map[string]any{"type": "enabled", "budget_tokens": 1024}
	for _, tc := range []struct {
		name    string
		body    map[string]any
		reason  string
		seq     any
		content string // the blocks as type:text, joined by |
	}{
		{"end_turn", map[string]any{"max_tokens": 2000, "thinking": think}, "end_turn", nil,
			`thinking:plan|text:Sure<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`},
		{"max_tokens", map[string]any{"max_tokens": 2, "thinking": map[string]any{"type": "disabled"}}, "max_tokens", nil, "text:<think>plan"},
		{"stop_sequence", map[string]any{"max_tokens": 2000, "thinking": think, "stop_sequences": []string{"never", "Sure"}}, "stop_sequence", "Sure",
			"thinking:plan"},
		{"tool_use", map[string]any{"max_tokens": 2000, "thinking": think, "tools": weatherTools}, "tool_use", nil,
			`thinking:plan|text:Sure|tool_use:get_weather{"city":"Paris"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			body["model"], body["messages"], body["temperature"] = "qwen3-scripted", userSays("Weather in Paris?"), 0
			status, m := anthPost(t, base, "/v1/messages", body)
			if status != 200 {
				t.Fatalf("%d %v", status, m)
			}
			if m["stop_reason"] != tc.reason || m["stop_sequence"] != tc.seq {
				t.Errorf("stop_reason %v, stop_sequence %v; want %v, %v", m["stop_reason"], m["stop_sequence"], tc.reason, tc.seq)
			}
			if got := blockSummary(m["content"].([]any)); got != tc.content {
				t.Errorf("content %s\nwant    %s", got, tc.content)
			}
			events := anthStream(t, base, body)
			md := events[len(events)-2]
			d := md.data["delta"].(map[string]any)
			if md.name != "message_delta" || d["stop_reason"] != tc.reason || d["stop_sequence"] != tc.seq {
				t.Errorf("streamed: %v", md.data)
			}
		})
	}
}

// blockSummary writes content blocks as type:text (tool_use: name and
// input), joined by |.
func blockSummary(content []any) string {
	var parts []string
	for _, c := range content {
		b := c.(map[string]any)
		switch b["type"] {
		case "text":
			parts = append(parts, fmt.Sprint("text:", b["text"]))
		case "thinking":
			parts = append(parts, fmt.Sprint("thinking:", b["thinking"]))
		case "tool_use":
			in, _ := json.Marshal(b["input"])
			parts = append(parts, fmt.Sprint("tool_use:", b["name"], string(in)))
		default:
			parts = append(parts, fmt.Sprint(b["type"], "?"))
		}
	}
	return strings.Join(parts, "|")
}

// TestAnthropicCachedPrefix: the second turn of a conversation (the first
// turn, its answer, a tool result) reads the first turn's prompt from the
// prefix cache: usage.cache_read_input_tokens > 0 (0 on the first turn),
// and input_tokens + cache_read_input_tokens is the prompt count_tokens
// gives, whole and streamed.
func TestAnthropicCachedPrefix(t *testing.T) {
	base := newAnthropicServer(t)
	system := strings.Repeat("You are a careful agent that reads files before editing them. ", 5)
	turn1 := []map[string]any{{"role": "user", "content": "Weather in Paris?"}}
	turn2 := append(turn1,
		map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": "Sure"},
			{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": map[string]any{"city": "Paris"}}}},
		map[string]any{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_01", "content": "Sunny, 21 C"}}})
	usage := func(msgs []map[string]any, stream bool) (input, cached, prompt float64) {
		body := map[string]any{"model": "qwen3-scripted", "max_tokens": 2000, "system": system, "messages": msgs, "tools": weatherTools,
			"thinking": map[string]any{"type": "disabled"}}
		status, count := anthPost(t, base, "/v1/messages/count_tokens", body)
		if status != 200 {
			t.Fatalf("count_tokens: %d %v", status, count)
		}
		var u map[string]any
		if stream {
			events := anthStream(t, base, body)
			u = events[len(events)-2].data["usage"].(map[string]any)
		} else {
			status, m := anthPost(t, base, "/v1/messages", body)
			if status != 200 {
				t.Fatalf("%d %v", status, m)
			}
			u = m["usage"].(map[string]any)
		}
		return u["input_tokens"].(float64), u["cache_read_input_tokens"].(float64), count["input_tokens"].(float64)
	}
	if input, cached, prompt := usage(turn1, false); cached != 0 || input != prompt {
		t.Errorf("first turn: input_tokens %v, cache_read_input_tokens %v; want %v and 0", input, cached, prompt)
	}
	for _, stream := range []bool{false, true} {
		input, cached, prompt := usage(turn2, stream)
		if cached < 300 || input+cached != prompt {
			t.Errorf("second turn (stream %v): input_tokens %v, cache_read_input_tokens %v; want a prompt of %v, of which the first turn's 300+ cached",
				stream, input, cached, prompt)
		}
	}
}

// TestAnthropicToolChoice: any and tool force a call, on a template whose
// calls are bare JSON (tiny-tools, random weights that would not call on
// their own) and on one whose calls follow <tool_call> (Qwen3's: the tag
// ends the prompt, the thought is closed); none drops the tools; a forced
// call refuses thinking, and a template whose calls folio cannot force
// (Mistral's [TOOL_CALLS]) is a 400 naming tool_choice.
func TestAnthropicToolChoice(t *testing.T) {
	base := newAnthropicServer(t)
	two := append(slices.Clone(weatherTools), map[string]any{"name": "get_time", "input_schema": map[string]any{"type": "object",
		"properties": map[string]any{"zone": map[string]any{"type": "string", "enum": []string{"UTC"}}}, "required": []string{"zone"}}})
	for _, tc := range []struct {
		model  string
		choice map[string]any
		want   string // the blocks
	}{
		{"tiny-tools", map[string]any{"type": "tool", "name": "get_time"}, `tool_use:get_time{"zone":"UTC"}`},
		{"tiny-tools", map[string]any{"type": "any"}, "tool_use:"},
		{"qwen3-scripted", map[string]any{"type": "tool", "name": "get_weather"}, `tool_use:get_weather{"city":"Paris"}`},
		{"qwen3-scripted", map[string]any{"type": "any"}, `tool_use:get_weather{"city":"Paris"}`},
		{"tiny-tools", map[string]any{"type": "auto"}, ""},
		{"qwen3-scripted", map[string]any{"type": "none"}, `thinking:plan|text:Sure<tool_call>{"name":"get_weather","arguments":{"city":"Paris"}}</tool_call>`},
	} {
		body := map[string]any{"model": tc.model, "max_tokens": 200, "messages": userSays("Weather in Paris?"), "tools": two, "tool_choice": tc.choice,
			"temperature": 0}
		status, m := anthPost(t, base, "/v1/messages", body)
		if status != 200 {
			t.Fatalf("%s %v: %d %v", tc.model, tc.choice, status, m)
		}
		got := blockSummary(m["content"].([]any))
		switch {
		case tc.want == "":
			if strings.Contains(got, "tool_use") {
				t.Errorf("%s %v: %s; the model calls nothing of itself", tc.model, tc.choice, got)
			}
		case strings.HasSuffix(tc.want, ":"):
			if !strings.HasPrefix(got, tc.want) || strings.Contains(got, "|") || m["stop_reason"] != "tool_use" {
				t.Errorf("%s %v: %s, stop_reason %v; want one call", tc.model, tc.choice, got, m["stop_reason"])
			}
		case got != tc.want:
			t.Errorf("%s %v: %s\nwant %s", tc.model, tc.choice, got, tc.want)
		}
	}
	for _, tc := range []struct {
		model string
		body  map[string]any
		want  string
	}{
		{"qwen3-scripted", map[string]any{"tool_choice": map[string]any{"type": "any"}, "thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}},
			"thinking may not be enabled when tool_choice forces tool use"},
		{"nemo", map[string]any{"tool_choice": map[string]any{"type": "any"}}, "cannot force"},
		{"qwen3-scripted", map[string]any{"tool_choice": map[string]any{"type": "tool", "name": "get_date"}}, `names tool "get_date"`},
		{"qwen3-scripted", map[string]any{"tool_choice": map[string]any{"type": "sometimes"}}, `tool_choice type "sometimes"`},
	} {
		body := tc.body
		body["model"], body["max_tokens"], body["messages"], body["tools"] = tc.model, 2000, userSays("Weather?"), weatherTools
		status, m := anthPost(t, base, "/v1/messages", body)
		e, _ := m["error"].(map[string]any)
		if status != 400 || m["type"] != "error" || e["type"] != "invalid_request_error" || !strings.Contains(fmt.Sprint(e["message"]), tc.want) {
			t.Errorf("%v: %d %v; want a 400 saying %q", tc.body, status, m, tc.want)
		}
	}
}

// TestAnthropicErrors: bad requests are Anthropic's error JSON,
// {"type":"error","error":{"type","message"}}, with its status and type:
// 400 invalid_request_error naming what to change (max_tokens missing, an
// image, a role, a tool type, thinking on a model that does not think, a
// prompt over the context, which is refused as Claude's API refuses it,
// not truncated),
// 404 not_found_error for a model or a path, 413 request_too_large.
func TestAnthropicErrors(t *testing.T) {
	base := newAnthropicServer(t)
	ok := func() map[string]any {
		return map[string]any{"model": "tiny-tools", "max_tokens": 10, "messages": userSays("hi")}
	}
	with := func(k string, v any) map[string]any {
		b := ok()
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	image := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "text", "text": "what is this?"},
		{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}}}}
	imageResult := []map[string]any{{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_1",
		"content": []map[string]any{{"type": "image", "source": map[string]any{}}}}}}}
	for _, tc := range []struct {
		name   string
		path   string
		body   any
		status int
		typ    string
		msg    string
	}{
		{"no max_tokens", "/v1/messages", with("max_tokens", nil), 400, "invalid_request_error", "max_tokens is required"},
		{"max_tokens 0", "/v1/messages", with("max_tokens", 0), 400, "invalid_request_error", "max_tokens 0"},
		{"no model", "/v1/messages", with("model", nil), 400, "invalid_request_error", "model is required"},
		{"no messages", "/v1/messages", with("messages", []any{}), 400, "invalid_request_error", "at least one message"},
		{"system role", "/v1/messages", with("messages", []map[string]any{{"role": "system", "content": "x"}}), 400, "invalid_request_error", "system field"},
		{"image", "/v1/messages", with("messages", image), 400, "invalid_request_error", "image blocks are not supported"},
		{"image in a tool result", "/v1/messages", with("messages", imageResult), 400, "invalid_request_error", "image blocks are not supported"},
		{"server tool", "/v1/messages", with("tools", []map[string]any{{"type": "web_search_20250305", "name": "web_search"}}), 400,
			"invalid_request_error", "server tools"},
		{"thinking budget", "/v1/messages", with("thinking", map[string]any{"type": "enabled", "budget_tokens": 10}), 400,
			"invalid_request_error", "budget_tokens 10"},
		{"thinking unsupported", "/v1/messages", map[string]any{"model": "tiny-qwen2", "max_tokens": 2000, "messages": userSays("hi"),
			"thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}}, 400, "invalid_request_error", "does not support thinking"},
		{"tools unsupported", "/v1/messages", map[string]any{"model": "tiny-qwen2", "max_tokens": 20, "messages": userSays("hi"),
			"tools": weatherTools}, 400, "invalid_request_error", "does not support tools"},
		{"bad JSON", "/v1/messages", "{", 400, "invalid_request_error", "request JSON"},
		{"no such model", "/v1/messages", with("model", "claude-sonnet-4-5"), 404, "not_found_error", "claude-sonnet-4-5"},
		{"count no such model", "/v1/messages/count_tokens", with("model", "claude-sonnet-4-5"), 404, "not_found_error", "claude-sonnet-4-5"},
		{"no such path", "/v1/messages/batches", ok(), 404, "not_found_error", "/v1/messages/batches"},
		{"GET", "GET /v1/messages", nil, 404, "not_found_error", "GET /v1/messages"},
		{"prompt over the context", "/v1/messages", map[string]any{"model": "qwen3-scripted", "max_tokens": 10, "messages": userSays("hi"),
			"system": strings.Repeat("x", 5000)}, 400, "invalid_request_error", "prompt is too long: 5031 tokens > 4095 maximum: raise the context"},
		{"too large", "/v1/messages", with("system", strings.Repeat("x", 2<<20)), 413, "request_too_large", "FOLIO_MAX_BODY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status int
			var m map[string]any
			method, path, raw := strings.Cut(tc.path, " ")
			switch body, isString := tc.body.(string); {
			case raw, isString: // a method other than POST, or a body that is not JSON
				if !raw {
					method, path = "POST", tc.path
				}
				req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				status = resp.StatusCode
				json.NewDecoder(resp.Body).Decode(&m)
			default:
				status, m = anthPost(t, base, tc.path, tc.body)
			}
			e, _ := m["error"].(map[string]any)
			if status != tc.status || m["type"] != "error" || e["type"] != tc.typ || !strings.Contains(fmt.Sprint(e["message"]), tc.msg) || len(m) != 2 {
				t.Errorf("%d %v; want %d, type error, error.type %s, a message with %q", status, m, tc.status, tc.typ, tc.msg)
			}
		})
	}
}

// TestAnthropicRequestFields: what a request carries reaches the prompt
// as the chat template renders it (count_tokens counts the same prompt
// /v1/messages computes): system as a string or text blocks; tool_use and
// tool_result (string or text blocks; is_error marks the result); thinking
// blocks; the tools. Headers and metadata are taken.
func TestAnthropicRequestFields(t *testing.T) {
	base := newAnthropicServer(t)
	count := func(body map[string]any) float64 {
		t.Helper()
		body["model"] = "qwen3-scripted"
		status, m := anthPost(t, base, "/v1/messages/count_tokens", body)
		if status != 200 || len(m) != 1 {
			t.Fatalf("count_tokens %v: %d %v", body, status, m)
		}
		return m["input_tokens"].(float64)
	}
	history := func(result any, isError bool) []map[string]any {
		return []map[string]any{{"role": "user", "content": "Weather?"},
			{"role": "assistant", "content": []map[string]any{{"type": "thinking", "thinking": "call it", "signature": "x"},
				{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": map[string]any{"city": "Paris"}}}},
			{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_1", "content": result, "is_error": isError}}}}
	}
	// The scripted vocabulary is bytes: a prompt grows by the bytes added.
	for _, tc := range []struct {
		name string
		a, b map[string]any
		diff float64
	}{
		{"system string = blocks", map[string]any{"system": "Be brief. Be kind.", "messages": userSays("hi")},
			map[string]any{"system": []map[string]any{{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind.", "cache_control": map[string]any{"type": "ephemeral"}}},
				"messages": userSays("hi")}, 0},
		{"result string = blocks", map[string]any{"messages": history("Sunny", false)},
			map[string]any{"messages": history([]map[string]any{{"type": "text", "text": "Sunny"}}, false)}, 0},
		{"is_error", map[string]any{"messages": history("Sunny", false)}, map[string]any{"messages": history("Sunny", true)}, float64(len("Error: "))},
		{"metadata", map[string]any{"messages": userSays("hi")}, map[string]any{"messages": userSays("hi"), "metadata": map[string]any{"user_id": "u1"}}, 0},
		{"user text", map[string]any{"messages": userSays("hi")}, map[string]any{"messages": userSays("hi there")}, 6},
	} {
		if a, b := count(tc.a), count(tc.b); b-a != tc.diff {
			t.Errorf("%s: %v then %v tokens; want a difference of %v", tc.name, a, b, tc.diff)
		}
	}
	// the tools and the tool call reach the prompt
	withTools := count(map[string]any{"messages": userSays("hi"), "tools": weatherTools})
	if without := count(map[string]any{"messages": userSays("hi")}); withTools < without+100 {
		t.Errorf("tools add %v tokens", withTools-without)
	}
	// adaptive thinking is the model's default: thinking where it can
	for model, want := range map[string]string{"qwen3-scripted": "thinking", "tiny-qwen2": "text"} {
		status, m := anthPost(t, base, "/v1/messages", map[string]any{"model": model, "max_tokens": 3, "messages": userSays("hi"),
			"thinking": map[string]any{"type": "adaptive"}})
		if status != 200 || m["content"].([]any)[0].(map[string]any)["type"] != want {
			t.Errorf("%s with adaptive thinking: %d %v; want a %s block first", model, status, m, want)
		}
	}
	status, m := anthPost(t, base, "/v1/messages", map[string]any{"model": "qwen3-scripted", "max_tokens": 2000, "messages": history("Sunny", false),
		"tools": weatherTools, "thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}, "metadata": map[string]any{"user_id": "u1"}})
	if status != 200 || m["stop_reason"] != "tool_use" {
		t.Errorf("a conversation with tool_use, tool_result and thinking blocks: %d %v", status, m)
	}
}

// TestAnthropicStreamError: a failure after the stream began (here the
// engine's: a forced call that cannot be written within max_tokens, found
// when the first token is sampled) ends the stream with an error event in
// Anthropic's shape, after message_start and with no message_stop.
func TestAnthropicStreamError(t *testing.T) {
	base := newAnthropicServer(t)
	events := anthStream(t, base, map[string]any{"model": "tiny-tools", "max_tokens": 1, "messages": userSays("hi"),
		"tools": weatherTools, "tool_choice": map[string]any{"type": "any"}})
	var names []string
	for _, e := range events {
		names = append(names, e.name)
	}
	if want := []string{"message_start", "ping", "error"}; !slices.Equal(names, want) {
		t.Fatalf("events %v, want %v: %v", names, want, events)
	}
	e := events[2].data["error"].(map[string]any)
	if e["type"] != "invalid_request_error" || !strings.Contains(fmt.Sprint(e["message"]), "format allows no token") || len(events[2].data) != 2 {
		t.Errorf("error event %v", events[2].data)
	}
}
