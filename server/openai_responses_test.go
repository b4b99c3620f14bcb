package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// respEvent is a /v1/responses stream event: its SSE name and its data.
type respEvent struct {
	name string
	data map[string]any
	raw  []byte
}

// respEvents posts a streaming /v1/responses request and returns its
// events, checking that each is "event: T" then "data: {json}" whose type
// is T, numbered from 0, with no [DONE].
func respEvents(t *testing.T, url, body string) []respEvent {
	t.Helper()
	status, ctype, data := post(t, url, body)
	if status != http.StatusOK || ctype != "text/event-stream" {
		t.Fatalf("POST %s %s: %d %s %s", url, body, status, ctype, data)
	}
	var out []respEvent
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "event: ") && name == "":
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && name != "":
			e := respEvent{name: name, raw: []byte(strings.TrimPrefix(line, "data: "))}
			if err := json.Unmarshal(e.raw, &e.data); err != nil {
				t.Fatalf("event %s: %v in %s", name, err, e.raw)
			}
			if e.data["type"] != name || e.data["sequence_number"] != float64(len(out)) {
				t.Fatalf("event %d named %s: %s", len(out), name, e.raw)
			}
			out = append(out, e)
			name = ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out
}

type respObject struct {
	ID                string  `json:"id"`
	Object            string  `json:"object"`
	CreatedAt         int64   `json:"created_at"`
	Model             string  `json:"model"`
	Status            string  `json:"status"`
	Instructions      *string `json:"instructions"`
	Store             bool    `json:"store"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Output []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		Status  string `json:"status"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"output"`
	Usage *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// TestOpenAIResponses: /v1/responses answers the greedy continuation the
// Ollama API gives, for input as a string or as items, whole and as the
// Responses API's events; a reply cut by max_output_tokens is incomplete.
func TestOpenAIResponses(t *testing.T) {
	c, base := newTestServer(t)
	want := greedy(t, c, "Once upon a time", 20)
	url := base + "/v1/responses"
	for _, input := range []string{`"Once upon a time"`,
		`[{"role":"user","content":[{"type":"input_text","text":"Once upon a time"}]}]`,
		`[{"type":"message","role":"user","content":"Once upon a time"}]`} {
		var r respObject
		postJSON(t, url, `{"model":"stories260k","input":`+input+`,"temperature":0,"max_output_tokens":20}`, &r)
		if r.Object != "response" || !strings.HasPrefix(r.ID, "resp_") || r.CreatedAt == 0 || r.Model != "stories260k" ||
			r.Status != "incomplete" || r.IncompleteDetails == nil || r.IncompleteDetails.Reason != "max_output_tokens" || r.Store ||
			len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" || r.Output[0].Status != "completed" ||
			!strings.HasPrefix(r.Output[0].ID, "msg_") || len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "output_text" {
			t.Fatalf("input %s: %+v", input, r)
		}
		if got := r.Output[0].Content[0].Text; got != want {
			t.Errorf("input %s: text %q, want %q", input, got, want)
		}
		if r.Usage == nil || r.Usage.InputTokens == 0 || r.Usage.OutputTokens != 20 || r.Usage.TotalTokens != r.Usage.InputTokens+20 {
			t.Errorf("input %s: usage %+v", input, r.Usage)
		}
	}

	evs := respEvents(t, url, `{"model":"stories260k","input":"Once upon a time","temperature":0,"max_output_tokens":20,"stream":true}`)
	var names []string
	text := ""
	for _, e := range evs {
		if n := len(names); n == 0 || names[n-1] != e.name {
			names = append(names, e.name)
		}
		if e.name == "response.output_text.delta" {
			text += e.data["delta"].(string)
		}
	}
	wantNames := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.incomplete"}
	if strings.Join(names, " ") != strings.Join(wantNames, " ") || text != want {
		t.Fatalf("events %v with text %q; want %v with %q", names, text, wantNames, want)
	}
	var last struct {
		Response respObject `json:"response"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].raw, &last); err != nil || last.Response.Status != "incomplete" ||
		len(last.Response.Output) != 1 || last.Response.Output[0].Content[0].Text != want || last.Response.Usage == nil {
		t.Errorf("the last event's response: %+v, %v", last.Response, err)
	}
}

// TestOpenAIResponsesErrors: what /v1/responses cannot do is refused,
// naming the field.
func TestOpenAIResponsesErrors(t *testing.T) {
	_, base := newTestServer(t)
	for _, tc := range []struct {
		body   string
		status int
		param  string
	}{
		{`{"model":"stories260k","input":"hi","previous_response_id":"resp_1"}`, 501, "previous_response_id"},
		{`{"model":"stories260k","input":"hi","background":true}`, 501, "background"},
		{`{"model":"stories260k"}`, 400, "input"},
		{`{"model":"stories260k","input":[]}`, 400, "input"},
		{`{"model":"stories260k","input":[{"type":"computer_call"}]}`, 400, "input[0].type"},
		{`{"model":"stories260k","input":[{"role":"robot","content":"hi"}]}`, 400, "input[0].role"},
		{`{"model":"stories260k","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}`, 400, "input[0].content"},
		{`{"model":"stories260k","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"}]}`, 400, "input[0]"},
		{`{"model":"stories260k","input":"hi","tools":[{"type":"web_search"}]}`, 501, "tools[0]"},
		{`{"model":"stories260k","input":"hi","tool_choice":"required"}`, 501, "tool_choice"},
		{`{"model":"stories260k","input":"hi","max_output_tokens":0}`, 400, "max_output_tokens"},
		{`{"model":"nope","input":"hi"}`, 404, "model"},
		{`{"model":"stories260k","input":"hi","text":{"format":{"type":"yaml"}}}`, 400, "text.format"},
		{`{"model":"stories260k","input":"hi","reasoning":{"effort":"max"}}`, 400, "reasoning.effort"},
	} {
		t.Run(tc.param, func(t *testing.T) {
			status, _, data := post(t, base+"/v1/responses", tc.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Param   *string `json:"param"`
				} `json:"error"`
			}
			if status != tc.status || json.Unmarshal(data, &e) != nil || e.Error.Param == nil || *e.Error.Param != tc.param || e.Error.Message == "" {
				t.Errorf("%s: %d %s; want %d naming %s", tc.body, status, data, tc.status, tc.param)
			}
		})
	}
}

