package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/models/template"
)

// TestDeepseekCallsRoundTrip: an assistant turn with two calls, as
// DeepSeek-R1's real template writes it into the conversation, reads back
// as the same calls (names, arguments, order) and no content, in pieces of
// any size.
func TestDeepseekCallsRoundTrip(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(fixtures.Shared(t), "templates", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{`{"city": "Paris", "days": 2}`, `{"city": "Rome", "unit": {"temp": "C"}}`}
	msgs := []template.Message{{Role: "user", Content: "Weather in Paris and Rome?"}, {Role: "assistant", Content: "",
		ToolCalls: []template.ToolCall{{Name: "get_weather", Arguments: args[0]}, {Name: "get_weather", Arguments: args[1]}}}}
	out, err := template.Render(string(src), template.Context{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	_, turn, ok := strings.Cut(out, "<｜Assistant｜>")
	end := strings.Index(turn, dsCallsEnd)
	if !ok || !strings.HasPrefix(turn, dsCallsBegin) || end < 0 {
		t.Fatalf("the template wrote %q", out)
	}
	turn = turn[:end+len(dsCallsEnd)] // the end of the turn follows
	for _, step := range []int{1, 7, len(turn)} {
		p := &deepseekCalls{callMaker: callMaker{tools: weatherTools()}}
		calls, content := feedCalls(p, turn, step)
		content += p.held()
		if content != "" || len(calls) != 2 {
			t.Fatalf("pieces of %d: content %q, %d calls from %q", step, content, len(calls), turn)
		}
		for i, c := range calls {
			got, _ := json.Marshal(c.Function.Arguments)
			var want any
			json.Unmarshal([]byte(args[i]), &want)
			w, _ := json.Marshal(want)
			if c.Function.Name != "get_weather" || string(got) != string(w) || c.Function.Index != i {
				t.Errorf("pieces of %d: call %d is %s(%s) #%d, want get_weather(%s) #%d", step, i, c.Function.Name, got, c.Function.Index, w, i)
			}
		}
	}
}
