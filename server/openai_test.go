package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

// post sends a JSON body and returns the status, the content type and the
// body.
func post(t *testing.T, url, body string) (int, string, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), data
}

// postJSON posts and decodes a 200 answer into v.
func postJSON(t *testing.T, url, body string, v any) {
	t.Helper()
	status, _, data := post(t, url, body)
	if status != http.StatusOK {
		t.Fatalf("POST %s %s: %d %s", url, body, status, data)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("POST %s: %v in %s", url, err, data)
	}
}

// events posts a streaming request and returns its SSE events, checking
// that each is "data: {json}" and that the last is "data: [DONE]".
func events[T any](t *testing.T, url, body string) []T {
	t.Helper()
	status, ctype, data := post(t, url, body)
	if status != http.StatusOK || ctype != "text/event-stream" {
		t.Fatalf("POST %s %s: %d %s %s", url, body, status, ctype, data)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	done := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		payload, ok := strings.CutPrefix(line, "data: ")
		if !ok || done {
			t.Fatalf("unexpected SSE line %q", line)
		}
		if payload == "[DONE]" {
			done = true
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			t.Fatalf("SSE event %s: %v", payload, err)
		}
		out = append(out, v)
	}
	if !done {
		t.Fatalf("stream did not end with data: [DONE]:\n%s", data)
	}
	return out
}

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	RawB    []int   `json:"bytes"`
}

type chatObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Logprobs *struct {
			Content []struct {
				topLogprob
				TopLogprobs []topLogprob `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// greedy is the Ollama API's greedy continuation of prompt, the reference
// the OpenAI endpoints must reproduce.
func greedy(t *testing.T, c *api.Client, prompt string, n int) string {
	t.Helper()
	stream := false
	var out string
	err := c.Generate(context.Background(), &api.GenerateRequest{Model: "stories260k", Prompt: prompt, Stream: &stream,
		Options: map[string]any{"temperature": 0, "num_predict": n}}, func(r api.GenerateResponse) error {
		out = r.Response
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenAIChat(t *testing.T) {
	c, base := newTestServer(t)
	want := greedy(t, c, "Once upon a time", 20)
	url := base + "/v1/chat/completions"
	req := `{"model": "stories260k", "messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 20`

	var one chatObject
	postJSON(t, url, req+`}`, &one)
	if one.Object != "chat.completion" || !strings.HasPrefix(one.ID, "chatcmpl-") || one.Created == 0 || one.Model != "stories260k" ||
		len(one.Choices) != 1 || one.Choices[0].Message.Role != "assistant" || one.Choices[0].Message.Content != want ||
		*one.Choices[0].FinishReason != "length" || one.Choices[0].Logprobs != nil {
		t.Errorf("chat.completion: %+v; want content %q", one, want)
	}
	if u := one.Usage; u == nil || u.CompletionTokens != 20 || u.PromptTokens == 0 || u.TotalTokens != u.PromptTokens+20 {
		t.Errorf("usage %+v", one.Usage)
	}

	// streaming, with usage, and max_completion_tokens as the limit
	chunks := events[chatObject](t, url, `{"model": "stories260k", "messages": [{"role": "user", "content": "Once upon a time"}],
		"temperature": 0, "max_completion_tokens": 20, "stream": true, "stream_options": {"include_usage": true}}`)
	var text strings.Builder
	for i, ch := range chunks[:len(chunks)-1] {
		if ch.Object != "chat.completion.chunk" || ch.ID != chunks[0].ID || len(ch.Choices) != 1 || ch.Usage != nil {
			t.Fatalf("chunk %d: %+v", i, ch)
		}
		d := ch.Choices[0].Delta
		switch {
		case i == 0 && (d.Role != "assistant" || d.Content == nil || *d.Content != ""):
			t.Errorf("first chunk %+v: want the assistant role", d)
		case i == len(chunks)-2 && (d.Content != nil || ch.Choices[0].FinishReason == nil || *ch.Choices[0].FinishReason != "length"):
			t.Errorf("finish chunk %+v", ch.Choices[0])
		case i > 0 && i < len(chunks)-2 && (d.Content == nil || ch.Choices[0].FinishReason != nil):
			t.Errorf("content chunk %d: %+v", i, ch.Choices[0])
		}
		if d.Content != nil {
			text.WriteString(*d.Content)
		}
	}
	last := chunks[len(chunks)-1]
	if text.String() != want || len(last.Choices) != 0 || last.Usage == nil || last.Usage.CompletionTokens != 20 {
		t.Errorf("streamed %q (want %q); usage chunk %+v", text.String(), want, last)
	}
	// without include_usage no chunk has a usage field
	status, _, data := post(t, url, req+`, "stream": true}`)
	if status != 200 || bytes.Contains(data, []byte(`"usage"`)) {
		t.Errorf("stream without include_usage: %d %s", status, data)
	}
}

func TestOpenAIChatN(t *testing.T) {
	_, base := newTestServer(t)
	url := base + "/v1/chat/completions"
	req := `{"model": "tiny-qwen2", "messages": [{"role": "system", "content": "be brief"}, {"role": "developer", "content": "x"},
		{"role": "user", "content": [{"type": "text", "text": "hello"}, {"type": "text", "text": "there"}]}],
		"n": 2, "seed": 7, "temperature": 1, "top_p": 0.95, "frequency_penalty": 0.5, "presence_penalty": 0.5, "max_tokens": 6, "user": "u1"`
	var a, b chatObject
	postJSON(t, url, req+`}`, &a)
	postJSON(t, url, req+`}`, &b)
	if len(a.Choices) != 2 || a.Choices[0].Index != 0 || a.Choices[1].Index != 1 || a.Usage.CompletionTokens > 12 {
		t.Fatalf("n=2: %+v", a)
	}
	for i := range a.Choices {
		if a.Choices[i].Message.Content != b.Choices[i].Message.Content {
			t.Errorf("seed 7, choice %d: %q then %q", i, a.Choices[i].Message.Content, b.Choices[i].Message.Content)
		}
	}
	chunks := events[chatObject](t, url, req+`, "stream": true}`)
	texts := map[int]string{}
	finished := map[int]bool{}
	for _, ch := range chunks {
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				texts[c.Index] += *c.Delta.Content
			}
			finished[c.Index] = finished[c.Index] || c.FinishReason != nil
		}
	}
	for i := range 2 {
		if texts[i] != a.Choices[i].Message.Content || !finished[i] {
			t.Errorf("streamed choice %d: %q finished %v; whole %q", i, texts[i], finished[i], a.Choices[i].Message.Content)
		}
	}
}

