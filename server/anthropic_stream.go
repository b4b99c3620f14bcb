package server

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The message object of the Messages API and its content blocks.
type (
	anthMsg struct {
		ID           string    `json:"id"`
		Type         string    `json:"type"` // "message"
		Role         string    `json:"role"`
		Model        string    `json:"model"`
		Content      []anthOut `json:"content"`
		StopReason   *string   `json:"stop_reason"`
		StopSequence *string   `json:"stop_sequence"`
		Usage        anthUsage `json:"usage"`
	}
	// anthUsage counts the prompt as Anthropic does: input_tokens are the
	// tokens computed, cache_read_input_tokens those the prefix cache
	// held (their sum is the prompt). Every computed token is cached for
	// later requests without a separate write, so
	// cache_creation_input_tokens is 0.
	anthUsage struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	}
	// anthOut is a content block of a response: text, thinking (with a
	// signature) or tool_use (with an id and its input object).
	anthOut struct {
		Type      string  `json:"type"`
		Text      *string `json:"text,omitempty"`
		Thinking  *string `json:"thinking,omitempty"`
		Signature *string `json:"signature,omitempty"`
		ID        string  `json:"id,omitempty"`
		Name      string  `json:"name,omitempty"`
		Input     any     `json:"input,omitempty"`
	}
)

// The events of a stream; each is sent as "event: <type>" with itself as
// the data.
type (
	anthEvent struct {
		Type         string     `json:"type"`
		Message      *anthMsg   `json:"message,omitempty"`       // message_start
		Index        *int       `json:"index,omitempty"`         // content_block_*
		ContentBlock *anthOut   `json:"content_block,omitempty"` // content_block_start
		Delta        any        `json:"delta,omitempty"`         // content_block_delta, message_delta
		Usage        *anthUsage `json:"usage,omitempty"`         // message_delta
	}
	anthBlockDelta struct {
		Type        string  `json:"type"` // text_delta, thinking_delta, signature_delta, input_json_delta
		Text        *string `json:"text,omitempty"`
		Thinking    *string `json:"thinking,omitempty"`
		Signature   *string `json:"signature,omitempty"`
		PartialJSON *string `json:"partial_json,omitempty"`
	}
	anthMsgDelta struct {
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
)

// anthBuilder builds a message from a job's deltas, and sends the events
// that build it when streaming. Blocks come in the order the reply writes
// them: a block opens when the reply turns to another kind (thinking,
// text) and each tool call is a block of its own.
type anthBuilder struct {
	msg     anthMsg
	send    func(name string, ev anthEvent) error // nil: not streaming
	open    int                                   // the open block's index; -1: none
	thought strings.Builder                       // the open thinking block's text, for its signature
	err     error                                 // the first failed send
}

// newAnthMessage starts the message of a reply to a prompt of n tokens.
func newAnthMessage(model string, n int) *anthBuilder {
	return &anthBuilder{open: -1, msg: anthMsg{ID: anthID("msg_"), Type: "message", Role: "assistant", Model: model,
		Content: []anthOut{}, Usage: anthUsage{InputTokens: n}}}
}

// anthID is an id of Anthropic's form: prefix and 24 letters and digits.
func anthID(prefix string) string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 24)
	for i := range b {
		b[i] = chars[rand.IntN(len(chars))]
	}
	return prefix + string(b)
}

// signature is a thinking block's signature: the SHA-256 of its thought
// in base64 (Claude's is an encrypted copy; folio checks nothing with it).
func signature(thought string) string {
	h := sha256.Sum256([]byte(thought))
	return base64.StdEncoding.EncodeToString(h[:])
}

func (b *anthBuilder) event(name string, ev anthEvent) {
	if b.send != nil && b.err == nil {
		ev.Type = name
		b.err = b.send(name, ev)
	}
}

// start opens block out (its deltas fill it in).
func (b *anthBuilder) start(out anthOut) {
	b.stop()
	b.open = len(b.msg.Content)
	b.msg.Content = append(b.msg.Content, out)
	index := b.open
	start := out
	switch out.Type {
	case "text":
		start.Text = new(string)
	case "thinking":
		start.Thinking, start.Signature = new(string), new(string)
	case "tool_use":
		start.Input = map[string]any{}
	}
	b.event("content_block_start", anthEvent{Index: &index, ContentBlock: &start})
}

// stop closes the open block; a thinking block gets its signature first.
func (b *anthBuilder) stop() {
	if b.open < 0 {
		return
	}
	index := b.open
	if blk := &b.msg.Content[index]; blk.Type == "thinking" {
		sig := signature(b.thought.String())
		blk.Signature = &sig
		b.thought.Reset()
		b.event("content_block_delta", anthEvent{Index: &index, Delta: anthBlockDelta{Type: "signature_delta", Signature: &sig}})
	}
	b.event("content_block_stop", anthEvent{Index: &index})
	b.open = -1
}

