package server_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/tokenizer"
)

// The chat families of issue 22, each a scripted model (scripted_test.go)
// carrying the family's real chat template: ../shared/templates, and
// Granite 3.3's in testdata/templates (see its SOURCES.md).
var (
	mistralSpecials = []string{"[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
		"[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[ARGS]", "[CALL_ID]", "[TOOL_CONTENT]", "[IMG]"}
	gemmaSpecials   = []string{"<start_of_turn>", "<end_of_turn>"}
	phi3Specials    = []string{"<|system|>", "<|user|>", "<|assistant|>", "<|end|>"}
	graniteSpecials = []string{"<|start_of_role|>", "<|end_of_role|>", "<|tool_call|>"}
	hello           = []string{"Hello", "\u2581world"}
	weatherCall     = `[{"name":"get_weather","arguments":{"city":"Paris"}}]`
)

// familyModels are the scripted models by name: template file, tokens, the
// prompt's last token and the reply (a call, for the families whose
// template defines tool calls).
var familyModels = map[string]struct {
	file string
	s    scripted
}{
	"gemma2": {"google-gemma-2-2b-it.jinja", scripted{bos: "<bos>", eos: "<eos>", specials: gemmaSpecials, start: "\n", reply: hello, end: "<end_of_turn>"}},
	"gemma3": {"google-gemma-3-1b-it.jinja", scripted{bos: "<bos>", eos: "<eos>", specials: gemmaSpecials, start: "\n", reply: hello, end: "<end_of_turn>"}},
	// Phi-3's special tokens take the newline after them (llama.cpp's rstrip, by general.name),
	// so the prompt ends with <|assistant|>; Phi-3.5's name does not say phi3: it ends with "\n".
	"phi3": {"microsoft-Phi-3-mini-4k-instruct.jinja", scripted{name: "Phi3", bos: "<s>", eos: "<|endoftext|>", specials: phi3Specials,
		start: "<|assistant|>", reply: hello, end: "<|end|>"}},
	"phi3.5": {"microsoft-Phi-3.5-mini-instruct.jinja", scripted{name: "Phi 3.5 Mini Instruct", bos: "<s>", eos: "<|endoftext|>",
		specials: phi3Specials, start: "\n", reply: hello, end: "<|end|>"}},
	"phi4":        {"microsoft-phi-4.jinja", scripted{bos: "<|endoftext|>", eos: "<|im_end|>", specials: []string{"<|im_start|>", "<|im_sep|>"}, start: "<|im_sep|>", reply: hello}},
	"mistral-0.2": {"mistralai-Mistral-7B-Instruct-v0.2.jinja", scripted{bos: "<s>", eos: "</s>", specials: mistralSpecials, start: "[/INST]", reply: hello}},
	"nemo": {"mistralai-Mistral-Nemo-Instruct-2407.jinja", scripted{bos: "<s>", eos: "</s>", specials: mistralSpecials, start: "[/INST]",
		reply: []string{"[TOOL_CALLS]", weatherCall}}},
	"small3.2": {"Mistral-Small-3.2-24B-Instruct-2506.jinja", scripted{bos: "<s>", eos: "</s>", specials: mistralSpecials, start: "[/INST]",
		reply: []string{"[TOOL_CALLS]", "get_weather", "[CALL_ID]", "a1B2c3D4e", "[ARGS]", `{"city":"Paris"}`}}},
	"devstral": {"unsloth-mistral-Devstral-Small-2507.jinja", scripted{bos: "<s>", eos: "</s>", specials: mistralSpecials, start: "[/INST]",
		reply: []string{"[TOOL_CALLS]", "get_weather", "[ARGS]", `{"city":"Paris"}`}}},
	"devstral-nocall": {"unsloth-mistral-Devstral-Small-2507.jinja", scripted{bos: "<s>", eos: "</s>", specials: mistralSpecials, start: "[/INST]",
		reply: []string{"Sure", "[TOOL_CALLS]", "nope", "[ARGS]", "{}"}}},
	"granite3.3": {llamaCppTemplates + "ibm-granite-granite-3.3-2B-Instruct.jinja", scripted{bos: "<s>", eos: "<|end_of_text|>",
		specials: graniteSpecials, start: "<|end_of_role|>", reply: []string{"<|tool_call|>", weatherCall}}},
}

