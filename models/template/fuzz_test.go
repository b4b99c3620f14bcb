package template

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzLimits keep one fuzz input fast.
var fuzzLimits = Limits{MaxSteps: 200_000, MaxOutput: 1 << 16, MaxDepth: 40, Timeout: 2 * time.Second}

// fuzzContext gives hostile templates real data to walk: every message
// shape, tools, tokens and an extra variable.
func fuzzContext() Context {
	bos, eos := "<s>", "</s>"
	weather := Object{{"type", "function"}, {"function", Object{{"name", "get_weather"},
		{"parameters", Object{{"type", "object"}, {"properties", Object{{"location", Object{{"type", "string"}}}}}}}}}}
	return Context{
		Messages: []Message{
			{Role: "system", Content: "You are helpful."},
			{Role: "user", Content: "Hi {{ x }} 🦙\n"},
			{Role: "assistant", Content: "<think>hm</think>ok", Thinking: "hm",
				ToolCalls: []ToolCall{{ID: "a1b2c3d4e", Name: "get_weather", Arguments: Object{{"location", "Zürich"}}}}},
			{Role: "tool", Content: `{"t": 18}`, ToolCallID: "a1b2c3d4e", ToolName: "get_weather"},
			{Role: "user", Content: []any{Object{{"type", "text"}, {"text", "parts"}}, Object{{"type", "image"}}}},
		},
		Tools:               []any{weather},
		AddGenerationPrompt: true,
		BOSToken:            &bos,
		EOSToken:            &eos,
		Vars:                map[string]any{"enable_thinking": false, "n": int64(3)},
		Now:                 time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC),
	}
}

// FuzzRender feeds hostile templates to Parse and Render: no panic, every
// error an *Error, output within MaxOutput, and bounded time. The seed
// corpus is testdata/fuzz/FuzzRender plus the real templates of
// ../shared/templates when they are there.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{{ messages[0].content }}`,
		`{% for m in messages %}{{ m.role }}{{ m.tool_calls|tojson }}{% endfor %}`,
		`{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}`,
		`{{ tools|tojson(indent=2) }}{{ strftime_now("%d %b %Y") }}`,
	} {
		f.Add(s)
	}
	if matches, _ := filepath.Glob(filepath.Join(sharedGuess(), "templates", "*.jinja")); len(matches) > 0 {
		for _, m := range matches {
			if b, err := os.ReadFile(m); err == nil {
				f.Add(string(b))
			}
		}
	}
	ctx := fuzzContext()
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := Parse(src)
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || errors.Is(err, ErrInternal) {
				t.Fatalf("Parse: error %T %v", err, err)
			}
			return
		}
		tm.Limits = fuzzLimits
		start := time.Now()
		out, err := tm.Render(ctx)
		if d := time.Since(start); d > 10*time.Second { // Timeout is 2s; slack for a loaded machine
			t.Fatalf("rendering took %v", d)
		}
		if len(out) > fuzzLimits.MaxOutput {
			t.Fatalf("output of %d bytes over the limit", len(out))
		}
		if err != nil {
			var te *Error
			if !errors.As(err, &te) || errors.Is(err, ErrInternal) {
				t.Fatalf("Render: error %T %v", err, err)
			}
		}
	})
}

// sharedGuess finds ../shared without failing: seeds are optional.
func sharedGuess() string {
	if d := os.Getenv("FOLIO_SHARED"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared")
}