// add takes a delta: its thinking, its text, then its calls.
func (b *anthBuilder) add(d oaiDelta) {
	if d.reasoning != "" {
		if b.open < 0 || b.msg.Content[b.open].Type != "thinking" {
			b.start(anthOut{Type: "thinking", Thinking: new(string)})
		}
		blk := &b.msg.Content[b.open]
		*blk.Thinking += d.reasoning
		b.thought.WriteString(d.reasoning)
		b.event("content_block_delta", anthEvent{Index: &b.open, Delta: anthBlockDelta{Type: "thinking_delta", Thinking: &d.reasoning}})
	}
	if d.content != "" {
		if b.open < 0 || b.msg.Content[b.open].Type != "text" {
			b.start(anthOut{Type: "text", Text: new(string)})
		}
		blk := &b.msg.Content[b.open]
		*blk.Text += d.content
		b.event("content_block_delta", anthEvent{Index: &b.open, Delta: anthBlockDelta{Type: "text_delta", Text: &d.content}})
	}
	for _, c := range d.calls {
		args, err := json.Marshal(c.Function.Arguments)
		if err != nil || string(args) == "null" {
			args = []byte("{}")
		}
		var input map[string]any
		json.Unmarshal(args, &input)
		if input == nil {
			input = map[string]any{}
		}
		b.start(anthOut{Type: "tool_use", ID: anthID("toolu_"), Name: c.Function.Name, Input: input})
		partial := string(args)
		b.event("content_block_delta", anthEvent{Index: &b.open, Delta: anthBlockDelta{Type: "input_json_delta", PartialJSON: &partial}})
		b.stop()
	}
}

// finish closes the message: the last block, the stop reason (tool_use
// when the reply called a tool; max_tokens at the limit; stop_sequence
// naming the stop string that ended it; else end_turn) and the usage.
func (b *anthBuilder) finish(finish, stopped string, usage oaiUsage) {
	b.stop()
	reason := "end_turn"
	var seq *string
	switch {
	case b.called():
		reason = "tool_use"
	case finish == "length":
		reason = "max_tokens"
	case stopped != "":
		reason, seq = "stop_sequence", &stopped
	}
	cached := usage.PromptTokensDetails.CachedTokens
	b.msg.StopReason, b.msg.StopSequence = &reason, seq
	b.msg.Usage = anthUsage{InputTokens: usage.PromptTokens - cached, CacheReadInputTokens: cached, OutputTokens: usage.CompletionTokens}
	b.event("message_delta", anthEvent{Delta: anthMsgDelta{StopReason: &reason, StopSequence: seq}, Usage: &b.msg.Usage})
	b.event("message_stop", anthEvent{})
}

func (b *anthBuilder) called() bool {
	for _, c := range b.msg.Content {
		if c.Type == "tool_use" {
			return true
		}
	}
	return false
}

// anthPingEvery is how long a stream may go without an event before a
// ping is sent, as Anthropic's API sends them: a long prompt (or a wait
// for the engine) keeps the connection busy, so that clients and proxies
// with idle timeouts (undici's five minutes) do not drop it.
var anthPingEvery = 10 * time.Second

// stream runs job and sends the message as Anthropic's events:
// message_start, ping, each block's content_block_start, deltas and
// content_block_stop, message_delta and message_stop, with a ping after
// each anthPingEvery without an event. A failure before the first event
// is an error status; after it, an error event ends the stream.
func (b *anthBuilder) stream(ctx context.Context, w http.ResponseWriter, job *oaiJob) {
	out := &sse{w: w}
	var mu sync.Mutex // guards out: the handler and the pinger write to it
	last := time.Now()
	b.send = func(name string, ev anthEvent) error {
		mu.Lock()
		defer mu.Unlock()
		last = time.Now()
		return out.event(name, ev)
	}
	start := b.msg
	b.event("message_start", anthEvent{Message: &start})
	b.event("ping", anthEvent{})
	done := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		t := time.NewTicker(anthPingEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			mu.Lock()
			if time.Since(last) >= anthPingEvery {
				out.event("ping", anthEvent{Type: "ping"})
				last = time.Now()
			}
			mu.Unlock()
		}
	}()
	var finish, stopped string
	err := job.run(ctx, func(d oaiDelta) error {
		b.add(d)
		if d.finish != "" {
			finish, stopped = d.finish, d.stopped
		}
		return b.err
	})
	close(done)
	<-pinged
	if err == nil {
		b.finish(finish, stopped, job.usage)
		err = b.err
	}
	if err != nil {
		_, e := anthErrorOf(err)
		out.event("error", anthErrorBody{Type: "error", Error: e})
	}
}
