package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

// gemmaTemplate is Gemma 4's chat template cut to what folio reads of it:
// the tools it renders, its thinking channel (empty after the generation
// prompt when enable_thinking is false) and the literal before a call's
// name.
const gemmaTemplate = `{%- if tools %}{% for tool in tools %}<|tool>{{ tool.function.name }}<tool|>{% endfor %}{% endif %}` +
	`{%- for message in messages %}<|turn>{{ message.role }}{{ '\n' }}{% for tc in message.tool_calls or [] %}` +
	`{{- '<|tool_call>call:' + tc.function.name + '{' }}}<tool_call|>{% endfor %}{{ message.content }}<turn|>{{ '\n' }}{% endfor %}` +
	`{%- if add_generation_prompt %}<|turn>model{{ '\n' }}{% if not enable_thinking %}{{ '<|channel>thought\n<channel|>' }}{% endif %}{% endif %}`

// gemmaPieces are the ways a test streams text: whole, a byte at a time,
// and cut in two at every point.
func gemmaPieces(text string) [][]string {
	out := [][]string{{text}, nil}
	for i := range len(text) {
		out[1] = append(out[1], text[i:i+1])
		out = append(out, []string{text[:i], text[i:]})
	}
	return out
}

// gemmaTools are get_weather and write_file.
func gemmaTools() api.Tools { return append(weatherTools(), writeFileTool()) }

// TestGemmaTemplate: a template that writes '<|tool_call>call:' gets
// Gemma 4's call parser, and one with the thought channel's tags thinks.
func TestGemmaTemplate(t *testing.T) {
	c := capsOf(gemmaTemplate)
	if !c.tools || !c.thinks() || c.thinkOpen != "<|channel>thought" || c.thinkClose != "<channel|>" {
		t.Errorf("caps %+v; want tools and thinking in the thought channel", c)
	}
	ts := newToolStream(&loaded{template: gemmaTemplate}, modelConf{}, gemmaTools())
	if p, ok := ts.p.(*taggedCalls); !ok || p.open != "<|tool_call>" || p.close != "<tool_call|>" {
		t.Errorf("parser %#v; want Gemma 4's", ts.p)
	}
	// without the literal (the tag alone, as in text) another parser reads the calls
	plain := `{% if tools %}{{ tools | tojson }}{% endif %}Call tools as <|tool_call>call:NAME{}.`
	if p, ok := newToolStream(&loaded{template: plain}, modelConf{}, gemmaTools()).p.(*taggedCalls); ok && p.open == "<|tool_call>" {
		t.Error("a template without the quoted literal got Gemma 4's parser")
	}
}

// TestGemmaReply: Gemma 4's replies split into thinking, content and calls
// as llama.cpp's parser splits them, however they stream: the thought
// channel is thinking (none with think false), empty channels and a stray
// close are dropped, and a call that is not one of the request's tools,
// or not in Gemma's notation, stays content as written.
func TestGemmaReply(t *testing.T) {
	const (
		paris = `<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>`
		rome  = `<|tool_call>call:get_weather{city:<|"|>Rome<|"|>,days:2}<tool_call|>`
	)
	for _, tc := range []struct {
		name              string
		think             bool
		reply             string
		content, thinking string
		calls             []string // name and arguments of each
	}{
		{"thinking then content", true, "<|channel>thought\nThe user greets me.<channel|>Hello! How can I help?",
			"Hello! How can I help?", "The user greets me.", nil},
		{"thinking then a call", true, "<|channel>thought\nThe user wants the weather in Paris.<channel|>" + paris,
			"", "The user wants the weather in Paris.", []string{`get_weather {"city":"Paris"}`}},
		{"two calls", true, "<|channel>thought\nTwo cities.<channel|>Let me check both.\n" + paris + rome,
			"Let me check both.", "Two cities.", []string{`get_weather {"city":"Paris"}`, `get_weather {"city":"Rome","days":2}`}},
		{"empty channels before the thought", true, "<|channel><|channel>thought\n<channel|>Hello, world!", "Hello, world!", "", nil},
		{"a stray close after the answer", true, "<|channel>thought\n<channel|>Hello, world!<channel|>", "Hello, world!", "", nil},
		{"an empty thought after the answer", true, "<|channel>thought\n<channel|>Hi.<|channel>thought\n<channel|><channel|>", "Hi.", "", nil},
		{"a later thought", true, "<|channel>thought\nA.<channel|>Hi.<|channel>thought\nB.<channel|>", "Hi.", "A.B.", nil},
		{"an empty channel in the answer", true, "Hi.<|channel> Bye.", "Hi. Bye.", "", nil},
		{"a channel cut off at the end", true, "Hi.<|channel>", "Hi.", "", nil},
		{"marks' starts in text", true, "a <b <chan <|chan", "a <b <chan <|chan", "", nil},
		{"think off: an unclosed thought", false, "<|channel>thought\nhidden <chan", "", "", nil},
		{"think off: a stray close", false, "Hello, world!<channel|>", "Hello, world!", "", nil},
		{"think off: a thought is dropped", false, "<|channel>thought\nhidden<channel|>Hi." + paris, "Hi.", "", []string{`get_weather {"city":"Paris"}`}},
		{"unknown tool", true, `<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>`,
			`<|tool_call>call:get_time{city:<|"|>Paris<|"|>}<tool_call|>`, "", nil},
		{"JSON arguments", true, `<|tool_call>call:get_weather{"city": "Paris"}<tool_call|>`, `<|tool_call>call:get_weather{"city": "Paris"}<tool_call|>`, "", nil},
		{"unfinished call", true, `Checking.<|tool_call>call:get_weather{city:<|"|>Par`, `Checking.<|tool_call>call:get_weather{city:<|"|>Par`, "", nil},
	} {
		prompt := "<|turn>user\nhi<turn|>\n<|turn>model\n"
		if !tc.think {
			prompt += "<|channel>thought\n<channel|>"
		}
		think := &api.ThinkValue{Value: tc.think}
		caps := capsOf(gemmaTemplate)
		for _, pieces := range gemmaPieces(tc.reply) {
			r := newReplySplitter(thinkState(prompt, think, caps), newToolStream(&loaded{template: gemmaTemplate}, modelConf{}, gemmaTools()))
			var content, thinking strings.Builder
			var calls []string
			gather := func(c, th string, cl []api.ToolCall) {
				content.WriteString(c)
				thinking.WriteString(th)
				for _, call := range cl {
					args, _ := json.Marshal(call.Function.Arguments)
					calls = append(calls, call.Function.Name+" "+string(args))
				}
			}
			for _, p := range pieces {
				gather(r.add(p))
			}
			gather(r.flush())
			if content.String() != tc.content || thinking.String() != tc.thinking || strings.Join(calls, "; ") != strings.Join(tc.calls, "; ") {
				t.Errorf("%s, pieces %q: content %q, thinking %q, calls %q; want %q, %q, %q", tc.name, pieces,
					content.String(), thinking.String(), calls, tc.content, tc.thinking, tc.calls)
				break
			}
		}
	}
}