// llamaCppTemplates marks a template ../shared/templates lacks, read from
// llama.cpp's source (fixtures.LlamaCppFile): Granite 3.3's.
const llamaCppTemplates = "llama.cpp:models/templates/"

// newFamilyServer serves the scripted family models. Under -short, which
// skips the llama.cpp kit, those whose template comes from llama.cpp's
// source are left out (skipFamily).
func newFamilyServer(t *testing.T) (*api.Client, string) {
	t.Helper()
	dir := t.TempDir()
	for name, m := range familyModels {
		var tmpl []byte
		var err error
		switch path, ok := strings.CutPrefix(m.file, "llama.cpp:"); {
		case ok && testing.Short():
			continue
		case ok:
			tmpl = fixtures.LlamaCppFile(t, path)
		default:
			tmpl, err = os.ReadFile(filepath.Join(fixtures.Shared(t), "templates", m.file))
		}
		if err != nil {
			t.Fatal(err)
		}
		m.s.template = string(tmpl)
		m.s.write(t, filepath.Join(dir, name+".gguf"))
	}
	return serveLibrary(t, dir)
}

// skipFamily skips a test of a model newFamilyServer left out.
func skipFamily(t *testing.T, name string) {
	if testing.Short() && strings.HasPrefix(familyModels[name].file, "llama.cpp:") {
		t.Skipf("%s's template comes from llama.cpp's source, which -short skips", name)
	}
}

// familyMessages is a conversation the family's template accepts: the
// Mistral Small 3.2 and Devstral templates get a system message (their
// defaults run to thousands of tokens), Gemma 2's refuses one.
func familyMessages(name string) []api.Message {
	msgs := []api.Message{{Role: "user", Content: "What is the weather in Paris?"}}
	if name == "small3.2" || strings.HasPrefix(name, "devstral") || name == "granite3.3" {
		msgs = append([]api.Message{{Role: "system", Content: "Use the tools."}}, msgs...)
	}
	return msgs
}

func weatherTool() api.Tools {
	var tool api.Tool
	tool.Type, tool.Function.Name, tool.Function.Description = "function", "get_weather", "The weather in a city"
	tool.Function.Parameters.Type = "object"
	tool.Function.Parameters.Required = []string{"city"}
	tool.Function.Parameters.Properties = api.NewToolPropertiesMap()
	tool.Function.Parameters.Properties.Set("city", api.ToolProperty{Type: api.PropertyType{"string"}})
	return api.Tools{tool}
}

// chatAll runs one /api/chat request and gathers its content and calls.
func chatAll(t *testing.T, c *api.Client, req *api.ChatRequest) (string, []api.ToolCall, api.ChatResponse) {
	t.Helper()
	var content strings.Builder
	var calls []api.ToolCall
	var last api.ChatResponse
	err := c.Chat(context.Background(), req, func(r api.ChatResponse) error {
		content.WriteString(r.Message.Content)
		calls = append(calls, r.Message.ToolCalls...)
		last = r
		return nil
	})
	if err != nil {
		t.Fatalf("chat with %s: %v", req.Model, err)
	}
	return content.String(), calls, last
}

