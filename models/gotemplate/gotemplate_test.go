package gotemplate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
	ollamatemplate "github.com/ollama/ollama/template"

	jinja "folio/models/template"
)

// sameAsOllama are templates in the shapes Ollama's library uses: messages
// with tools and tool calls, a system prompt gathered with printf, defined
// templates, the escaping functions, and the legacy .Prompt/.Response form.
var sameAsOllama = map[string]string{
	"tools": `{{- if .System }}<|system|>{{ .System }}<|end|>{{ end }}
{{- if .Tools }}<tools>{{ range .Tools }}{{ json .Function }}{{ end }}</tools>{{ end }}
{{- range $i, $m := .Messages }}{{ $last := eq (len (slice $.Messages $i)) 1 }}
<|{{ .Role }}|>{{ .Content }}{{ if .ToolCalls }}{{ range .ToolCalls }}<call>{"name": "{{ .Function.Name }}", "arguments": {{ .Function.Arguments }}}</call>{{ end }}{{ end }}
{{- if and $last (ne .Role "assistant") }}<|assistant|>{{ end }}{{ end }}`,
	"gathered system": `{{- $system := "" }}{{- range .Messages }}
{{- if eq .Role "system" }}{{ if not $system }}{{ $system = .Content }}{{ else }}{{ $system = printf "%s\n\n%s" $system .Content }}{{ end }}
{{- else if eq .Role "user" }}### Instruction: {{ if $system }}{{ $system }}
{{ $system = "" }}{{ end }}{{ .Content }}
{{ else if eq .Role "assistant" }}### Response: {{ .Content }}
{{ end }}{{ end }}### Response:`,
	"defines and escapes": `{{ define "turn" }}<{{ .Role }}>{{ html .Content }}|{{ js .Content }}|{{ urlquery .Content }}{{ println .Role 1 }}{{ end }}
{{- range .Messages }}{{ template "turn" . }}{{ printf "%q|%5s|%x|%[1]s|%d" .Content .Role .Role 7 }}{{ print 1 2 "x" 3 .Role }}{{ end }}
{{- block "tail" . }}{{ len .Messages }}{{ end }}`,
	"think":          `{{ if .IsThinkSet }}think={{ .Think }} {{ .ThinkLevel }}{{ end }}{{ range .Messages }}{{ .Content }};{{ end }}`,
	"legacy":         `{{ if .System }}[S]{{ .System }}{{ end }}[U]{{ .Prompt }}[A]{{ .Response }}</s>`,
	"legacy cut":     `{{ if .Prompt }}Q: {{ .Prompt }}{{ end }}A: {{ .Response }}{{ if .Response }} done{{ end }} end`,
	"legacy bare":    `{{ .System }} {{ .Prompt }}`,
	"legacy printf":  `{{ printf "%s|" .System }}{{ html .Prompt }}{{ print .Response " " .Think }}`,
	"legacy in pipe": `<{{ print .Prompt .Response "after" }}>{{ .Response }}tail`,
}

var conversations = [][]api.Message{
	{{Role: "user", Content: "hi <b>&'\"x\""}},
	{{Role: "system", Content: "be brief"}, {Role: "user", Content: "q1"}},
	{{Role: "system", Content: "s1"}, {Role: "system", Content: "s2"}, {Role: "user", Content: "q1"}, {Role: "assistant", Content: "a1"},
		{Role: "user", Content: "q2"}, {Role: "user", Content: "q2b"}},
	{{Role: "user", Content: "weather?"}, {Role: "assistant", ToolCalls: []api.ToolCall{{Function: api.ToolCallFunction{Name: "get_weather",
		Arguments: argsOf(map[string]any{"city": "Paris"})}}}}, {Role: "tool", Content: "sunny"}, {Role: "tool", Content: "warm"},
		{Role: "assistant", Content: "It is sunny."}, {Role: "system", Content: "late"}, {Role: "user", Content: "thanks"}},
}

func argsOf(m map[string]any) api.ToolCallFunctionArguments {
	var a api.ToolCallFunctionArguments
	for k, v := range m {
		a.Set(k, v)
	}
	return a
}

var weatherTools = api.Tools{{Type: "function", Function: api.ToolFunction{Name: "get_weather", Description: "Weather <now>",
	Parameters: api.ToolFunctionParameters{Type: "object", Required: []string{"city"}}}}}

