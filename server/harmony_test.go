package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
)

// gpt-oss's harmony replies, written by scripted models (scripted_test.go)
// carrying gpt-oss's own chat template. Each mark is a control token as
// in gpt-oss's vocabulary where it first comes; a mark a reply writes again
// is in a plain token's text (a scripted reply writes each token once).
// <|return|> (the end of the reply, eos) and <|call|> end generation.
var (
	harmonySpecials = []string{"<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>"}
	harmonyModels   = map[string][]string{
		// reasoning, then a call: recorded gpt-oss output
		"gpt-oss-call": {"<|channel|>", "analysis", "<|message|>", "The\u2581user\u2581wants\u2581the\u2581weather\u2581in\u2581Paris.", "<|end|>",
			"<|start|>", "assistant", "<|channel|>commentary\u2581to=functions.get_weather\u2581", "<|constrain|>", "json<|message|>", `{"city":"Paris"}`, "<|call|>"},
		// reasoning, then the answer
		"gpt-oss-answer": {"<|channel|>", "analysis", "<|message|>", "A\u2581greeting.", "<|end|>",
			"<|start|>", "assistant", "<|channel|>final<|message|>", "Hello", "\u2581world"},
		// the answer after the tool's result
		"gpt-oss-final": {"<|channel|>", "final", "<|message|>", "It\u2581is\u2581sunny\u2581in\u2581Paris."},
		// a call cut short: not a call, so content as written
		"gpt-oss-bad": {"<|channel|>", "commentary\u2581to=functions.get_weather\u2581json", "<|message|>", `{"city":`, "<|call|>"},
	}
)

const (
	harmonyThought = "The user wants the weather in Paris."
	harmonyBad     = `<|channel|>commentary to=functions.get_weather json<|message|>{"city":`
)

