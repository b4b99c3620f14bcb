package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/tokenizer"
	"folio/runner"
	"folio/server"
)

// truncLogs is a log destination that handlers may share.
type truncLogs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *truncLogs) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *truncLogs) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// truncServer serves the test library, tiny-qwen2 carrying Qwen 2.5's
// chat template (its vocabulary is bytes: one token a byte, after BOS),
// with num_ctx 512 and the log recorded at debug level. tok is
// tiny-qwen2's tokenizer.
func truncServer(t *testing.T) (c *api.Client, base string, tok *tokenizer.Tokenizer, logs *truncLogs) {
	t.Helper()
	tmpl, err := os.ReadFile(filepath.Join(fixtures.Shared(t), "templates", "Qwen-Qwen2.5-7B-Instruct.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	dir := newTestLibrary(t, func(w *gguf.Writer) { w.Set("tokenizer.chat_template", string(tmpl)) })
	f, err := gguf.Open(filepath.Join(dir, "tiny-qwen2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if tok, err = tokenizer.New(f); err != nil {
		t.Fatal(err)
	}
	logs = &truncLogs{}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Version: "test", Load: runner.LoadOptions{NumCtx: 512},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	u, _ := url.Parse(hs.URL)
	return api.NewClient(u, hs.Client()), hs.URL, tok, logs
}

// numbered is n numbers, "000 001 002 …": text whose every part differs.
func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%03d ", i)
	}
	return b.String()
}

func truncGenerate(t *testing.T, c *api.Client, req *api.GenerateRequest) api.GenerateResponse {
	t.Helper()
	stream := false
	req.Stream = &stream
	var got api.GenerateResponse
	if err := c.Generate(context.Background(), req, func(r api.GenerateResponse) error { got = r; return nil }); err != nil {
		t.Fatalf("generate: %v", err)
	}
	return got
}

func truncIDs(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// TestTruncateGenerateKeepsEnd: /api/generate with a prompt longer than
// num_ctx keeps, as Ollama does, the first num_keep tokens (default 4,
// BOS among them; BOS even with num_keep 0) and the end of the prompt,
// leaving room for the answer: num_predict, or half the context. The
// answer is the one the kept tokens give alone, and the debug log says
// how many tokens went.
func TestTruncateGenerateKeepsEnd(t *testing.T) {
	c, _, tok, logs := truncServer(t)
	prompt := numbered(50) // 200 bytes: 201 tokens with BOS
	full := tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true})
	if len(full) <= 64 || full[0] != tok.Vocab().BOS {
		t.Fatalf("the prompt has %d tokens, first %d", len(full), full[0])
	}
	for _, tc := range []struct {
		name       string
		options    map[string]any
		keep, kept int
	}{
		{"num_predict leaves its room", map[string]any{"num_ctx": 64, "num_predict": 8}, 4, 56},
		{"half the context without num_predict", map[string]any{"num_ctx": 64}, 4, 32},
		{"num_keep 1", map[string]any{"num_ctx": 64, "num_predict": 8, "num_keep": 1}, 1, 56},
		{"num_keep 0 keeps BOS", map[string]any{"num_ctx": 64, "num_predict": 8, "num_keep": 0}, 1, 56},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.options["temperature"] = 0
			got := truncGenerate(t, c, &api.GenerateRequest{Model: "tiny-qwen2", Prompt: prompt, Raw: true, Options: tc.options})
			want := append(slices.Clip(full[:tc.keep]), full[len(full)-(tc.kept-tc.keep):]...)
			ctx := truncIDs(got.Context)
			if !got.Done || len(ctx) != tc.kept+got.EvalCount || !slices.Equal(ctx[:min(len(ctx), tc.kept)], want) {
				t.Fatalf("context %v (%d generated, done %v), want the prompt %v", ctx, got.EvalCount, got.Done, want)
			}
			// the answer is that of the kept tokens sent alone
			solo := truncGenerate(t, c, &api.GenerateRequest{Model: "tiny-qwen2", Raw: true, Context: got.Context[:tc.kept],
				Options: map[string]any{"temperature": 0, "num_predict": got.EvalCount}})
			if solo.Response != got.Response {
				t.Errorf("truncated: %q; the kept tokens alone: %q", got.Response, solo.Response)
			}
		})
	}
	if line := fmt.Sprintf("prompt_tokens=%d tokens_dropped=%d kept_tokens=56", len(full), len(full)-56); !strings.Contains(logs.String(), line) {
		t.Errorf("the debug log does not say %q:\n%s", line, logs.String())
	}
}

