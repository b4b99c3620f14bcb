package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ollama/ollama/api"

	"folio/models/template"
)

// renderTemplate renders a Jinja chat template (the model's, parsed once
// at load, or tmpl from the request) over the messages, tools and think
// option, as Hugging Face transformers would. A template that fails — a
// raise_exception, a limit — is the request's error (400): the template's
// message says what the model wants. The end of ctx stops it.
func renderTemplate(ctx context.Context, l *loaded, tmpl string, msgs []api.Message, tools api.Tools, think *api.ThinkValue) (string, error) {
	t := l.parsed
	if tmpl != l.template || t == nil {
		var err error
		if t, err = template.Parse(tmpl); err != nil {
			return "", fmt.Errorf("%w: chat template: %v", errBadRequest, err)
		}
	}
	c := template.Context{AddGenerationPrompt: true, Vars: map[string]any{}}
	tok := l.model.Tok
	v := tok.Vocab()
	if v.BOS >= 0 {
		bos := tok.Piece(v.BOS)
		c.BOSToken = &bos
	}
	if v.EOS >= 0 {
		eos := tok.Piece(v.EOS)
		c.EOSToken = &eos
	}
	for _, m := range msgs {
		tm := template.Message{Role: m.Role, Content: m.Content, Thinking: m.Thinking, ToolCallID: m.ToolCallID, ToolName: m.ToolName}
		for _, tc := range m.ToolCalls {
			args, err := jsonValue(tc.Function.Arguments)
			if err != nil {
				return "", err
			}
			tm.ToolCalls = append(tm.ToolCalls, template.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		c.Messages = append(c.Messages, tm)
	}
	if len(tools) > 0 {
		for _, tool := range tools {
			tv, err := jsonValue(tool)
			if err != nil {
				return "", err
			}
			c.Tools = append(c.Tools, tv)
		}
	}
	if think != nil {
		on := true
		if b, ok := think.Value.(bool); ok {
			on = b
		}
		c.Vars["enable_thinking"] = on
	}
	out, err := t.Execute(ctx, c)
	if err != nil {
		var te *template.Error
		if errors.As(err, &te) {
			return "", fmt.Errorf("%w: the chat template of %s: %v", errBadRequest, l.entry.Name, err)
		}
		return "", err
	}
	return out, nil
}

// jsonValue turns a request value into the template's JSON-like form,
// keeping key order.
func jsonValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return template.DecodeJSON(data)
}