func TestOpenAILogprobs(t *testing.T) {
	c, base := newTestServer(t)
	want := greedy(t, c, "Once upon a time", 5)
	url := base + "/v1/chat/completions"
	req := `{"model": "stories260k", "messages": [{"role": "user", "content": "Once upon a time"}], "temperature": 0, "max_tokens": 5,
		"logprobs": true, "top_logprobs": 3`
	var one chatObject
	postJSON(t, url, req+`}`, &one)
	lp := one.Choices[0].Logprobs
	if lp == nil || len(lp.Content) != 5 {
		t.Fatalf("logprobs: %+v", one.Choices[0])
	}
	var joined string
	for i, e := range lp.Content {
		joined += e.Token
		if len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Token != e.Token || e.TopLogprobs[0].Logprob != e.Logprob ||
			e.Logprob > 0 || len(e.RawB) != len(e.Token) || e.TopLogprobs[1].Logprob > e.Logprob {
			t.Errorf("token %d: %+v", i, e)
		}
	}
	if joined != want {
		t.Errorf("logprob tokens %q, text %q", joined, want)
	}
	chunks := events[chatObject](t, url, req+`, "stream": true}`)
	n := 0
	for _, ch := range chunks {
		if l := ch.Choices[0].Logprobs; l != nil {
			n += len(l.Content)
			if len(l.Content) != 1 || l.Content[0].Token != lp.Content[n-1].Token {
				t.Errorf("streamed logprobs %+v", l)
			}
		}
	}
	if n != 5 {
		t.Errorf("streamed %d logprobs, want 5", n)
	}
}