// TestGemmaCallValues: Gemma 4's notation becomes JSON whatever the
// pieces: nested objects and arrays, numbers, booleans and null as they
// are, strings with any character but <|"|> (quotes, backslashes, commas,
// colons, braces, newlines) escaped, whitespace after '{', '[', ',' and ':'
// and before a close allowed; keys keep their order.
func TestGemmaCallValues(t *testing.T) {
	text := "<|tool_call>call:write_file{path:<|\"|>C:\\dir\\\"q\".txt<|\"|>,content:<|\"|>a, b: {c}\n[d] <tool\\n<|\"|>," +
		"opts:{ mode: 420, ratio:-1.5e3,append:true,backup:false,owner:null, tags:[<|\"|>x<|\"|>, [1, { }], [ ] ] },empty:<|\"|><|\"|>}<tool_call|>"
	want := `{"path":"C:\\dir\\\"q\".txt","content":"a, b: {c}\n[d] \u003ctool\\n",` +
		`"opts":{"append":true,"backup":false,"mode":420,"owner":null,"ratio":-1500,"tags":["x",[1,{}],[]]},"empty":""}`
	for _, pieces := range gemmaPieces(text) {
		p := &taggedCalls{callMaker: callMaker{tools: api.Tools{writeFileTool()}}, open: gemmaCall, close: gemmaCallEnd, read: gemmaRead}
		var calls []api.ToolCall
		var content string
		for _, s := range pieces {
			c, s := p.Add(s)
			calls, content = append(calls, c...), content+s
		}
		if content != "" || p.held() != "" || len(calls) != 1 || calls[0].Function.Name != "write_file" {
			t.Fatalf("pieces %q: content %q, held %q, calls %+v", pieces, content, p.held(), calls)
		}
		if got, _ := json.Marshal(calls[0].Function.Arguments); string(got) != want {
			t.Fatalf("pieces %q: arguments\n%s, want\n%s", pieces, got, want)
		}
	}
}

// TestGemmaCallNotation: arguments that are not in Gemma's notation make
// no call; the text stays content.
func TestGemmaCallNotation(t *testing.T) {
	for _, args := range []string{
		`{city:Paris}`,                // a string without its marks
		`{city:<|"|>Paris}`,           // a string not closed
		`{city:<|"|>Paris<|"|>,}`,     // a comma before the close
		`{city <|"|>Paris<|"|>}`,      // no colon
		`{:1}`,                        // no key
		`{days:02}`,                   // not a number
		`{days:True}`,                 // Python's boolean
		`{days:[1,2}`,                 // an array not closed
		`{days:1} and more`,           // text after the object
		`{days:1`,                     // the object not closed
		`[1]`,                         // not an object
		`{days:1}{}`,                  // two objects
		`{a:{b:<|"|>x<|"|> c:1}}`,     // no comma
		`{city:<|"|>Paris<|"|><|"|>}`, // a third mark
	} {
		text := "<|tool_call>call:get_weather" + args + "<tool_call|>"
		p := &taggedCalls{callMaker: callMaker{tools: weatherTools()}, open: gemmaCall, close: gemmaCallEnd, read: gemmaRead}
		calls, content := feedCalls(p, text, 3)
		if content+p.held() != text || len(calls) != 0 {
			t.Errorf("%s: content %q, calls %+v; want the text and no call", args, content+p.held(), calls)
		}
	}
}
