package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"text/template/parse"

	"github.com/ollama/ollama/api"
	ollamatemplate "github.com/ollama/ollama/template"

	"folio/models/gotemplate"
)

// Chat templates come in two syntaxes: Jinja, the tokenizer.chat_template
// of GGUF files (models/template renders it), and Ollama's Go templates,
// the TEMPLATE of Modelfiles, of the Ollama registry's template layers and
// of /api/generate's template field (models/gotemplate renders them with
// Ollama's own template package, within the same limits as Jinja).

// installedGo holds the templates of installed models by their text,
// parsed once, for the render and the tool parser of every request.
// Templates sent with a request are parsed each time.
var installedGo sync.Map // string → parsedGo

// parsedGo is a template's parse: t nil and err nil when it is Jinja; err
// set when it is Go but refused (installed before folio checked templates
// at install).
type parsedGo struct {
	t   *gotemplate.Template
	err error
}

// goTemplate parses s as an Ollama Go template. ok is false when s is not
// one (it uses Jinja's {% %} or {# #}, or does not parse as Go): the caller
// renders it as Jinja.
func goTemplate(s string, fromRequest bool) (t *gotemplate.Template, ok bool, err error) {
	if !fromRequest {
		if v, ok := installedGo.Load(s); ok {
			p := v.(parsedGo)
			return p.t, p.t != nil || p.err != nil, p.err
		}
	}
	t, err = gotemplate.Parse(s)
	switch {
	case errors.Is(err, gotemplate.ErrNotGo):
		t, err = nil, nil
	case err != nil:
		err = fmt.Errorf("%w: chat template: %v", errBadRequest, err)
	}
	ok = t != nil || err != nil
	if !fromRequest {
		installedGo.Store(s, parsedGo{t, err})
	}
	if !fromRequest || t == nil {
		return t, ok, err
	}
	if defs := t.Text().Templates(); len(defs) > 1 {
		return nil, true, fmt.Errorf("%w: template: a template sent with a request may not define templates; install it with folio create instead", errBadRequest)
	}
	if err := boundedRanges(t.Text().Tree.Root, false); err != nil {
		return nil, true, fmt.Errorf("%w: template: %v", errBadRequest, err)
	}
	return t, true, nil
}

// boundedRanges refuses, in a template sent with a request, loops whose
// work is not bounded by the request's size: a range over a number, or a
// range or with inside a range that starts again from the root ($, a
// variable) and so could multiply the messages by themselves. Templates of
// installed models may loop so (Ollama's llama3.1 template ranges over
// $.Tools inside its range over messages): models/gotemplate stops any
// loop at the rendering's limits.
func boundedRanges(n parse.Node, inRange bool) error {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return nil
		}
		for _, c := range n.Nodes {
			if err := boundedRanges(c, inRange); err != nil {
				return err
			}
		}
	case *parse.RangeNode:
		if err := boundedPipe("range", n.Pipe, inRange); err != nil {
			return err
		}
		if err := boundedRanges(n.List, true); err != nil {
			return err
		}
		return boundedRanges(n.ElseList, inRange)
	case *parse.WithNode:
		if inRange {
			if err := boundedPipe("with", n.Pipe, inRange); err != nil {
				return err
			}
		}
		if err := boundedRanges(n.List, inRange); err != nil {
			return err
		}
		return boundedRanges(n.ElseList, inRange)
	case *parse.IfNode:
		if err := boundedRanges(n.List, inRange); err != nil {
			return err
		}
		return boundedRanges(n.ElseList, inRange)
	case *parse.TemplateNode:
		return fmt.Errorf("{{template %q}}: a template sent with a request may not call templates; install it with folio create instead", n.Name)
	}
	return nil
}

// boundedPipe accepts a pipeline that is one field of the data: .Messages
// or $.Messages at the top, and inside a range only a field of the element
// (.ToolCalls).
func boundedPipe(what string, p *parse.PipeNode, inRange bool) error {
	refuse := func() error {
		return fmt.Errorf("%s %s: a template sent with a request may range only over fields of its data (such as .Messages, "+
			"and inside a range over fields of the element, such as .ToolCalls); install the template with folio create instead", what, p)
	}
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return refuse()
	}
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		return nil
	case *parse.VariableNode:
		if !inRange && len(a.Ident) > 1 && a.Ident[0] == "$" { // $.Messages at the top level
			return nil
		}
	}
	return refuse()
}

// renderGo renders an Ollama Go template over the messages, tools and
// think option, as Ollama's server does; ctx's end stops it.
func renderGo(ctx context.Context, t *gotemplate.Template, msgs []api.Message, tools api.Tools, think *api.ThinkValue) (string, error) {
	v := ollamatemplate.Values{Messages: msgs, Tools: tools}
	if think != nil {
		v.IsThinkSet = true
		v.Think, v.ThinkLevel = think.Bool(), think.String() // true is "medium", as in Ollama
	}
	out, err := t.Execute(ctx, v)
	if err != nil {
		return "", fmt.Errorf("%w: chat template: %v", errBadRequest, err)
	}
	return out, nil
}
