package server

import (
	"fmt"
	"strings"
	"sync"
	"text/template/parse"

	"github.com/ollama/ollama/api"
	ollamatemplate "github.com/ollama/ollama/template"
)

// Chat templates come in two syntaxes: Jinja, the tokenizer.chat_template
// of GGUF files (models/template renders it), and Ollama's Go templates,
// the TEMPLATE of Modelfiles, of the Ollama registry's template layers and
// of /api/generate's template field. Ollama's own template package renders
// the latter, so that {{ .Messages }}, {{ .Prompt }}, {{ .Tools }}, the
// legacy prompt/response templates and its functions (json, currentDate,
// toTypeScriptType, ...) behave exactly as they do under Ollama.

// installedGo holds the templates of installed models by their text,
// parsed once (nil: not Go syntax), for the render and the tool parser of
// every request. Templates sent with a request are parsed each time.
var installedGo sync.Map

// maxTemplateOutput bounds a rendered prompt: far above any context, far
// below what a looping template could fill memory with.
const maxTemplateOutput = 64 << 20

// goTemplate parses s as an Ollama Go template. ok is false when s is not
// one (it uses Jinja's {% %} or {# #}, or does not parse as Go but does as
// Jinja: the caller renders it as Jinja). A template that is neither gets
// an error naming both failures.
func goTemplate(s string, fromRequest bool) (t *ollamatemplate.Template, ok bool, err error) {
	if strings.Contains(s, "{%") || strings.Contains(s, "{#") {
		return nil, false, nil
	}
	if !fromRequest {
		if v, ok := installedGo.Load(s); ok {
			t = v.(*ollamatemplate.Template)
			return t, t != nil, nil
		}
	}
	if t, err = ollamatemplate.Parse(s); err != nil {
		t = nil
	}
	if !fromRequest {
		installedGo.Store(s, t)
		return t, t != nil, nil
	}
	if t == nil {
		return nil, false, nil
	}
	if defs := t.Templates(); len(defs) > 1 {
		return nil, true, fmt.Errorf("%w: template: a template sent with a request may not define templates; install it with folio create instead", errBadRequest)
	}
	if err := boundedRanges(t.Tree.Root, false); err != nil {
		return nil, true, fmt.Errorf("%w: template: %v", errBadRequest, err)
	}
	return t, true, nil
}

// boundedRanges refuses, in a template sent with a request, loops whose
// work is not bounded by the request's size: a range over a number, or a
// range or with inside a range that starts again from the root ($, a
// variable) and so could multiply the messages by themselves. Templates of
// installed models are the user's own and are not checked (Ollama's
// llama3.1 template ranges over $.Tools inside its range over messages).
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
// think option, as Ollama's server does.
func renderGo(t *ollamatemplate.Template, msgs []api.Message, tools api.Tools, think *api.ThinkValue) (string, error) {
	v := ollamatemplate.Values{Messages: msgs, Tools: tools}
	if think != nil {
		v.IsThinkSet = true
		v.Think = think.Bool()
		if think.IsString() {
			v.ThinkLevel = think.String()
		}
	}
	var out limitedBuilder
	if err := t.Execute(&out, v); err != nil {
		return "", fmt.Errorf("%w: chat template: %v", errBadRequest, err)
	}
	return out.String(), nil
}

// limitedBuilder is a strings.Builder that refuses to grow past
// maxTemplateOutput.
type limitedBuilder struct{ strings.Builder }

func (b *limitedBuilder) Write(p []byte) (int, error) {
	if b.Len()+len(p) > maxTemplateOutput {
		return 0, fmt.Errorf("%w (%d MiB)", errTemplateOutput, maxTemplateOutput>>20)
	}
	return b.Builder.Write(p)
}
