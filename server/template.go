package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	if strings.Contains(tmpl, mistralMark) {
		mistralCallIDs(c.Messages)
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
		c.Vars["enable_thinking"] = think.Bool()
		level := think.String()
		if isHarmony(tmpl) {
			level = harmonyEffort(think)
		}
		if level != "" {
			c.Vars["reasoning_effort"] = level // gpt-oss's templates read it
		}
	}
	prefill := prefillOf(msgs)
	if prefill != "" {
		c.AddGenerationPrompt = false
	}
	out, err := t.Execute(ctx, c)
	if err != nil {
		var te *template.Error
		if errors.As(err, &te) {
			return "", fmt.Errorf("%w: the chat template of %s: %v", errBadRequest, l.entry.Name, err)
		}
		return "", err
	}
	if prefill != "" {
		return continueFinal(out, prefill, l.entry.Name)
	}
	return out, nil
}

// prefillOf is the content of a conversation's last message when the
// model is to continue it: an assistant message with content and no tool
// calls. "" otherwise.
func prefillOf(msgs []api.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	m := msgs[len(msgs)-1]
	if m.Role != "assistant" || len(m.ToolCalls) > 0 || strings.TrimSpace(m.Content) == "" {
		return ""
	}
	return m.Content
}

// continueFinal cuts a rendering without a generation prompt right after
// the content of its last message, so that the model continues that
// message instead of starting another: what Ollama's Go templates do when
// the last message is the assistant's, and what transformers'
// continue_final_message does for Jinja ones. A template that changes the
// content as it writes it (trims it, as Llama 3's do) is cut after the
// trimmed content.
func continueFinal(out, content, model string) (string, error) {
	for _, c := range []string{content, strings.TrimSpace(content)} {
		if i := strings.LastIndex(out, c); i >= 0 {
			return out[:i+len(c)], nil
		}
	}
	return "", fmt.Errorf("%w: the chat template of %s does not write the last assistant message's content as it is, "+
		"so the reply cannot continue it: end the conversation with a user message", errBadRequest, model)
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