// TestTruncateFalseRefuses: truncate:false keeps Ollama's refusal of a
// prompt longer than num_ctx, a 400 naming num_ctx, on /api/generate and
// /api/chat; with truncation on (the default) the same requests answer.
func TestTruncateFalseRefuses(t *testing.T) {
	_, base, _, _ := truncServer(t)
	long := strings.Repeat("word ", 200)
	for _, tc := range []struct{ path, body string }{
		{"/api/generate", `{"model": "tiny-qwen2", "prompt": "` + long + `", "stream": false, "options": {"num_ctx": 64, "num_predict": 2}%s}`},
		{"/api/generate", `{"model": "tiny-qwen2", "prompt": "` + long + `", "raw": true, "stream": false, "options": {"num_ctx": 64, "num_predict": 2}%s}`},
		{"/api/chat", `{"model": "tiny-qwen2", "messages": [{"role": "user", "content": "` + long + `"}], "stream": false, "options": {"num_ctx": 64, "num_predict": 2}%s}`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			status, _, body := post(t, base+tc.path, fmt.Sprintf(tc.body, `, "truncate": false`))
			if status != 400 || !strings.Contains(string(body), "num_ctx") {
				t.Errorf("%s with truncate:false: %d %s; want 400 naming num_ctx", tc.path, status, body)
			}
			for _, trunc := range []string{"", `, "truncate": true`} {
				status, _, body = post(t, base+tc.path, fmt.Sprintf(tc.body, trunc))
				var done struct {
					Done            bool `json:"done"`
					PromptEvalCount int  `json:"prompt_eval_count"`
				}
				if json.Unmarshal(body, &done); status != 200 || !done.Done || done.PromptEvalCount > 64 {
					t.Errorf("%s%s: %d %s; want a truncated answer", tc.path, trunc, status, body)
				}
			}
		})
	}
}

// truncChatText is the prompt /api/chat renders for msgs, untruncated.
func truncChatText(t *testing.T, c *api.Client, msgs []api.Message) string {
	t.Helper()
	stream, no := false, false
	var got api.ChatResponse
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Messages: msgs, Stream: &stream, Truncate: &no, DebugRenderOnly: true},
		func(r api.ChatResponse) error { got = r; return nil })
	if err != nil || got.DebugInfo == nil {
		t.Fatalf("render: %v %+v", err, got)
	}
	return got.DebugInfo.RenderedTemplate
}

// TestTruncateChatDropsOldest: /api/chat over num_ctx drops whole
// messages, oldest first, keeping the system message and the last one,
// as Ollama's chatPrompt does, until the rest leaves the answer its room;
// no token is cut then. The debug log says how many messages went.
func TestTruncateChatDropsOldest(t *testing.T) {
	c, _, _, logs := truncServer(t)
	turn := func(role string, i int) api.Message {
		return api.Message{Role: role, Content: fmt.Sprintf("turn %d: %s", i, strings.Repeat(string(rune('a'+i)), 130))}
	}
	sys := api.Message{Role: "system", Content: "be brief"}
	last := api.Message{Role: "user", Content: "and the last question?"}
	msgs := []api.Message{sys, turn("user", 1), turn("assistant", 2), turn("user", 3), turn("assistant", 4), last}
	// each turn is about 160 tokens: all of them are over num_ctx 400, the
	// system message, turn 4 and the last one fit its 300 (400 less the
	// room of num_predict 100), turn 3 more do not
	stream := false
	var got api.ChatResponse
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Messages: msgs, Stream: &stream, DebugRenderOnly: true,
		Options: map[string]any{"num_ctx": 400, "num_predict": 100}}, func(r api.ChatResponse) error { got = r; return nil })
	if err != nil || got.DebugInfo == nil {
		t.Fatalf("chat: %v %+v", err, got)
	}
	want := truncChatText(t, c, []api.Message{sys, msgs[4], last})
	if got.DebugInfo.RenderedTemplate != want {
		t.Errorf("rendered after truncation:\n%q\nwant the system message, turn 4 and the last:\n%q", got.DebugInfo.RenderedTemplate, want)
	}
	if !strings.Contains(logs.String(), "messages=6 messages_dropped=3 tokens_dropped=0") {
		t.Errorf("the debug log does not say 3 messages were dropped and no token:\n%s", logs.String())
	}
	// and it answers
	err = c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Messages: msgs, Stream: &stream,
		Options: map[string]any{"num_ctx": 400, "num_predict": 4, "temperature": 0}}, func(r api.ChatResponse) error { got = r; return nil })
	if err != nil || !got.Done || got.EvalCount == 0 {
		t.Errorf("truncated chat: %v %+v", err, got)
	}
}