// TestFamilyChat: each family's real template drives /api/chat and
// /v1/chat/completions: the reply the model writes after the template's
// generation prompt comes back as the message, whole or streamed, ending
// at the family's end token (Gemma's <end_of_turn>, Phi-3's <|end|>: not
// their eos).
func TestFamilyChat(t *testing.T) {
	c, base := newFamilyServer(t)
	for _, name := range []string{"gemma2", "gemma3", "phi3", "phi3.5", "phi4", "mistral-0.2"} {
		t.Run(name, func(t *testing.T) {
			skipFamily(t, name)
			for _, stream := range []bool{true, false} {
				content, calls, last := chatAll(t, c, &api.ChatRequest{Model: name, Messages: familyMessages(name), Stream: &stream,
					Options: map[string]any{"temperature": 0, "num_predict": 20}})
				if content != "Hello world" || len(calls) != 0 || last.DoneReason != "stop" || last.EvalCount != 2 {
					t.Errorf("stream %v: %q, calls %v, done %q after %d tokens; want \"Hello world\" and stop after 2",
						stream, content, calls, last.DoneReason, last.EvalCount)
				}
			}
			var whole struct {
				Choices []struct {
					Message      struct{ Content string }
					FinishReason string `json:"finish_reason"`
				}
			}
			postJSON(t, base+"/v1/chat/completions", `{"model":"`+name+`","messages":[{"role":"user","content":"hi"}],"temperature":0}`, &whole)
			if len(whole.Choices) != 1 || whole.Choices[0].Message.Content != "Hello world" || whole.Choices[0].FinishReason != "stop" {
				t.Errorf("/v1/chat/completions: %+v", whole)
			}
		})
	}
}

// TestFamilyToolCalls: a reply in the family's tool-call form — Mistral
// Nemo's [TOOL_CALLS] JSON array, Mistral Small 3.2's
// [TOOL_CALLS]name[CALL_ID]id[ARGS]{…}, Devstral's [TOOL_CALLS]name[ARGS]{…},
// Granite's <|tool_call|> array, each mark a control token as in the real
// vocabularies — comes back from /api/chat as one call of get_weather with
// its arguments and no content, streamed or not; without tools it is the
// text the model wrote.
func TestFamilyToolCalls(t *testing.T) {
	c, _ := newFamilyServer(t)
	for _, name := range []string{"nemo", "small3.2", "devstral", "granite3.3"} {
		t.Run(name, func(t *testing.T) {
			skipFamily(t, name)
			for _, stream := range []bool{true, false} {
				content, calls, last := chatAll(t, c, &api.ChatRequest{Model: name, Messages: familyMessages(name), Stream: &stream,
					Tools: weatherTool(), Options: map[string]any{"temperature": 0, "num_predict": 20}})
				if content != "" || len(calls) != 1 || last.DoneReason != "stop" {
					t.Fatalf("stream %v: content %q, calls %+v, done %q; want one call", stream, content, calls, last.DoneReason)
				}
				args, _ := json.Marshal(calls[0].Function.Arguments)
				if calls[0].Function.Name != "get_weather" || string(args) != `{"city":"Paris"}` || !callID.MatchString(calls[0].ID) {
					t.Errorf("stream %v: call %s %s id %q", stream, calls[0].Function.Name, args, calls[0].ID)
				}
			}
			no := false
			content, calls, _ := chatAll(t, c, &api.ChatRequest{Model: name, Messages: familyMessages(name), Stream: &no,
				Options: map[string]any{"temperature": 0, "num_predict": 20}})
			want := strings.Join(familyModels[name].s.reply, "")
			if content != want || len(calls) != 0 {
				t.Errorf("without tools: %q, calls %v; want the text %q", content, calls, want)
			}
		})
	}
	// A reply that uses the mark but is no call of the request's tools
	// stays content, marks and all.
	for _, stream := range []bool{true, false} {
		content, calls, _ := chatAll(t, c, &api.ChatRequest{Model: "devstral-nocall", Messages: familyMessages("devstral-nocall"),
			Stream: &stream, Tools: weatherTool(), Options: map[string]any{"temperature": 0, "num_predict": 20}})
		if content != "Sure[TOOL_CALLS]nope[ARGS]{}" || len(calls) != 0 {
			t.Errorf("not a call, stream %v: %q, calls %+v", stream, content, calls)
		}
	}
}

