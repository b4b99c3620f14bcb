package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
)

// TestOpenAIChatNConcurrent: five chat completions of n=16 at once (80
// samples, more than the engine's 64 sequences) and a streaming generate
// beside them all answer in full; every greedy choice is the request's
// answer alone.
func TestOpenAIChatNConcurrent(t *testing.T) {
	c, base := newTestServer(t)
	url := base + "/v1/chat/completions"
	prompts := []string{"Once upon a time", "The cat sat", "Lily had a ball", "One day", "Tom and Sam"}
	body := func(prompt string, n int) string {
		return fmt.Sprintf(`{"model": "stories260k", "messages": [{"role": "user", "content": %q}], "temperature": 0, "max_tokens": 40, "n": %d}`, prompt, n)
	}
	type answer struct {
		status int
		data   []byte
		err    error
	}
	answers := make([]answer, len(prompts))
	var streamed strings.Builder
	var streamErr error
	streamDone := false
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() {
			resp, err := http.Post(url, "application/json", strings.NewReader(body(p, 16)))
			if err != nil {
				answers[i].err = err
				return
			}
			defer resp.Body.Close()
			answers[i].status = resp.StatusCode
			answers[i].data, answers[i].err = io.ReadAll(resp.Body)
		})
	}
	gen := &api.GenerateRequest{Model: "stories260k", Prompt: "Once upon a time",
		Options: map[string]any{"temperature": 0, "num_predict": 200}}
	wg.Go(func() {
		streamErr = c.Generate(context.Background(), gen, func(r api.GenerateResponse) error {
			streamed.WriteString(r.Response)
			streamDone = streamDone || r.Done
			return nil
		})
	})
	wg.Wait()

	for i, a := range answers {
		if a.err != nil || a.status != http.StatusOK {
			t.Errorf("request %d: %d %v %s", i, a.status, a.err, a.data)
			continue
		}
		var got chatObject
		if err := json.Unmarshal(a.data, &got); err != nil {
			t.Fatal(err)
		}
		var alone chatObject
		postJSON(t, url, body(prompts[i], 1), &alone)
		if len(got.Choices) != 16 {
			t.Errorf("request %d: %d choices, want 16", i, len(got.Choices))
		}
		for k, ch := range got.Choices {
			if ch.Index != k || ch.Message.Content != alone.Choices[0].Message.Content {
				t.Errorf("request %d choice %d (index %d): %q, alone: %q", i, k, ch.Index, ch.Message.Content, alone.Choices[0].Message.Content)
			}
		}
	}
	if streamErr != nil || !streamDone {
		t.Fatalf("the generate streamed beside them: done %v, %v", streamDone, streamErr)
	}
	if want := greedy(t, c, gen.Prompt, 200); streamed.String() != want {
		t.Errorf("the generate streamed beside them: %q, alone: %q", streamed.String(), want)
	}
}
