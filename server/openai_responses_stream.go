package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"

	"github.com/ollama/ollama/api"
)

// responseBuilder makes a /v1/responses answer: the response object, its
// output items, and (streaming) the events that build them up.
type responseBuilder struct {
	req     *oaiResponsesRequest
	tools   api.Tools
	id      string
	created int64

	reasoning, text string // so far
	calls           []api.ToolCall

	seq   int // the next event's sequence_number
	items []any
	// while streaming: the reasoning and message items open, their ids and
	// output indexes, and whether a message was sent at all
	rsOpen, msgOpen, msgSent bool
	rsID, msgID              string
	rsOut, msgOut            int
}

type (
	respUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	respText struct {
		Type        string `json:"type"` // output_text, reasoning_text
		Text        string `json:"text"`
		Annotations []any  `json:"annotations,omitempty"`
	}
	respMessage struct {
		Type    string     `json:"type"` // message
		ID      string     `json:"id"`
		Status  string     `json:"status"`
		Role    string     `json:"role"`
		Content []respText `json:"content"`
	}
	respReasoning struct {
		Type    string     `json:"type"` // reasoning
		ID      string     `json:"id"`
		Summary []respText `json:"summary"`
		Content []respText `json:"content"`
	}
	respCall struct {
		Type      string `json:"type"` // function_call
		ID        string `json:"id"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Status    string `json:"status"`
	}
)

func itemID(prefix string) string { return fmt.Sprintf("%s_%016x", prefix, rand.Uint64()) }

func (b *responseBuilder) message(status string) respMessage {
	if b.msgID == "" {
		b.msgID = itemID("msg")
	}
	m := respMessage{Type: "message", ID: b.msgID, Status: status, Role: "assistant", Content: []respText{}}
	if status == "completed" {
		m.Content = append(m.Content, respText{Type: "output_text", Text: b.text, Annotations: []any{}})
	}
	return m
}

func (b *responseBuilder) reasoningItem(done bool) respReasoning {
	if b.rsID == "" {
		b.rsID = itemID("rs")
	}
	r := respReasoning{Type: "reasoning", ID: b.rsID, Summary: []respText{}, Content: []respText{}}
	if done {
		r.Content = append(r.Content, respText{Type: "reasoning_text", Text: b.reasoning})
	}
	return r
}

func callItems(calls []api.ToolCall) []respCall {
	var out []respCall
	for _, c := range oaiToolCalls(calls) {
		out = append(out, respCall{Type: "function_call", ID: itemID("fc"), CallID: c.ID, Name: c.Function.Name,
			Arguments: c.Function.Arguments, Status: "completed"})
	}
	return out
}

// response is the response object: in_progress with no finish, else
// completed, or incomplete when max_output_tokens ended it. Whole, its
// output is the reasoning, the message (unless the reply was only calls)
// and the calls.
func (b *responseBuilder) response(finish string, usage *oaiUsage) map[string]any {
	q := b.req
	tools := []any{}
	for _, t := range b.tools {
		tools = append(tools, map[string]any{"type": "function", "name": t.Function.Name,
			"description": t.Function.Description, "parameters": t.Function.Parameters})
	}
	format := map[string]any{"type": "text"}
	if q.Text != nil && q.Text.Format != nil {
		format = map[string]any{"type": q.Text.Format.Type}
	}
	r := map[string]any{
		"id": b.id, "object": "response", "created_at": b.created, "model": q.Model,
		"status": "in_progress", "error": nil, "incomplete_details": nil,
		"instructions": q.Instructions, "max_output_tokens": q.MaxOutputTokens,
		"temperature": q.Temperature, "top_p": q.TopP, "tools": tools, "tool_choice": "auto",
		"parallel_tool_calls": true, "text": map[string]any{"format": format}, "store": false,
		"output": []any{}, "usage": nil, "metadata": map[string]any{},
	}
	if finish == "" {
		return r
	}
	r["status"] = "completed"
	if finish == "length" {
		r["status"] = "incomplete"
		r["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	}
	if b.items == nil { // sent whole: the items of the finished reply
		if b.reasoning != "" {
			b.items = append(b.items, b.reasoningItem(true))
		}
		if b.text != "" || len(b.calls) == 0 {
			b.items = append(b.items, b.message("completed"))
		}
		for _, c := range callItems(b.calls) {
			b.items = append(b.items, c)
		}
	}
	r["output"] = b.items
	if usage != nil {
		u := respUsage{InputTokens: usage.PromptTokens, OutputTokens: usage.CompletionTokens, TotalTokens: usage.TotalTokens}
		u.InputTokensDetails.CachedTokens = usage.PromptTokensDetails.CachedTokens
		r["usage"] = u
	}
	return r
}

// streamResponse sends job's reply as the Responses API's events: created
// and in_progress; for the reasoning and the message, an item added, a
// content part added, its text in deltas, its text done, the part done, the
// item done; each call as an item added, its arguments done and the
// item done; completed (or incomplete) with the whole response last. A
// failure after the first event is an error event.
func streamResponse(ctx context.Context, w http.ResponseWriter, job *oaiJob, b *responseBuilder) {
	out := &sse{w: w}
	b.items = []any{}
	send := func(typ string, fields map[string]any) error {
		fields["type"], fields["sequence_number"] = typ, b.seq
		b.seq++
		return out.event(typ, fields)
	}
	closeReasoning := func() error {
		if !b.rsOpen {
			return nil
		}
		b.rsOpen = false
		item := b.reasoningItem(true)
		b.items[b.rsOut] = item
		err := send("response.reasoning_text.done", map[string]any{"item_id": b.rsID, "output_index": b.rsOut, "content_index": 0, "text": b.reasoning})
		if err == nil {
			err = send("response.content_part.done", map[string]any{"item_id": b.rsID, "output_index": b.rsOut, "content_index": 0,
				"part": respText{Type: "reasoning_text", Text: b.reasoning}})
		}
		if err == nil {
			err = send("response.output_item.done", map[string]any{"output_index": b.rsOut, "item": item})
		}
		return err
	}
	closeMessage := func() error {
		if !b.msgOpen {
			return nil
		}
		b.msgOpen = false
		part := respText{Type: "output_text", Text: b.text, Annotations: []any{}}
		item := b.message("completed")
		b.items[b.msgOut] = item
		err := send("response.output_text.done", map[string]any{"item_id": b.msgID, "output_index": b.msgOut, "content_index": 0, "text": b.text})
		if err == nil {
			err = send("response.content_part.done", map[string]any{"item_id": b.msgID, "output_index": b.msgOut, "content_index": 0, "part": part})
		}
		if err == nil {
			err = send("response.output_item.done", map[string]any{"output_index": b.msgOut, "item": item})
		}
		return err
	}
	openMessage := func() error {
		if b.msgOpen {
			return nil
		}
		if err := closeReasoning(); err != nil {
			return err
		}
		b.msgOpen, b.msgSent, b.msgID, b.text, b.msgOut = true, true, "", "", len(b.items)
		item := b.message("in_progress")
		b.items = append(b.items, item)
		err := send("response.output_item.added", map[string]any{"output_index": b.msgOut, "item": item})
		if err == nil {
			err = send("response.content_part.added", map[string]any{"item_id": b.msgID, "output_index": b.msgOut, "content_index": 0,
				"part": respText{Type: "output_text", Text: "", Annotations: []any{}}})
		}
		return err
	}
	err := send("response.created", map[string]any{"response": b.response("", nil)})
	if err == nil {
		err = send("response.in_progress", map[string]any{"response": b.response("", nil)})
	}
	finish := ""
	if err == nil {
		err = job.run(ctx, func(d oaiDelta) error {
			if d.reasoning != "" {
				if !b.rsOpen {
					b.rsOpen, b.rsID, b.reasoning, b.rsOut = true, "", "", len(b.items)
					item := b.reasoningItem(false)
					b.items = append(b.items, item)
					if err := send("response.output_item.added", map[string]any{"output_index": b.rsOut, "item": item}); err != nil {
						return err
					}
					if err := send("response.content_part.added", map[string]any{"item_id": b.rsID, "output_index": b.rsOut, "content_index": 0,
						"part": respText{Type: "reasoning_text", Text: ""}}); err != nil {
						return err
					}
				}
				b.reasoning += d.reasoning
				if err := send("response.reasoning_text.delta", map[string]any{"item_id": b.rsID, "output_index": b.rsOut, "content_index": 0, "delta": d.reasoning}); err != nil {
					return err
				}
			}
			if d.content != "" {
				if err := openMessage(); err != nil {
					return err
				}
				b.text += d.content
				if err := send("response.output_text.delta", map[string]any{"item_id": b.msgID, "output_index": b.msgOut, "content_index": 0, "delta": d.content}); err != nil {
					return err
				}
			}
			b.calls = append(b.calls, d.calls...)
			for _, c := range callItems(d.calls) {
				if err := closeReasoning(); err != nil {
					return err
				}
				if err := closeMessage(); err != nil {
					return err
				}
				n := len(b.items)
				added := c
				added.Arguments, added.Status = "", "in_progress"
				b.items = append(b.items, c)
				for _, e := range []struct {
					typ    string
					fields map[string]any
				}{
					{"response.output_item.added", map[string]any{"output_index": n, "item": added}},
					{"response.function_call_arguments.done", map[string]any{"item_id": c.ID, "output_index": n, "arguments": c.Arguments}},
					{"response.output_item.done", map[string]any{"output_index": n, "item": c}},
				} {
					if err := send(e.typ, e.fields); err != nil {
						return err
					}
				}
			}
			if d.finish != "" {
				finish = d.finish
			}
			return nil
		})
	}
	if err == nil {
		err = closeReasoning()
	}
	if err == nil && !b.msgSent && len(b.calls) == 0 {
		err = openMessage() // a reply of no text still has its message
	}
	if err == nil {
		err = closeMessage()
	}
	if err == nil {
		typ := "response.completed"
		if finish == "length" {
			typ = "response.incomplete"
		}
		err = send(typ, map[string]any{"response": b.response(finish, &job.usage)})
	}
	if err != nil {
		if !out.started {
			writeOAIError(w, err)
			return
		}
		_, e := oaiErrorOf(err)
		send("error", map[string]any{"code": e.Code, "message": e.Message, "param": e.Param})
	}
}