// TestFamilyToolCallsOpenAI: the same calls through /v1/chat/completions:
// message.tool_calls with the arguments as JSON text and finish_reason
// tool_calls, whole and in chunks.
func TestFamilyToolCallsOpenAI(t *testing.T) {
	_, base := newFamilyServer(t)
	type call struct {
		ID       string `json:"id"`
		Function struct{ Name, Arguments string }
	}
	for _, name := range []string{"nemo", "small3.2", "devstral", "granite3.3"} {
		t.Run(name, func(t *testing.T) {
			skipFamily(t, name)
			msgs, _ := json.Marshal(familyMessages(name))
			body := `{"model":"` + name + `","messages":` + string(msgs) + `,"temperature":0,"max_tokens":20,
				"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
			var whole struct {
				Choices []struct {
					Message struct {
						Content   *string
						ToolCalls []call `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
			}
			postJSON(t, base+"/v1/chat/completions", body+`}`, &whole)
			ch := whole.Choices[0]
			if len(ch.Message.ToolCalls) != 1 || ch.FinishReason != "tool_calls" || ch.Message.Content != nil {
				t.Fatalf("whole: %+v", ch)
			}
			if tc := ch.Message.ToolCalls[0]; tc.Function.Name != "get_weather" || tc.Function.Arguments != `{"city":"Paris"}` {
				t.Errorf("whole: call %+v", tc)
			}
			type chunk struct {
				Choices []struct {
					Delta struct {
						Content   *string
						ToolCalls []call `json:"tool_calls"`
					}
					FinishReason *string `json:"finish_reason"`
				}
			}
			var calls []call
			finish, content := "", ""
			for _, c := range events[chunk](t, base+"/v1/chat/completions", body+`,"stream":true}`) {
				for _, ch := range c.Choices {
					calls = append(calls, ch.Delta.ToolCalls...)
					if ch.Delta.Content != nil {
						content += *ch.Delta.Content
					}
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
				}
			}
			if len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` ||
				finish != "tool_calls" || content != "" {
				t.Errorf("stream: calls %+v, content %q, finish %q", calls, content, finish)
			}
		})
	}
}

// TestFamilyRender: Granite 3.3's template (read from llama.cpp's source:
// ../shared/templates, whose golden test renders the others byte for byte
// against Python Jinja2, lacks it) renders a conversation with tools
// through /api/chat: the system turn, the tools' JSON schemas in their own
// role, the user turn, in order, and the assistant's turn opened last.
func TestFamilyRender(t *testing.T) {
	skipFamily(t, "granite3.3")
	c, _ := newFamilyServer(t)
	no := false
	var got api.ChatResponse
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "granite3.3", Messages: familyMessages("granite3.3"), Tools: weatherTool(),
		Stream: &no, DebugRenderOnly: true}, func(r api.ChatResponse) error { got = r; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.DebugInfo == nil {
		t.Fatal("no rendered template")
	}
	r := got.DebugInfo.RenderedTemplate
	at := 0
	for _, want := range []string{"<|start_of_role|>system<|end_of_role|>Use the tools.<|end_of_text|>",
		"<|start_of_role|>available_tools<|end_of_role|>", `"name": "get_weather"`, `"description": "The weather in a city"`,
		"<|start_of_role|>user<|end_of_role|>What is the weather in Paris?<|end_of_text|>"} {
		i := strings.Index(r[at:], want)
		if i < 0 {
			t.Fatalf("rendered %q\nlacks %q after byte %d", r, want, at)
		}
		at += i + len(want)
	}
	if !strings.HasSuffix(r, "<|start_of_role|>assistant<|end_of_role|>") {
		t.Fatalf("rendered %q\ndoes not end with the assistant's turn opened", r)
	}
}

// TestFamilyToolRoundTrip: a conversation that answers a call goes back
// through Mistral's templates, which demand call ids of 9 letters and
// digits and a tool_call_id on each result: folio's own ids (call_ and 8
// characters) and an Ollama client's result without an id (tool_name
// only) become ids the template accepts, the same one in the call and in
// its result.
func TestFamilyToolRoundTrip(t *testing.T) {
	c, base := newFamilyServer(t)
	args := api.NewToolCallFunctionArguments()
	args.Set("city", "Paris")
	call := api.ToolCall{ID: "call_x1y2z3w4", Function: api.ToolCallFunction{Name: "get_weather", Arguments: args}}
	id9 := regexp.MustCompile(`\[CALL_ID\]([a-zA-Z0-9]{9})\[ARGS\]|"id": "([a-zA-Z0-9]{9})"`)
	result := regexp.MustCompile(`\[TOOL_RESULTS\]([a-zA-Z0-9]{9})\[TOOL_CONTENT\]sunny|"call_id": "([a-zA-Z0-9]{9})"`)
	for _, name := range []string{"nemo", "small3.2"} {
		for _, withID := range []bool{false, true} {
			msgs := append(familyMessages(name),
				api.Message{Role: "assistant", ToolCalls: []api.ToolCall{call}},
				api.Message{Role: "tool", Content: "sunny", ToolName: "get_weather"})
			if withID {
				msgs[len(msgs)-1].ToolCallID = call.ID
			}
			no := false
			var got api.ChatResponse
			err := c.Chat(context.Background(), &api.ChatRequest{Model: name, Messages: msgs, Tools: weatherTool(), Stream: &no,
				DebugRenderOnly: true}, func(r api.ChatResponse) error { got = r; return nil })
			if err != nil {
				t.Fatalf("%s, result id %v: %v", name, withID, err)
			}
			text := got.DebugInfo.RenderedTemplate
			m1, m2 := id9.FindStringSubmatch(text), result.FindStringSubmatch(text)
			if m1 == nil || m2 == nil || m1[1]+m1[2] != m2[1]+m2[2] {
				t.Errorf("%s, result id %v: call %q and result %q ids differ in\n%s", name, withID, m1, m2, text)
			}
		}
	}
	// The same through /v1/chat/completions, with OpenAI's ids.
	body := `{"model":"nemo","max_tokens":5,"temperature":0,"messages":[{"role":"user","content":"weather?"},
		{"role":"assistant","tool_calls":[{"id":"call_abc","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_abc","content":"sunny"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	var whole struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
	}
	postJSON(t, base+"/v1/chat/completions", body, &whole)
	if len(whole.Choices) != 1 {
		t.Errorf("/v1: %+v", whole)
	}
}

// phi4MiniGoTemplate writes Phi-4-mini's prompt the way its model card
// describes tool use (the tools' JSON between <|tool|> and <|/tool|> in
// the system turn, calls as a JSON list between <|tool_call|> and
// <|/tool_call|>), in Ollama's Go syntax: Phi-4-mini's own Jinja template
// reads tools from the system message, which neither API has, so its
// calls come through a Modelfile TEMPLATE such as this one (written here
// for the test).
const phi4MiniGoTemplate = `{{- if or .System .Tools }}<|system|>{{ .System }}` +
	`{{- if .Tools }}<|tool|>[{{ range $i, $t := .Tools }}{{ if $i }}, {{ end }}{{ json $t.Function }}{{ end }}]<|/tool|>{{ end }}<|end|>{{ end }}` +
	`{{- range .Messages }}{{ if ne .Role "system" }}<|{{ .Role }}|>{{ .Content }}` +
	`{{- if .ToolCalls }}<|tool_call|>[{{ range .ToolCalls }}{"name": "{{ .Function.Name }}", "arguments": {{ json .Function.Arguments }}}{{ end }}]<|/tool_call|>{{ end }}<|end|>{{ end }}{{ end }}<|assistant|>`

// TestFamilyToolCallsModelfile: Phi-4-mini's calls (<|tool_call|>[…]<|/tool_call|>,
// control tokens in its vocabulary) through a template in Go syntax that
// comes with the model from a registry, as `folio pull` of an Ollama model
// gets one: the tag comes from the template, the marks decode as text, and
// the reply is one call, streamed or not.
func TestFamilyToolCallsModelfile(t *testing.T) {
	phi := scripted{name: "Phi 4 Mini Instruct", bos: "<|endoftext|>", eos: "<|end|>",
		specials: []string{"<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|/tool|>", "<|tool_call|>", "<|/tool_call|>"},
		start:    "<|assistant|>", reply: []string{"<|tool_call|>", weatherCall, "<|/tool_call|>"}}
	path := filepath.Join(t.TempDir(), "phi4-mini.gguf")
	phi.write(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hub := fakehub.New()
	t.Cleanup(hub.Close)
	hub.Publish("library", "phi4-mini", "latest", fakehub.Layer{MediaType: installer.MediaModel, Data: data},
		fakehub.Layer{MediaType: installer.MediaTemplate, Data: []byte(phi4MiniGoTemplate)})
	c, _, _ := newInstallServer(t)
	name := hub.Host() + "/library/phi4-mini"
	ctx := context.Background()
	if err := c.Pull(ctx, &api.PullRequest{Model: name, Insecure: true}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []bool{true, false} {
		content, calls, _ := chatAll(t, c, &api.ChatRequest{Model: name, Messages: familyMessages("phi4-mini"), Stream: &stream,
			Tools: weatherTool(), Options: map[string]any{"temperature": 0, "num_predict": 20}})
		if content != "" || len(calls) != 1 {
			t.Fatalf("stream %v: content %q, calls %+v; want one call", stream, content, calls)
		}
		if args, _ := json.Marshal(calls[0].Function.Arguments); calls[0].Function.Name != "get_weather" || string(args) != `{"city":"Paris"}` {
			t.Errorf("stream %v: call %s %s", stream, calls[0].Function.Name, args)
		}
	}
}

// TestFamilyGptoss: harmony replies written by a gpt-oss model (synth's
// random blocks under a scripted vocabulary and output matrix:
// scripted.writeGptoss) with gpt-oss's real template. The prompt folio
// evaluates is llama.cpp's tokenization of the rendered template, and
// llama.cpp continues it greedily with the reply up to its stop token
// (<|return|> after an answer, <|call|> after a call); folio writes the
// same tokens and stops there, and /api/chat and /v1/chat/completions
// split them by channel (the analysis as thinking, the final message as
// content, a commentary message to functions.get_weather as the call),
// with no harmony mark in the content or the thinking.
func TestFamilyGptoss(t *testing.T) {
	fixtures.Llamaref(t)
	tmpl, err := os.ReadFile(filepath.Join(fixtures.Shared(t), "templates", "openai-gpt-oss-120b.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := []struct {
		name                      string
		thinking, content, finish string
		call                      bool
	}{
		{"gpt-oss-answer", "A greeting.", "Hello world", "stop", false},
		{"gpt-oss-call", harmonyThought, "", "tool_calls", true},
	}
	for _, c := range cases {
		reply := harmonyModels[c.name]
		s := scripted{name: c.name, template: string(tmpl), bos: "<|startoftext|>", eos: "<|return|>", specials: harmonySpecials, start: "t", reply: reply}
		if c.call {
			s.reply, s.end = reply[:len(reply)-1], "<|call|>"
		}
		s.writeGptoss(t, filepath.Join(dir, c.name+".gguf"))
	}
	client, base := serveLibraryCtx(t, dir, 2048)
	user := []api.Message{{Role: "user", Content: "What is the weather in Paris?"}}
	marks := regexp.MustCompile(`<\|(start|channel|message|constrain|end|call|return)\|>`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".gguf")
			no := false
			var rendered api.ChatResponse
			err := client.Chat(t.Context(), &api.ChatRequest{Model: c.name, Messages: user, Tools: weatherTool(), Stream: &no, DebugRenderOnly: true},
				func(r api.ChatResponse) error { rendered = r; return nil })
			if err != nil || rendered.DebugInfo == nil {
				t.Fatalf("render: %v, %+v", err, rendered)
			}
			prompt := rendered.DebugInfo.RenderedTemplate
			if !strings.HasSuffix(prompt, "<|start|>assistant") || !strings.Contains(prompt, "get_weather") {
				t.Fatalf("rendered prompt does not offer the tool and open the assistant's turn:\n%s", prompt)
			}
			var tok struct {
				WithSpecial struct{ IDs []int32 } `json:"with_special"`
			}
			var ref struct {
				Greedy struct {
					Tokens []struct{ Piece string }
				}
			}
			if err := json.Unmarshal(fixtures.RunLlamaref(t, "tokenize", path, "--prompt", prompt, "--special", "--compact"), &struct {
				Tokenization *struct {
					WithSpecial struct{ IDs []int32 } `json:"with_special"`
				}
			}{&tok}); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			tk, err := tokenizer.New(f)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := tk.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); !slices.Equal(got, tok.WithSpecial.IDs) {
				t.Fatalf("the rendered prompt tokenizes differently:\n folio     %v\n llama.cpp %v", got, tok.WithSpecial.IDs)
			}
			// llamaref's --stop-eog would stop at <|end|> (node-llama-cpp
			// takes llama.cpp's eot for an end; llama.cpp itself does not
			// for harmony): the reply's length instead.
			want := harmonyModels[c.name]
			if !c.call {
				want = append(slices.Clone(want), "<|return|>")
			}
			ids, _ := json.Marshal(tok.WithSpecial.IDs)
			if err := json.Unmarshal(fixtures.RunLlamaref(t, "run", path, "--tokens", string(ids), "--n-predict", strconv.Itoa(len(want)),
				"--kv-type", "f32", "--flash-attn", "off", "--threads", "1", "--top", "1", "--compact"), &ref); err != nil {
				t.Fatal(err)
			}
			var pieces []string
			for _, g := range ref.Greedy.Tokens {
				pieces = append(pieces, g.Piece)
			}
			if !slices.Equal(pieces, want) {
				t.Fatalf("llama.cpp continues the prompt with %q, not the scripted reply %q", pieces, want)
			}
			for _, stream := range []bool{true, false} {
				var thinking, content strings.Builder
				var calls []api.ToolCall
				var last api.ChatResponse
				err := client.Chat(t.Context(), &api.ChatRequest{Model: c.name, Messages: user, Tools: weatherTool(), Stream: &stream,
					Options: map[string]any{"temperature": 0, "num_predict": 40}}, func(r api.ChatResponse) error {
					thinking.WriteString(r.Message.Thinking)
					content.WriteString(r.Message.Content)
					calls = append(calls, r.Message.ToolCalls...)
					last = r
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if last.PromptEvalCount != len(tok.WithSpecial.IDs) || last.EvalCount != len(pieces)-1 || last.DoneReason != "stop" {
					t.Errorf("stream %v: %d prompt tokens (llama.cpp %d), %d written (llama.cpp %d before its stop token), done %q",
						stream, last.PromptEvalCount, len(tok.WithSpecial.IDs), last.EvalCount, len(pieces)-1, last.DoneReason)
				}
				if thinking.String() != c.thinking || content.String() != c.content || marks.MatchString(thinking.String()+content.String()) {
					t.Errorf("stream %v: thinking %q, content %q; want %q and %q", stream, thinking.String(), content.String(), c.thinking, c.content)
				}
				args, _ := json.Marshal(calls)
				if c.call != (len(calls) == 1) || c.call && (calls[0].Function.Name != "get_weather" || !strings.Contains(string(args), `"arguments":{"city":"Paris"}`)) {
					t.Errorf("stream %v: calls %s", stream, args)
				}
			}
			var whole struct {
				Choices []struct {
					Message struct {
						Content   *string
						Reasoning string
						ToolCalls []struct {
							Function struct{ Name, Arguments string }
						} `json:"tool_calls"`
					}
					FinishReason string `json:"finish_reason"`
				}
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				}
			}
			postJSON(t, base+"/v1/chat/completions", `{"model":"`+c.name+`","messages":[{"role":"user","content":"What is the weather in Paris?"}],"temperature":0,
				"tools":[{"type":"function","function":{"name":"get_weather","description":"The weather in a city","parameters":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}}}]}`, &whole)
			if len(whole.Choices) != 1 {
				t.Fatalf("/v1/chat/completions: %+v", whole)
			}
			ch := whole.Choices[0]
			text := ""
			if ch.Message.Content != nil {
				text = *ch.Message.Content
			}
			if text != c.content || ch.FinishReason != c.finish || marks.MatchString(text+ch.Message.Reasoning) || c.call != (len(ch.Message.ToolCalls) == 1) {
				t.Errorf("/v1/chat/completions: %+v", ch)
			}
			if whole.Usage.PromptTokens != len(tok.WithSpecial.IDs) {
				t.Errorf("/v1/chat/completions: %d prompt tokens, llama.cpp's tokenization has %d", whole.Usage.PromptTokens, len(tok.WithSpecial.IDs))
			}
		})
	}
}