// TestOpenAIResponsesToolCalls: a forced call (as in TestOpenAIToolCalls)
// comes back as a function_call item, whole and streamed, and a
// conversation that carries a call and its output is accepted.
func TestOpenAIResponsesToolCalls(t *testing.T) {
	_, base := newTemplatedServer(t)
	url := base + "/v1/responses"
	body := `{"model":"tiny-tools","input":"weather?","temperature":0,"max_output_tokens":400,
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}],
		"text":{"format":{"type":"json_schema","name":"call","schema":` + weatherSchema + `}}`
	var r respObject
	postJSON(t, url, body+`}`, &r)
	if r.Status != "completed" || len(r.Output) != 1 || r.Output[0].Type != "function_call" || r.Output[0].Name != "get_weather" ||
		!strings.HasPrefix(r.Output[0].CallID, "call_") || !strings.HasPrefix(r.Output[0].ID, "fc_") {
		t.Fatalf("whole: %+v", r)
	}
	var args map[string]string
	if json.Unmarshal([]byte(r.Output[0].Arguments), &args) != nil || (args["city"] != "Paris" && args["city"] != "Rome") {
		t.Errorf("whole: arguments %q", r.Output[0].Arguments)
	}
	var names []string
	for _, e := range respEvents(t, url, body+`,"stream":true}`) {
		names = append(names, e.name)
		if e.name == "response.output_text.delta" {
			t.Errorf("streamed text %v besides the call", e.data["delta"])
		}
	}
	wantNames := "response.created response.in_progress response.output_item.added response.function_call_arguments.done " +
		"response.output_item.done response.completed"
	if strings.Join(names, " ") != wantNames {
		t.Errorf("stream: events %v", names)
	}

	conv := `{"model":"tiny-tools","temperature":0,"max_output_tokens":8,"instructions":"Be brief.","input":[
		{"role":"user","content":"weather?"},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`
	var r2 respObject
	postJSON(t, url, conv, &r2)
	if len(r2.Output) == 0 || r2.Output[0].Type != "message" || r2.Instructions == nil || *r2.Instructions != "Be brief." {
		t.Errorf("a conversation with a call and its output: %+v", r2)
	}
}

// TestOpenAIResponsesReasoning: with reasoning asked for, a reply that
// starts inside <think> (here a model whose prompt opens the thought)
// comes back as a reasoning item with the chat endpoint's reasoning text,
// then an empty message; streamed, as reasoning_text events before the
// message's.
func TestOpenAIResponsesReasoning(t *testing.T) {
	_, base := newTemplatedServer(t)
	var chat struct {
		Choices []struct {
			Message struct {
				Content   string `json:"content"`
				Reasoning string `json:"reasoning"`
			} `json:"message"`
		} `json:"choices"`
	}
	postJSON(t, base+"/v1/chat/completions", `{"model":"tiny-think","messages":[{"role":"user","content":"Once upon a time"}],
		"temperature":0,"max_tokens":12,"reasoning_effort":"low"}`, &chat)
	want := chat.Choices[0].Message.Reasoning
	if want == "" || chat.Choices[0].Message.Content != "" {
		t.Fatalf("chat: %+v; want reasoning only", chat.Choices[0].Message)
	}
	body := `{"model":"tiny-think","input":"Once upon a time","temperature":0,"max_output_tokens":12,"reasoning":{"effort":"low"}`
	var r struct {
		Output []struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	postJSON(t, base+"/v1/responses", body+`}`, &r)
	if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || !strings.HasPrefix(r.Output[0].ID, "rs_") ||
		len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "reasoning_text" || r.Output[0].Content[0].Text != want ||
		r.Output[1].Type != "message" || r.Output[1].Content[0].Text != "" {
		t.Fatalf("whole: %+v; want reasoning %q, then an empty message", r, want)
	}
	var names []string
	text := ""
	for _, e := range respEvents(t, base+"/v1/responses", body+`,"stream":true}`) {
		if n := len(names); n == 0 || names[n-1] != e.name {
			names = append(names, e.name)
		}
		if e.name == "response.reasoning_text.delta" {
			text += e.data["delta"].(string)
		}
	}
	wantNames := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.reasoning_text.delta response.reasoning_text.done response.content_part.done response.output_item.done " +
		"response.output_item.added response.content_part.added " +
		"response.output_text.done response.content_part.done response.output_item.done response.incomplete"
	if strings.Join(names, " ") != wantNames || text != want {
		t.Errorf("stream: events %v with reasoning %q; want %s with %q", names, text, wantNames, want)
	}
}