// TestSameAsOllama: the ticks and the bounded functions change nothing: every
// template renders every conversation as Ollama's template package does.
func TestSameAsOllama(t *testing.T) {
	for name, src := range sameAsOllama {
		for i, msgs := range conversations {
			for _, v := range []ollamatemplate.Values{{Tools: weatherTools}, {Think: true, ThinkLevel: "high", IsThinkSet: true}} {
				ot, err := ollamatemplate.Parse(src)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				v.Messages = clone(msgs)
				var want bytes.Buffer
				if err := ot.Execute(&want, v); err != nil {
					t.Fatalf("%s, conversation %d: Ollama: %v", name, i, err)
				}
				tm, err := Parse(src)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				v.Messages = clone(msgs)
				got, err := tm.Execute(context.Background(), v)
				if err != nil || got != want.String() {
					t.Errorf("%s, conversation %d:\ngot  %q, %v\nwant %q", name, i, got, err, want.String())
				}
			}
		}
	}
}

// clone copies messages: Ollama's template package joins their contents in
// place.
func clone(msgs []api.Message) []api.Message { return append([]api.Message(nil), msgs...) }

// exponential is a chain of n templates, each calling the next twice.
func exponential(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{{ define "t%d" }}{{ template "t%d" . }}{{ template "t%d" . }}{{ end }}`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `{{ define "t%d" }}x{{ end }}{{ range .Messages }}{{ template "t0" . }}{{ end }}`, n)
	return b.String()
}

// chain is a chain of n templates, each calling the next once.
func chain(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{{ define "t%d" }}{{ template "t%d" . }}{{ end }}`, i, i+1)
	}
	fmt.Fprintf(&b, `{{ define "t%d" }}x{{ end }}{{ range .Messages }}{{ template "t0" . }}{{ end }}`, n)
	return b.String()
}

// TestRefused: templates whose {{ template }} calls multiply or nest without
// bound are refused when parsed, so that installing one fails.
func TestRefused(t *testing.T) {
	cases := []struct{ name, src, msg string }{
		{"exponential", exponential(30), "expand it to more than 5000000 steps"},
		{"recursion", `{{ define "a" }}{{ template "a" . }}{{ end }}{{ range .Messages }}{{ template "a" . }}{{ end }}`, `template "a" calls itself ("a" → "a")`},
		{"mutual recursion", `{{ define "a" }}{{ if . }}{{ template "b" . }}{{ end }}{{ end }}{{ define "b" }}{{ template "a" . }}{{ end }}{{ template "a" .Messages }}`, `("a" → "b" → "a")`},
		{"the root", `{{ range .Messages }}{{ template "" . }}{{ end }}`, `template "" calls itself`},
		{"deep", chain(150), "nest deeper than 100"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.src)
			if !errors.Is(err, jinja.ErrLimit) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want ErrLimit saying %q", err, c.msg)
			}
			if err := Check(c.src); err == nil {
				t.Error("Check accepts it")
			}
		})
	}
	for _, ok := range []string{exponential(16), chain(90), "{% for m in messages %}{% endfor %}", "{{ messages }}", sameAsOllama["tools"]} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%.40q): %v", ok, err)
		}
	}
	if _, err := Parse("{% if x %}{% endif %}"); !errors.Is(err, ErrNotGo) {
		t.Errorf("Jinja: %v, want ErrNotGo", err)
	}
}