func TestOpenAIStop(t *testing.T) {
	c, base := newTestServer(t)
	want := greedy(t, c, "Once upon a time", 30) // ", there was a ..."
	i := strings.Index(want, " was")
	if i < 0 {
		t.Fatalf("greedy text %q has no ' was'", want)
	}
	for _, stop := range []string{`" was"`, `["zzz", " was"]`} {
		var one chatObject
		postJSON(t, base+"/v1/chat/completions", `{"model": "stories260k", "messages": [{"role": "user", "content": "Once upon a time"}],
			"temperature": 0, "max_tokens": 30, "stop": `+stop+`}`, &one)
		if one.Choices[0].Message.Content != want[:i] || *one.Choices[0].FinishReason != "stop" {
			t.Errorf("stop %s: %q %s; want %q", stop, one.Choices[0].Message.Content, *one.Choices[0].FinishReason, want[:i])
		}
		var text textObject
		postJSON(t, base+"/v1/completions", `{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 30, "stop": `+stop+`}`, &text)
		if text.Choices[0].Text != want[:i] || *text.Choices[0].FinishReason != "stop" {
			t.Errorf("completions, stop %s: %+v", stop, text.Choices[0])
		}
	}
}

type textObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Text     string `json:"text"`
		Index    int    `json:"index"`
		Logprobs *struct {
			Tokens        []string             `json:"tokens"`
			TokenLogprobs []float64            `json:"token_logprobs"`
			TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			TextOffset    []int                `json:"text_offset"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

func TestOpenAICompletions(t *testing.T) {
	c, base := newTestServer(t)
	want := greedy(t, c, "Once upon a time", 12)
	url := base + "/v1/completions"
	var one textObject
	postJSON(t, url, `{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 12, "logprobs": 2}`, &one)
	ch := one.Choices[0]
	if one.Object != "text_completion" || !strings.HasPrefix(one.ID, "cmpl-") || ch.Text != want || *ch.FinishReason != "length" ||
		one.Usage.CompletionTokens != 12 {
		t.Fatalf("text_completion %+v; want %q", one, want)
	}
	lp := ch.Logprobs
	if lp == nil || len(lp.Tokens) != 12 || len(lp.TokenLogprobs) != 12 || len(lp.TopLogprobs) != 12 || lp.TextOffset[0] != 0 {
		t.Fatalf("legacy logprobs %+v", lp)
	}
	if strings.Join(lp.Tokens, "") != want || lp.TextOffset[11] != len(want)-len(lp.Tokens[11]) ||
		len(lp.TopLogprobs[0]) == 0 || lp.TopLogprobs[0][lp.Tokens[0]] != lp.TokenLogprobs[0] {
		t.Errorf("legacy logprobs %+v", lp)
	}

	chunks := events[textObject](t, url, `{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 12,
		"stream": true, "stream_options": {"include_usage": true}}`)
	var text strings.Builder
	for _, ch := range chunks[:len(chunks)-1] {
		text.WriteString(ch.Choices[0].Text)
	}
	if last := chunks[len(chunks)-1]; text.String() != want || last.Usage == nil || last.Usage.CompletionTokens != 12 || len(last.Choices) != 0 {
		t.Errorf("streamed %q, want %q; last chunk %+v", text.String(), want, last)
	}
	if f := chunks[len(chunks)-2].Choices[0].FinishReason; f == nil || *f != "length" {
		t.Errorf("no finish_reason in the last choice chunk")
	}

	// streaming n=2 with logprobs: per choice, the tokens spell the text
	// and text_offset runs on from chunk to chunk
	chunks = events[textObject](t, url, `{"model": "stories260k", "prompt": "Once upon a time", "temperature": 0, "max_tokens": 12,
		"n": 2, "logprobs": 1, "stream": true}`)
	texts, offsets := map[int]string{}, map[int]int{}
	for _, ch := range chunks {
		c := ch.Choices[0]
		if lp := c.Logprobs; lp != nil {
			if len(lp.Tokens) != 1 || lp.TextOffset[0] != offsets[c.Index] {
				t.Errorf("choice %d: logprobs %+v at offset %d", c.Index, lp, offsets[c.Index])
			}
			offsets[c.Index] += len(lp.Tokens[0])
		}
		texts[c.Index] += c.Text
	}
	if texts[0] != want || texts[1] != want || offsets[0] != len(want) || offsets[1] != len(want) {
		t.Errorf("streamed n=2: %v, offsets %v; want %q", texts, offsets, want)
	}

	// two prompts × n=2: four choices, p*n+i; as text and as token ids
	ids, _ := json.Marshal(c2ids(t, c))
	for _, prompt := range []string{`["Once upon a time", "Once upon a time"]`, "[" + string(ids) + "," + string(ids) + "]"} {
		var many textObject
		postJSON(t, url, `{"model": "stories260k", "prompt": `+prompt+`, "n": 2, "temperature": 0, "max_tokens": 12}`, &many)
		if len(many.Choices) != 4 || many.Usage.CompletionTokens != 48 {
			t.Fatalf("2 prompts × n=2: %+v", many)
		}
		for i, ch := range many.Choices {
			if ch.Index != i || ch.Text != want {
				t.Errorf("prompt %s, choice %d: %+v, want %q", prompt, i, ch, want)
			}
		}
	}
}

// c2ids is the token ids of "Once upon a time" from the Ollama API's
// context (prompt ids then generated ones).
func c2ids(t *testing.T, c *api.Client) []int {
	stream := false
	var ctx []int
	err := c.Generate(context.Background(), &api.GenerateRequest{Model: "stories260k", Prompt: "Once upon a time", Stream: &stream,
		Options: map[string]any{"num_predict": 1}}, func(r api.GenerateResponse) error {
		ctx = r.Context
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx[:len(ctx)-1]
}

func TestOpenAIEmbeddings(t *testing.T) {
	_, base := newTestServer(t)
	url := base + "/v1/embeddings"
	type embList struct {
		Object string `json:"object"`
		Model  string `json:"model"`
		Data   []struct {
			Object    string          `json:"object"`
			Embedding json.RawMessage `json:"embedding"`
			Index     int             `json:"index"`
		} `json:"data"`
		Usage usage `json:"usage"`
	}
	var floats, b64, short, toks embList
	postJSON(t, url, `{"model": "tiny-qwen2", "input": ["hello", "world"]}`, &floats)
	postJSON(t, url, `{"model": "tiny-qwen2", "input": ["hello", "world"], "encoding_format": "base64"}`, &b64)
	postJSON(t, url, `{"model": "tiny-qwen2", "input": "hello", "dimensions": 8}`, &short)
	postJSON(t, url, `{"model": "tiny-qwen2", "input": [[1, 2, 3], [4, 5]]}`, &toks)
	if floats.Object != "list" || len(floats.Data) != 2 || floats.Data[1].Index != 1 || floats.Data[0].Object != "embedding" ||
		floats.Usage.PromptTokens == 0 || floats.Usage.TotalTokens != floats.Usage.PromptTokens || len(toks.Data) != 2 || toks.Usage.PromptTokens != 5 {
		t.Fatalf("embedding lists %+v %+v", floats, toks)
	}
	for i := range 2 {
		var v []float32
		var s string
		if err := json.Unmarshal(floats.Data[i].Embedding, &v); err != nil || len(v) != 256 {
			t.Fatalf("float embedding: %v, %d values", err, len(v))
		}
		json.Unmarshal(b64.Data[i].Embedding, &s)
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw) != 4*len(v) {
			t.Fatalf("base64 embedding: %v, %d bytes", err, len(raw))
		}
		for j := range v {
			if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*j:])); got != v[j] {
				t.Fatalf("base64 value %d: %v, float %v", j, got, v[j])
			}
		}
	}
	var v []float64
	json.Unmarshal(short.Data[0].Embedding, &v)
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	if len(v) != 8 || math.Abs(norm-1) > 1e-5 {
		t.Errorf("dimensions 8: %d values, norm² %v", len(v), norm)
	}
}

func TestOpenAIModels(t *testing.T) {
	_, base := newTestServer(t)
	resp, err := http.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
			Created             int64
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "stories260K:latest" || list.Data[1].ID != "tiny-qwen2:latest" ||
		list.Data[0].Object != "model" || list.Data[0].Created == 0 {
		t.Errorf("models: %+v", list)
	}
	resp, err = http.Get(base + "/v1/models/tiny-qwen2")
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ ID, Object string }
	json.NewDecoder(resp.Body).Decode(&m)
	resp.Body.Close()
	if resp.StatusCode != 200 || m.ID != "tiny-qwen2:latest" || m.Object != "model" {
		t.Errorf("model: %d %+v", resp.StatusCode, m)
	}
	resp, err = http.Get(base + "/v1/models/nope")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(data), `"code":"model_not_found"`) {
		t.Errorf("unknown model: %d %s", resp.StatusCode, data)
	}
}
