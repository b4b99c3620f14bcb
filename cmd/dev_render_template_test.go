package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/internal/fixtures"
)

// TestRenderTemplate renders real templates of ../shared/templates through
// the command line and compares with the reference renderings.
func TestRenderTemplate(t *testing.T) {
	dir := filepath.Join(fixtures.Shared(t), "templates")
	tmp := t.TempDir()
	writeCase := func(name, body string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The tools case of conversations.json, with Llama 3.1's tokens; the
	// template calls strftime_now, so --now pins the date.
	tools := writeCase("tools.json", `{
  "add_generation_prompt": true,
  "bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>",
  "tools": [{"type": "function", "function": {"name": "get_weather",
    "description": "Get the current weather for a location.",
    "parameters": {"type": "object", "properties": {"location": {"type": "string",
      "description": "City name, e.g. Zürich"}}, "required": ["location"]}}}],
  "messages": [
    {"role": "user", "content": "What's the weather in Zürich right now?"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "a1b2c3d4e", "type": "function",
      "function": {"name": "get_weather", "arguments": {"location": "Zürich"}}}]},
    {"role": "tool", "tool_call_id": "a1b2c3d4e", "name": "get_weather",
      "content": "{\"temperature\": \"18°C\", \"condition\": \"light rain\"}"}
  ]}`)
	system := writeCase("system.json", `{"add_generation_prompt": true, "bos_token": "<bos>", "eos_token": null,
  "messages": [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Hello!"}]}`)

	for _, tc := range []struct {
		template, caseFile, expected string
		now                          string
	}{
		{"meta-llama-Llama-3.2-3B-Instruct", tools, "meta-llama-Llama-3.2-3B-Instruct__tools.txt", "2024-07-26"},
		{"Qwen-Qwen3-0.6B", tools, "Qwen-Qwen3-0.6B__tools.txt", ""},
	} {
		args := []string{"dev", "render-template", filepath.Join(dir, tc.template+".jinja"), "--case", tc.caseFile}
		if tc.now != "" {
			args = append(args, "--now", tc.now)
		}
		got, err := execute(t, args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.template, err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "expected", tc.expected))
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: got %q\nwant %q", tc.template, got, want)
		}
	}

	// Gemma 2 refuses a system message: the template's own error.
	_, err := execute(t, "dev", "render-template", filepath.Join(dir, "google-gemma-2-2b-it.jinja"), "--case", system)
	if err == nil || err.Error() != "System role not supported" {
		t.Errorf("gemma 2 with a system message: error %v, want the template's message", err)
	}
	// A template that prints the undefined eos_token prints nothing for it.
	phi := writeCase("phi.json", `{"add_generation_prompt": false, "bos_token": null, "eos_token": null,
  "messages": [{"role": "user", "content": "Hi"}]}`)
	got, err := execute(t, "dev", "render-template", filepath.Join(dir, "microsoft-Phi-3-mini-4k-instruct.jinja"), "--case", phi)
	if err != nil || got != "<|user|>\nHi<|end|>\n" {
		t.Errorf("phi-3 without tokens: got %q, %v", got, err)
	}
	if _, err := execute(t, "dev", "render-template", filepath.Join(dir, "microsoft-phi-4.jinja")); err == nil || !strings.Contains(err.Error(), "case") {
		t.Errorf("missing --case: error %v", err)
	}
}