// newHarmonyServer serves the harmony models, at a context of 2048 tokens
// (gpt-oss's system message, each byte a token here, takes 400). The
// prompt ends with "<|start|>assistant", whose last token is the byte "t".
func newHarmonyServer(t *testing.T) (*api.Client, string) {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join(fixtures.Shared(t), "templates", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, reply := range harmonyModels {
		s := scripted{name: name, template: string(tmpl), bos: "<|startoftext|>", eos: "<|return|>", specials: harmonySpecials, start: "t"}
		if reply[len(reply)-1] == "<|call|>" {
			s.reply, s.end = reply[:len(reply)-1], "<|call|>"
		} else {
			s.reply = reply
		}
		s.write(t, filepath.Join(dir, name+".gguf"))
	}
	return serveLibraryCtx(t, dir, 2048)
}

// TestHarmonyChat: /api/chat splits a harmony reply by its channels,
// streamed and not: the analysis channel is the thinking, the final one
// the content, a commentary message to functions.NAME the call (streamed:
// the thinking before the call); a call that does not parse, or to a
// function the request did not offer, stays content.
func TestHarmonyChat(t *testing.T) {
	c, _ := newHarmonyServer(t)
	user := []api.Message{{Role: "user", Content: "What is the weather in Paris?"}}
	for _, stream := range []bool{true, false} {
		var order string
		var thinking, content strings.Builder
		var calls []api.ToolCall
		err := c.Chat(t.Context(), &api.ChatRequest{Model: "gpt-oss-call", Messages: user, Stream: &stream, Tools: weatherTool()},
			func(r api.ChatResponse) error {
				if r.Message.Thinking != "" && !strings.HasSuffix(order, "t") {
					order += "t"
				}
				if len(r.Message.ToolCalls) > 0 {
					order += "f"
				}
				thinking.WriteString(r.Message.Thinking)
				content.WriteString(r.Message.Content)
				calls = append(calls, r.Message.ToolCalls...)
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || thinking.String() != harmonyThought || content.String() != "" {
			t.Fatalf("stream %v: thinking %q content %q calls %+v", stream, thinking.String(), content.String(), calls)
		}
		args, _ := json.Marshal(calls[0].Function.Arguments)
		if calls[0].Function.Name != "get_weather" || string(args) != `{"city":"Paris"}` || !strings.HasPrefix(calls[0].ID, "call_") {
			t.Errorf("stream %v: call %s %s id %q", stream, calls[0].Function.Name, args, calls[0].ID)
		}
		if stream && order != "tf" {
			t.Errorf("streamed in the order %q, want the thinking, then the call", order)
		}

		var last api.ChatResponse
		content.Reset()
		thinking.Reset()
		err = c.Chat(t.Context(), &api.ChatRequest{Model: "gpt-oss-answer", Messages: user, Stream: &stream}, func(r api.ChatResponse) error {
			thinking.WriteString(r.Message.Thinking)
			content.WriteString(r.Message.Content)
			last = r
			return nil
		})
		if err != nil || content.String() != "Hello world" || thinking.String() != "A greeting." || last.DoneReason != "stop" {
			t.Errorf("stream %v: answer %q thinking %q done %q (%v)", stream, content.String(), thinking.String(), last.DoneReason, err)
		}

		got, calls, _ := chatAll(t, c, &api.ChatRequest{Model: "gpt-oss-bad", Messages: user, Stream: &stream, Tools: weatherTool()})
		if got != harmonyBad || len(calls) != 0 {
			t.Errorf("stream %v: a broken call gave content %q, calls %+v; want the text as written", stream, got, calls)
		}
		got, calls, _ = chatAll(t, c, &api.ChatRequest{Model: "gpt-oss-call", Messages: user, Stream: &stream})
		if want := `<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}`; got != want || len(calls) != 0 {
			t.Errorf("stream %v: a call without tools gave content %q, calls %+v; want the text as written", stream, got, calls)
		}
	}
}

// TestHarmonyRender: think's levels are the template's reasoning_effort
// (false is "low": gpt-oss always reasons), and a conversation with a
// call goes back in as harmony: the call's reasoning on the analysis
// channel, the call on commentary to the function, the result from it.
func TestHarmonyRender(t *testing.T) {
	c, _ := newHarmonyServer(t)
	render := func(think *api.ThinkValue, msgs []api.Message) string {
		t.Helper()
		var text string
		err := c.Chat(t.Context(), &api.ChatRequest{Model: "gpt-oss-final", Messages: msgs, Think: think, Tools: weatherTool(),
			DebugRenderOnly: true}, func(r api.ChatResponse) error {
			text = r.DebugInfo.RenderedTemplate
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	user := []api.Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		think *api.ThinkValue
		want  string
	}{{nil, "medium"}, {&api.ThinkValue{Value: true}, "medium"}, {&api.ThinkValue{Value: false}, "low"},
		{&api.ThinkValue{Value: "low"}, "low"}, {&api.ThinkValue{Value: "high"}, "high"}} {
		if text := render(tc.think, user); !strings.Contains(text, "\nReasoning: "+tc.want+"\n") {
			t.Errorf("think %v: rendered %q; want Reasoning: %s", tc.think, text, tc.want)
		}
	}
	// the arguments as the template's tojson writes them (Python's json.dumps)
	text := render(nil, roundTrip())
	want := "<|start|>user<|message|>What is the weather in Paris?<|end|>" +
		"<|start|>assistant<|channel|>analysis<|message|>" + harmonyThought + "<|end|>" +
		`<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}<|call|>` +
		`<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"sunny"<|end|><|start|>assistant`
	if !strings.HasSuffix(text, want) {
		t.Errorf("rendered\n%q\nwant it to end with\n%q", text, want)
	}
}

// roundTrip is a conversation through a call: the first reply of
// gpt-oss-call as /api/chat gave it, and the tool's result.
func roundTrip() []api.Message {
	args := api.NewToolCallFunctionArguments()
	args.Set("city", "Paris")
	return []api.Message{{Role: "user", Content: "What is the weather in Paris?"},
		{Role: "assistant", Thinking: harmonyThought, ToolCalls: []api.ToolCall{{ID: "call_1", Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}}}},
		{Role: "tool", Content: "sunny", ToolName: "get_weather", ToolCallID: "call_1"}}
}

// TestHarmonyRoundTrip: a call, its result and the final answer through
// the template on all three endpoints: the conversation renders (the
// template refuses a tool result without the call before it) and the
// answer on the final channel is the content.
func TestHarmonyRoundTrip(t *testing.T) {
	c, base := newHarmonyServer(t)
	for _, stream := range []bool{true, false} {
		content, calls, last := chatAll(t, c, &api.ChatRequest{Model: "gpt-oss-final", Messages: roundTrip(), Stream: &stream, Tools: weatherTool()})
		if content != "It is sunny in Paris." || len(calls) != 0 || last.DoneReason != "stop" {
			t.Errorf("api/chat stream %v: %q calls %+v done %q", stream, content, calls, last.DoneReason)
		}
	}
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	body := `{"model":"gpt-oss-final","temperature":0,` + tools + `,"messages":[{"role":"user","content":"What is the weather in Paris?"},
		{"role":"assistant","reasoning":"` + harmonyThought + `","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"sunny"}]}`
	var whole oaiWhole
	postJSON(t, base+"/v1/chat/completions", body, &whole)
	if m := whole.Choices[0]; m.Message.Content == nil || *m.Message.Content != "It is sunny in Paris." || m.FinishReason != "stop" {
		t.Errorf("chat completions: %+v", m)
	}
	var r respObject
	postJSON(t, base+"/v1/responses", `{"model":"gpt-oss-final","temperature":0,"tools":[{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object"}}],"input":[
		{"role":"user","content":"What is the weather in Paris?"},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`, &r)
	if len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Content[0].Text != "It is sunny in Paris." {
		t.Errorf("responses: %+v", r)
	}

	// the reasoning item before the call goes back in as its analysis
	items := `[{"role":"user","content":"What is the weather in Paris?"},
		{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"` + harmonyThought + `"}]},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"sunny"}]`
	var withThought, without respObject
	postJSON(t, base+"/v1/responses", `{"model":"gpt-oss-final","temperature":0,"tools":[{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object"}}],"input":`+items+`}`, &withThought)
	postJSON(t, base+"/v1/responses", `{"model":"gpt-oss-final","temperature":0,"tools":[{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object"}}],"input":[
		{"role":"user","content":"What is the weather in Paris?"},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`, &without)
	// the analysis message <|start|>assistant<|channel|>analysis<|message|>…<|end|> is in the prompt:
	// a token for each of its four marks, and one per byte of its text (the scripted vocabulary
	// has no pieces to merge bytes into)
	if d := withThought.Usage.InputTokens - without.Usage.InputTokens; d != 4+len("assistant")+len("analysis")+len(harmonyThought) ||
		withThought.Output[0].Content[0].Text != "It is sunny in Paris." {
		t.Errorf("responses with a reasoning item: %d input tokens more than without, answer %+v", d, withThought.Output)
	}
}

// oaiWhole is a /v1/chat/completions response.
type oaiWhole struct {
	Choices []struct {
		Message struct {
			Content   *string
			Reasoning string
			ToolCalls []oaiCall `json:"tool_calls"`
		}
		FinishReason string `json:"finish_reason"`
	}
}

type oaiCall struct {
	ID       string `json:"id"`
	Function struct{ Name, Arguments string }
}

// TestHarmonyOpenAI: /v1/chat/completions and /v1/responses split a
// harmony reply as /api/chat does: the reasoning, then the call with
// finish_reason "tool_calls" (the reasoning item, then the function_call
// item), streamed and not; an answer is the content; a broken call is
// content, finishing with "stop".
func TestHarmonyOpenAI(t *testing.T) {
	_, base := newHarmonyServer(t)
	tools := `,"tools":[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	for _, tc := range []struct{ model, content, reasoning, call, finish string }{
		{"gpt-oss-call", "", harmonyThought, `get_weather {"city":"Paris"}`, "tool_calls"},
		{"gpt-oss-answer", "Hello world", "A greeting.", "", "stop"},
		{"gpt-oss-bad", harmonyBad, "", "", "stop"},
	} {
		body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"What is the weather in Paris?"}],"temperature":0` + tools
		var whole oaiWhole
		postJSON(t, base+"/v1/chat/completions", body+`}`, &whole)
		ch := whole.Choices[0]
		content, call := "", ""
		if ch.Message.Content != nil {
			content = *ch.Message.Content
		}
		if len(ch.Message.ToolCalls) == 1 {
			call = ch.Message.ToolCalls[0].Function.Name + " " + ch.Message.ToolCalls[0].Function.Arguments
		}
		if content != tc.content || ch.Message.Reasoning != tc.reasoning || call != tc.call || ch.FinishReason != tc.finish {
			t.Errorf("%s whole: %+v", tc.model, ch)
		}
		type chunk struct {
			Choices []struct {
				Delta struct {
					Content   *string
					Reasoning string
					ToolCalls []oaiCall `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
		}
		var reasoning, finish, order string
		content, call = "", ""
		for _, c := range events[chunk](t, base+"/v1/chat/completions", body+`,"stream":true}`) {
			for _, ch := range c.Choices {
				d := ch.Delta
				if d.Reasoning != "" && !strings.HasSuffix(order, "t") {
					order += "t"
				}
				if d.Content != nil && *d.Content != "" && !strings.HasSuffix(order, "c") {
					order += "c"
				}
				for _, tc := range d.ToolCalls {
					order += "f"
					call += tc.Function.Name + " " + tc.Function.Arguments
				}
				reasoning += d.Reasoning
				if d.Content != nil {
					content += *d.Content
				}
				if ch.FinishReason != nil {
					finish = *ch.FinishReason
				}
			}
		}
		if content != tc.content || reasoning != tc.reasoning || call != tc.call || finish != tc.finish {
			t.Errorf("%s stream: content %q reasoning %q call %q finish %q", tc.model, content, reasoning, call, finish)
		}
		if want := map[string]string{"gpt-oss-call": "tf", "gpt-oss-answer": "tc", "gpt-oss-bad": "c"}[tc.model]; order != want {
			t.Errorf("%s stream: order %q, want %q", tc.model, order, want)
		}
	}

	rbody := `{"model":"gpt-oss-call","input":"What is the weather in Paris?","temperature":0,"tools":[{"type":"function","name":"get_weather","description":"The weather in a city","parameters":{"type":"object"}}]`
	var r struct {
		Output []struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
	}
	postJSON(t, base+"/v1/responses", rbody+`}`, &r)
	if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.Output[0].Content[0].Text != harmonyThought ||
		r.Output[1].Type != "function_call" || r.Output[1].Name != "get_weather" || r.Output[1].Arguments != `{"city":"Paris"}` {
		t.Errorf("responses whole: %+v", r)
	}
	var names []string
	for _, e := range respEvents(t, base+"/v1/responses", rbody+`,"stream":true}`) {
		if e.name == "response.output_text.delta" {
			t.Errorf("streamed text %v besides the reasoning and the call", e.data["delta"])
		}
		if e.name == "response.output_item.added" {
			item, _ := e.data["item"].(map[string]any)
			names = append(names, item["type"].(string))
		}
	}
	if strings.Join(names, " ") != "reasoning function_call" {
		t.Errorf("responses stream: items %v, want reasoning then function_call", names)
	}
}
