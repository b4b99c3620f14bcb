package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
)

// parallelNs are the n of /v1/chat/completions requests: several
// sequences forked from one prompt, each counted at admission.
var parallelNs = []int{1, 2, 4, 8}

// oaiChoice is one choice of a /v1/chat/completions answer, whole or a
// streamed chunk's.
type oaiChoice struct {
	Index   int `json:"index"`
	Message struct {
		Content string `json:"content"`
	} `json:"message"`
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaiAnswer struct {
	Choices []oaiChoice `json:"choices"`
	Usage   *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// parallel sends a chat job to /v1/chat/completions with n choices,
// streamed or not, greedy: every choice must equal the job's solo run.
func (r *rig) parallel(ctx context.Context, rng *rand.Rand) {
	i := 3*rng.IntN(len(r.jobs)/3) + 1 // chat jobs are i%3 == 1
	j, n, stream := r.jobs[i], parallelNs[rng.IntN(len(parallelNs))], rng.IntN(2) == 0
	var msgs []map[string]string
	if j.system != "" {
		msgs = append(msgs, map[string]string{"role": "system", "content": j.system})
	}
	msgs = append(msgs, map[string]string{"role": "user", "content": j.prompt})
	req := map[string]any{"model": modelName, "messages": msgs, "n": n, "max_tokens": j.numPredict,
		"temperature": 0, "seed": 42, "stream": stream}
	if stream {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	data, _ := json.Marshal(req)
	texts, reasons, tokens, err := r.chatChoices(ctx, string(data), n, stream)
	if err != nil {
		r.rep.fail(&r.rep.Errors, "n=%d prompt %d: %v", n, i, err)
		return
	}
	ref := r.refs[i]
	for k := range n {
		if texts[k] != ref.text || reasons[k] != ref.reason {
			r.rep.fail(&r.rep.Mismatches, "n=%d prompt %d choice %d: %q (%s); alone: %q (%s)",
				n, i, k, texts[k], reasons[k], ref.text, ref.reason)
			return
		}
	}
	if tokens != n*ref.evalCount {
		r.rep.fail(&r.rep.Mismatches, "n=%d prompt %d: usage says %d completion tokens; alone: %d a choice",
			n, i, tokens, ref.evalCount)
		return
	}
	r.rep.Served.Add(1)
	r.rep.Parallel.Add(1)
	r.rep.Choices.Add(int64(n))
	r.rep.Tokens.Add(int64(tokens))
}

// chatChoices reads n choices' texts and finish reasons, and the usage's
// completion tokens, from a whole answer or its server-sent events.
func (r *rig) chatChoices(ctx context.Context, body string, n int, stream bool) (texts, reasons []string, tokens int, err error) {
	resp, err := r.do(ctx, "/v1/chat/completions", body)
	if err != nil {
		return nil, nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, nil, 0, fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	texts, reasons = make([]string, n), make([]string, n)
	add := func(a oaiAnswer) error {
		if a.Error != nil {
			return fmt.Errorf("error: %s", a.Error.Message)
		}
		for _, c := range a.Choices {
			if c.Index < 0 || c.Index >= n {
				return fmt.Errorf("choice index %d of %d", c.Index, n)
			}
			texts[c.Index] += c.Message.Content + c.Delta.Content
			if c.FinishReason != nil {
				reasons[c.Index] = *c.FinishReason
			}
		}
		if a.Usage != nil {
			tokens = a.Usage.CompletionTokens
		}
		return nil
	}
	if !stream {
		var a oaiAnswer
		if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
			return nil, nil, 0, err
		}
		return texts, reasons, tokens, add(a)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			return texts, reasons, tokens, nil
		}
		var a oaiAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			return nil, nil, 0, fmt.Errorf("event %q: %w", line, err)
		}
		if err := add(a); err != nil {
			return nil, nil, 0, err
		}
	}
	return nil, nil, 0, fmt.Errorf("stream ended without [DONE]: %v", sc.Err())
}
