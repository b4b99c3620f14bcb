package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/types/model"

	"folio/installer"
	"folio/installer/fakehub"
	"folio/models/gguf"
)

// withFIM gives tiny-qwen2 (byte vocabulary, padded to 512) FIM tokens:
// three of its padding tokens.
func withFIM(w *gguf.Writer) {
	w.Set("tokenizer.ggml.fim_pre_token_id", uint32(300))
	w.Set("tokenizer.ggml.fim_suf_token_id", uint32(301))
	w.Set("tokenizer.ggml.middle_token_id", uint32(302)) // the older name
}

// generateOnce runs a non-streaming /api/generate and returns its answer.
func generateOnce(t *testing.T, c *api.Client, req api.GenerateRequest) (api.GenerateResponse, error) {
	t.Helper()
	no := false
	req.Stream = &no
	var out api.GenerateResponse
	err := c.Generate(context.Background(), &req, func(r api.GenerateResponse) error {
		out = r
		return nil
	})
	return out, err
}

func capabilities(t *testing.T, c *api.Client, name string) []model.Capability {
	t.Helper()
	resp, err := c.Show(context.Background(), &api.ShowRequest{Model: name})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Capabilities
}

// TestInsertTokens: a suffix on a model with FIM tokens (and no template
// that uses .Suffix) is llama.cpp's infill prompt, token for token; /api/show
// says insert; /v1/completions' suffix is the same prompt; a model with
// neither refuses a suffix with Ollama's message.
func TestInsertTokens(t *testing.T) {
	c, base := newTestServer(t, withFIM)
	opts := map[string]any{"temperature": 0, "num_predict": 4}
	resp, err := generateOnce(t, c, api.GenerateRequest{Model: "tiny-qwen2", Prompt: "ab", Suffix: "cd", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	// BOS, FIM_PRE, ▁ a b, FIM_SUF, ▁ c d, FIM_MID: bytes are <0x00> + 3
	want := []int{1, 300, 259, 3 + 'a', 3 + 'b', 301, 259, 3 + 'c', 3 + 'd', 302}
	if len(resp.Context) < len(want) || !slices.Equal(resp.Context[:len(want)], want) || resp.PromptEvalCount != len(want) {
		t.Fatalf("FIM prompt %v (prompt_eval_count %d), want %v", resp.Context, resp.PromptEvalCount, want)
	}
	// over num_ctx (16, room 4: 12 tokens), the prompt loses its start and
	// the suffix its end, the markers stay: 4 + 6 of the prompt + 2 of the suffix
	cut, err := generateOnce(t, c, api.GenerateRequest{Model: "tiny-qwen2", Prompt: "abcdefghij", Suffix: "klmn",
		Options: map[string]any{"temperature": 0, "num_predict": 4, "num_ctx": 16}})
	if err != nil {
		t.Fatal(err)
	}
	wantCut := []int{1, 300, 3 + 'e', 3 + 'f', 3 + 'g', 3 + 'h', 3 + 'i', 3 + 'j', 301, 259, 3 + 'k', 302}
	if len(cut.Context) < len(wantCut) || !slices.Equal(cut.Context[:len(wantCut)], wantCut) {
		t.Errorf("FIM prompt cut to num_ctx 16: %v, want %v", cut.Context, wantCut)
	}
	if caps := capabilities(t, c, "tiny-qwen2"); !slices.Contains(caps, model.CapabilityInsert) {
		t.Errorf("tiny-qwen2 with FIM tokens: capabilities %v, want insert", caps)
	}
	if caps := capabilities(t, c, "stories260k"); slices.Contains(caps, model.CapabilityInsert) {
		t.Errorf("stories260k: capabilities %v, want no insert", caps)
	}

	// /v1/completions: the same prompt, so the same greedy text
	var one textObject
	postJSON(t, base+"/v1/completions", `{"model": "tiny-qwen2", "prompt": "ab", "suffix": "cd", "temperature": 0, "max_tokens": 4}`, &one)
	if len(one.Choices) != 1 || one.Choices[0].Text != resp.Response || one.Usage.PromptTokens != len(want) {
		t.Errorf("/v1/completions with suffix: %+v; want %q from %d prompt tokens", one, resp.Response, len(want))
	}

	// no FIM tokens, no template: refused, not ignored
	_, err = generateOnce(t, c, api.GenerateRequest{Model: "stories260k", Prompt: "ab", Suffix: "cd"})
	var se api.StatusError
	if !asStatus(err, &se) || se.StatusCode != 400 || !strings.Contains(se.ErrorMessage, `"stories260k" does not support insert`) {
		t.Errorf("suffix on stories260k: %v, want 400 does not support insert", err)
	}
	status, _, data := post(t, base+"/v1/completions", `{"model": "stories260k", "prompt": "ab", "suffix": "cd"}`)
	if status != 400 || !strings.Contains(string(data), "does not support insert") || !strings.Contains(string(data), `"param":"suffix"`) {
		t.Errorf("/v1/completions suffix on stories260k: %d %s", status, data)
	}
}

// TestInsertTemplate: a model whose Go template uses .Suffix (the shape of
// Ollama's qwen2.5-coder template) renders the suffix through it, on
// /api/generate and /v1/completions, and /api/show says insert; a
// template sent with the request works alike.
func TestInsertTemplate(t *testing.T) {
	tmpl := `{{- if .Suffix }}<PRE>{{ .Prompt }}<SUF>{{ .Suffix }}<MID>{{- else }}{{ range .Messages }}<{{ .Role }}>{{ .Content }}{{ end }}<assistant>{{- end }}`
	c, name, _ := pullConfigured(t, fakehub.Layer{MediaType: installer.MediaTemplate, Data: []byte(tmpl)})
	if caps := capabilities(t, c, name); !slices.Contains(caps, model.CapabilityInsert) {
		t.Errorf("capabilities %v, want insert", caps)
	}
	for _, prompt := range []string{"ab", ""} {
		resp, err := generateOnce(t, c, api.GenerateRequest{Model: name, Prompt: prompt, Suffix: "cd", DebugRenderOnly: true})
		if want := "<PRE>" + prompt + "<SUF>cd<MID>"; err != nil || resp.DebugInfo == nil || resp.DebugInfo.RenderedTemplate != want {
			t.Errorf("prompt %q: rendered %+v, %v; want %q", prompt, resp.DebugInfo, err, want)
		}
	}
	// over num_ctx, the texts are cut at token boundaries and rendered again
	cut, err := generateOnce(t, c, api.GenerateRequest{Model: name, Prompt: "abcdefghijklmnopqrstuvwxyz", Suffix: "0123456789",
		DebugRenderOnly: true, Options: map[string]any{"num_ctx": 32, "num_predict": 4}})
	if want := "<PRE>qrstuvwxyz<SUF>01<MID>"; err != nil || cut.DebugInfo == nil || cut.DebugInfo.RenderedTemplate != want {
		t.Errorf("cut to num_ctx 32: rendered %+v, %v; want %q", cut.DebugInfo, err, want)
	}
	// the prompt computed is the rendered text's
	opts := map[string]any{"temperature": 0, "num_predict": 3}
	fim, err := generateOnce(t, c, api.GenerateRequest{Model: name, Prompt: "ab", Suffix: "cd", Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := generateOnce(t, c, api.GenerateRequest{Model: name, Prompt: "<PRE>ab<SUF>cd<MID>", Raw: true, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fim.Context, raw.Context) || fim.Response != raw.Response {
		t.Errorf("suffix through the template: context %v %q; raw rendering: %v %q", fim.Context, fim.Response, raw.Context, raw.Response)
	}

	// a template sent with the request, on a model without FIM tokens
	c2, _ := newTestServer(t)
	resp, err := generateOnce(t, c2, api.GenerateRequest{Model: "stories260k", Prompt: "ab", Suffix: "cd", Template: tmpl, DebugRenderOnly: true})
	if err != nil || resp.DebugInfo == nil || resp.DebugInfo.RenderedTemplate != "<PRE>ab<SUF>cd<MID>" {
		t.Errorf("request template: %+v, %v", resp.DebugInfo, err)
	}
}

// TestCompletionsEcho: echo starts each choice's text with its prompt,
// whole and streamed, for text and token-id prompts.
func TestCompletionsEcho(t *testing.T) {
	c, base := newTestServer(t)
	want := greedy(t, c, "Once upon a time", 6)
	url := base + "/v1/completions"
	ids := fmt.Sprint(c2ids(t, c)[1:]) // without BOS, which decodes to nothing
	ids = strings.ReplaceAll(ids, " ", ",")
	for _, prompt := range []string{`"Once upon a time"`, ids} {
		var one textObject
		postJSON(t, url, `{"model": "stories260k", "prompt": `+prompt+`, "echo": true, "temperature": 0, "max_tokens": 6}`, &one)
		if len(one.Choices) != 1 || one.Choices[0].Text != "Once upon a time"+want {
			t.Errorf("prompt %s, echo: %+v; want %q", prompt, one.Choices, "Once upon a time"+want)
		}
	}
	chunks := events[textObject](t, url, `{"model": "stories260k", "prompt": "Once upon a time", "echo": true, "n": 2, "temperature": 0, "max_tokens": 6, "stream": true}`)
	texts := map[int]string{}
	for _, ch := range chunks {
		texts[ch.Choices[0].Index] += ch.Choices[0].Text
	}
	if texts[0] != "Once upon a time"+want || texts[1] != texts[0] {
		t.Errorf("streamed echo: %v", texts)
	}
}

// TestLogitBias: logit_bias on /v1/completions and /v1/chat/completions:
// -100 on the greedy token gives the runner-up, +100 forces a token,
// and an id outside the vocabulary is a 400 naming it.
func TestLogitBias(t *testing.T) {
	c, base := newTestServer(t)
	ctx := c2ids(t, c)
	url := base + "/v1/completions"
	body := func(extra string) string {
		return `{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 1, "logprobs": 2` + extra + `}`
	}
	var plain textObject
	postJSON(t, url, body(""), &plain)
	top := plain.Choices[0].Logprobs.TopLogprobs[0]
	first := plain.Choices[0].Text
	var second string
	for tok := range top {
		if tok != first && (second == "" || top[tok] > top[second]) {
			second = tok
		}
	}
	resp, err := generateOnce(t, c, api.GenerateRequest{Model: "stories260k", Prompt: "Once upon a time", Options: map[string]any{"temperature": 0, "num_predict": 1}})
	if err != nil {
		t.Fatal(err)
	}
	greedyID := resp.Context[len(ctx)]
	var banned textObject
	postJSON(t, url, body(fmt.Sprintf(`, "logit_bias": {"%d": -100}`, greedyID)), &banned)
	if got := banned.Choices[0].Text; got != second || got == first {
		t.Errorf("greedy token %d (%q) banned: got %q, want the runner-up %q", greedyID, first, got, second)
	}

	// +100 on "e" (<0x65>, a byte token) forces it every step, also in chat
	var forced textObject
	postJSON(t, url, `{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0.8, "seed": 1, "max_tokens": 3, "logit_bias": {"104": 100}}`, &forced)
	if got := forced.Choices[0].Text; got != "eee" {
		t.Errorf("+100 on <0x65>: %q, want eee", got)
	}
	var chat chatObject
	postJSON(t, base+"/v1/chat/completions", `{"model": "stories260k", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "logit_bias": {"104": 100}}`, &chat)
	if got := chat.Choices[0].Message.Content; got != "eee" {
		t.Errorf("chat, +100 on <0x65>: %q, want eee", got)
	}

	for _, c := range []struct{ path, bias, want string }{
		{"/v1/completions", `{"512": 1}`, "token 512 is outside the vocabulary"},
		{"/v1/chat/completions", `{"99999": -100}`, "token 99999 is outside the vocabulary"},
		{"/v1/completions", `{"e": 1}`, "is not a token id"},
		{"/v1/completions", `{"5": 101}`, "use -100 to 100"},
	} {
		body := `{"model": "stories260k", "prompt": "hi", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "logit_bias": ` + c.bias + `}`
		status, _, data := post(t, base+c.path, body)
		if status != 400 || !strings.Contains(string(data), c.want) || !strings.Contains(string(data), `"param":"logit_bias"`) {
			t.Errorf("%s logit_bias %s: %d %s; want 400 with %q", c.path, c.bias, status, data, c.want)
		}
	}
}