// TestHostile renders templates built to hang or exhaust memory; each must
// stop with an ErrLimit error, in the template's own goroutine (Execute
// returns only when the rendering has stopped).
func TestHostile(t *testing.T) {
	many := make([]api.Message, 200)
	for i := range many {
		many[i] = api.Message{Role: []string{"user", "assistant"}[i%2], Content: "hello"}
	}
	big := strings.Repeat("%1000000d", 20)
	cases := []struct{ name, src, msg string }{
		{"huge range", `{{ range 1000000000000 }}{{ end }}{{ range .Messages }}{{ end }}`, "steps"},
		{"huge range printing", `{{ range 1000000000000 }}x{{ end }}{{ .Messages }}`, "steps"},
		{"nested ranges", `{{ range .Messages }}{{ range $.Messages }}{{ range $.Messages }}{{ range $.Messages }}{{ end }}{{ end }}{{ end }}{{ end }}`, "steps"},
		{"wide output", `{{ range .Messages }}{{ range $.Messages }}{{ printf "%100000s" "" }}{{ end }}{{ end }}`, "output exceeds"},
		{"printf doubling", `{{ $s := "ab" }}{{ range 64 }}{{ $s = printf "%s%s" $s $s }}{{ end }}{{ .Messages }}`, "printf would build"},
		{"print doubling", `{{ $s := "ab" }}{{ range 64 }}{{ $s = print $s $s }}{{ end }}{{ .Messages }}`, "print would build"},
		{"html growth", `{{ $s := "&&&&" }}{{ range 64 }}{{ $s = html $s $s }}{{ end }}{{ .Messages }}`, "html would build"},
		{"js growth", `{{ $s := "<<<<" }}{{ range 64 }}{{ $s = js $s }}{{ end }}{{ .Messages }}`, "js would build"},
		{"json growth", `{{ $s := "<<<<" }}{{ range 64 }}{{ $s = json $s }}{{ end }}{{ .Messages }}`, "json would build"},
		{"printf widths", `{{ printf "` + big + `" 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 }}{{ .Messages }}`, "printf would build"},
		{"printf by index", `{{ $s := printf "%1000000s" "" }}{{ printf "%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s%[1]s" $s }}{{ .Messages }}`, "printf would build"},
		{"printf of lists", `{{ range .Messages }}{{ printf "%1000000v" $.Messages }}{{ end }}`, "printf would build"},
		{"strings kept", `{{ range 1000000 }}{{ $a := printf "%100000s" "" }}{{ end }}{{ .Messages }}`, "steps"},
		{"legacy huge range", `{{ range 1000000000000 }}{{ end }}{{ .Prompt }}`, "steps"},
		{"legacy growth", `{{ $s := .Prompt }}{{ range 64 }}{{ $s = print $s $s }}{{ end }}{{ .Prompt }}{{ .Response }}`, "print would build"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, err := Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			out, err := tm.Execute(context.Background(), ollamatemplate.Values{Messages: clone(many)})
			if err == nil {
				t.Fatalf("rendered %d bytes, want an error", len(out))
			}
			if !errors.Is(err, jinja.ErrLimit) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want ErrLimit saying %q", err, c.msg)
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	tm, err := Parse(`{{ range 100 }}0123456789{{ end }}{{ range .Messages }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	tm.Limits.MaxOutput = 500
	if _, err := tm.Execute(context.Background(), ollamatemplate.Values{}); !errors.Is(err, jinja.ErrLimit) {
		t.Fatalf("error %v, want ErrLimit", err)
	}
	tm.Limits.MaxOutput = 1000
	out, err := tm.Execute(context.Background(), ollamatemplate.Values{})
	if err != nil || len(out) != 1000 {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
}

// TestTimeout: a rendering stops at its time limit, and when its context
// is cancelled, in the middle of a loop that writes nothing.
func TestTimeout(t *testing.T) {
	tm, err := Parse(`{{ range 100000 }}{{ range 100000 }}{{ end }}{{ end }}{{ range .Messages }}{{ end }}`)
	if err != nil {
		t.Fatal(err)
	}
	tm.Limits = jinja.Limits{MaxSteps: 1 << 62, MaxOutput: 1 << 40, MaxDepth: 100, Timeout: 50 * time.Millisecond}
	if _, err := tm.Execute(context.Background(), ollamatemplate.Values{}); !errors.Is(err, jinja.ErrLimit) ||
		!errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want ErrLimit and the deadline", err)
	}
	tm.Limits.Timeout = 0
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := tm.Execute(ctx, ollamatemplate.Values{})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, jinja.ErrLimit) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: error %v, want ErrLimit and the cancellation", err)
	}
}

// TestSuffix: a template that uses .Suffix says so and renders the
// fill-in-the-middle form as Ollama does, also when the text before is
// empty (Ollama would render its chat form then).
func TestSuffix(t *testing.T) {
	src := `{{- if .Suffix }}<PRE>{{ .Prompt }}<SUF>{{ .Suffix }}<MID>{{- else }}{{ range .Messages }}{{ .Content }}{{ end }}{{- end }}`
	tm, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if plain, _ := Parse(sameAsOllama["legacy"]); !tm.Suffix() || plain.Suffix() {
		t.Fatalf("Suffix() = %v for a template with .Suffix, %v for one without", tm.Suffix(), plain.Suffix())
	}
	ot, _ := ollamatemplate.Parse(src)
	var want bytes.Buffer
	if err := ot.Execute(&want, ollamatemplate.Values{Prompt: "a<b", Suffix: "c"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ prompt, want string }{{"a<b", want.String()}, {"", "<PRE><SUF>c<MID>"}} {
		got, err := tm.Execute(context.Background(), ollamatemplate.Values{Prompt: c.prompt, Suffix: "c"})
		if err != nil || got != c.want {
			t.Errorf("prompt %q: %q, %v; want %q", c.prompt, got, err, c.want)
		}
	}
}