// TestTruncateCutsTokensAfterMessages: when the system message and the
// last message alone are over the budget, tokens are cut: the system
// prompt stays whole and the end of the last message stays, the part
// between goes.
func TestTruncateCutsTokensAfterMessages(t *testing.T) {
	c, _, tok, logs := truncServer(t)
	system, prompt := "SYSTEM PROMPT", numbered(150)
	// /api/generate renders the system prompt and the prompt through the
	// template, and hands the tokens back in context
	got := truncGenerate(t, c, &api.GenerateRequest{Model: "tiny-qwen2", System: system, Prompt: prompt,
		Options: map[string]any{"num_ctx": 256, "num_predict": 8, "temperature": 0}})
	if len(got.Context) < 248 {
		t.Fatalf("context of %d tokens, want a prompt of 248 (256 less num_predict)", len(got.Context))
	}
	kept := tok.Decode(truncIDs(got.Context[:248]), tokenizer.DecodeOptions{Special: true})
	head := "<|im_start|>system\n" + system + "<|im_end|>\n<|im_start|>"
	tail := prompt[len(prompt)-100:] + "<|im_end|>\n<|im_start|>assistant\n"
	afterBOS, bos := strings.CutPrefix(kept, tok.Piece(tok.Vocab().BOS))
	if !bos || !strings.HasPrefix(strings.TrimLeft(afterBOS, " "), head) || !strings.HasSuffix(kept, tail) {
		t.Errorf("kept %q; want BOS, the system turn whole and the end of the prompt", kept)
	}
	if !strings.Contains(logs.String(), "messages=2 messages_dropped=0") || !strings.Contains(logs.String(), "kept_tokens=248") {
		t.Errorf("the debug log does not say tokens were cut, no message:\n%s", logs.String())
	}
	// /api/chat: the older turn goes first, then tokens of the last
	msgs := []api.Message{{Role: "system", Content: system}, {Role: "user", Content: "old"}, {Role: "assistant", Content: "reply"},
		{Role: "user", Content: prompt}}
	stream := false
	var resp api.ChatResponse
	err := c.Chat(context.Background(), &api.ChatRequest{Model: "tiny-qwen2", Messages: msgs, Stream: &stream,
		Options: map[string]any{"num_ctx": 256, "num_predict": 8, "temperature": 0}}, func(r api.ChatResponse) error { resp = r; return nil })
	if err != nil || !resp.Done {
		t.Fatalf("chat: %v %+v", err, resp)
	}
	if !strings.Contains(logs.String(), "messages=4 messages_dropped=2") {
		t.Errorf("the debug log does not say the two older messages went:\n%s", logs.String())
	}
}

// TestTruncateOpenAI: Ollama's /v1 has no truncate flag and truncates
// as /api/chat and /api/generate do: a prompt over num_ctx gets an
// answer whose prompt fits.
func TestTruncateOpenAI(t *testing.T) {
	_, base, _, _ := truncServer(t)
	long := strings.Repeat("word ", 300) // over the server's num_ctx of 512
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model": "tiny-qwen2", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "` + long + `"}], "max_tokens": 4}`},
		{"/v1/completions", `{"model": "tiny-qwen2", "prompt": "` + long + `", "max_tokens": 4}`},
		{"/v1/completions", `{"model": "stories260k", "prompt": "` + long + long + `", "max_tokens": 4}`},
	} {
		status, _, body := post(t, base+tc.path, tc.body)
		var resp struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(body, &resp); status != 200 || len(resp.Choices) != 1 || resp.Choices[0].FinishReason == "" ||
			resp.Usage.PromptTokens > 512-4 || resp.Usage.PromptTokens == 0 {
			t.Errorf("%s: %d %s; want an answer to a prompt of at most 508 tokens", tc.path, status, body)
		}
	}
	// a token prompt is checked whole, before truncation could drop a bad id
	// (at 50 of 601: past num_keep, in the part a cut to 508 drops)
	ids := strings.Repeat("300, ", 50) + "99999999, " + strings.Repeat("300, ", 550) + "300"
	status, _, body := post(t, base+"/v1/completions", `{"model": "tiny-qwen2", "prompt": [`+ids+`], "max_tokens": 4}`)
	if status != 400 || !strings.Contains(string(body), "outside the vocabulary") {
		t.Errorf("a long token prompt with a bad id: %d %s; want 400", status, body)
	}
}
