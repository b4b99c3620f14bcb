// Package gotemplate renders Ollama's Go chat templates (the TEMPLATE of
// Modelfiles, of the Ollama registry's template layers and of
// /api/generate's template field) with Ollama's own template package, so
// that {{ .Messages }}, {{ .Prompt }}, {{ .Tools }}, the legacy
// prompt/response form and its functions (json, currentDate,
// toTypeScriptType, ...) behave as they do under Ollama, and bounds them as
// models/template bounds Jinja: in steps, output, nesting and time, with the
// same jinja.Limits.
//
// Go's text/template cannot be stopped from outside, so the bounds are
// built into what it runs:
//
//   - Parse refuses a template whose {{ template }} calls recurse, nest
//     deeper than MaxDepth or expand (every node once, each call replaced by
//     the body it calls) to more than MaxSteps nodes (bound.go). Nothing else
//     multiplies work without a loop.
//   - Parse puts an empty text node before every action and at the start of
//     every range body. text/template writes each text node to the output,
//     so the output writer sees every loop iteration and every action; it
//     counts them as steps, counts the bytes, and checks the context, and
//     its error stops the rendering at once (budget.go).
//   - print, printf, println, html, js, urlquery and json are replaced by
//     versions that refuse to build a string over MaxOutput, before
//     building it, and count the bytes they build as steps (budget.go).
//
// Between two checks the renderer does one action: at most a function call
// above or a walk over the request's own data. A rendering stops within one
// such action of its deadline or of the request's cancellation.
package gotemplate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/ollama/ollama/api"
	ollamatemplate "github.com/ollama/ollama/template"

	jinja "folio/models/template"
)

// ErrNotGo is Parse's answer for text that is not an Ollama Go template: it
// uses Jinja's {% %} or {# #}, or does not parse as Go. Callers render it as
// Jinja.
var ErrNotGo = errors.New("gotemplate: not a Go template")

// Template is a parsed Go chat template. It is immutable and may render
// concurrently.
type Template struct {
	ot     *ollamatemplate.Template // its trees carry the ticks (bound.go)
	legacy bool                     // no .Messages: rendered one prompt/response turn at a time
	suffix bool                     // uses .Suffix: renders fill-in-the-middle prompts
	Limits jinja.Limits             // jinja.DefaultLimits unless changed before rendering
}

// Parse parses s as an Ollama Go template and checks that its work is
// bounded (an error wrapping jinja.ErrLimit says why not).
func Parse(s string) (*Template, error) {
	if strings.Contains(s, "{%") || strings.Contains(s, "{#") {
		return nil, ErrNotGo
	}
	ot, err := ollamatemplate.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotGo, err)
	}
	vars, err := ot.Vars()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotGo, err)
	}
	t := &Template{ot: ot, legacy: !slices.Contains(vars, "messages"), suffix: slices.Contains(vars, "suffix"), Limits: jinja.DefaultLimits}
	if err := checkCalls(ot.Template, t.Limits); err != nil {
		return nil, err
	}
	for _, d := range ot.Templates() {
		if d.Tree != nil {
			addTicks(d.Tree.Root, false)
		}
	}
	return t, nil
}

// Check is for installers: nil when s is Jinja (models/template bounds it
// as it renders) or a Go template that Parse accepts.
func Check(s string) error {
	if _, err := Parse(s); err != nil && !errors.Is(err, ErrNotGo) {
		return err
	}
	return nil
}

// Text is the parsed template, for readers of its tree such as Ollama's
// tool-call parser. Its trees hold empty text nodes that render nothing.
func (t *Template) Text() *template.Template { return t.ot.Template }

// Suffix reports whether the template uses .Suffix, as the templates of
// Ollama's code models do for fill in the middle (Ollama's insert
// capability).
func (t *Template) Suffix() bool { return t.suffix }

// Execute renders the template over v as Ollama's server does, stopping
// with an error wrapping jinja.ErrLimit when ctx is done or a limit is
// reached. With a suffix it renders the fill-in-the-middle form, over
// .Prompt (the text before, which may be empty) and .Suffix alone, as
// Ollama does for a prompt and a suffix.
func (t *Template) Execute(ctx context.Context, v ollamatemplate.Values) (out string, err error) {
	// A panic here is a bug (ours or Ollama's); the server must survive it.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: template: internal error: %v", jinja.ErrInternal, r)
		}
	}()
	if t.Limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Limits.Timeout)
		defer cancel()
	}
	b := newBudget(ctx, t.Limits)
	run, err := t.ot.Template.Clone()
	if err != nil {
		return "", err
	}
	run.Funcs(b.funcs())
	switch {
	case v.Suffix != "":
		err = run.Execute(b, map[string]any{"Prompt": v.Prompt, "Suffix": v.Suffix, "Response": "",
			"Think": v.Think, "ThinkLevel": v.ThinkLevel, "IsThinkSet": v.IsThinkSet})
	case t.legacy:
		err = executeLegacy(run, b, v)
	default:
		ot := *t.ot
		ot.Template = run
		err = ot.Execute(b, v)
	}
	if err != nil {
		return "", err
	}
	return b.out.String(), nil
}

// executeLegacy renders a template without .Messages as Ollama does: once
// for each turn (system, prompt and response, consecutive messages of one
// role joined by a blank line), then for the last turn only the part of
// the template up to {{ .Response }}. Ollama's own version of this renders
// into a buffer of its own, outside the budget, so folio keeps its own.
func executeLegacy(run *template.Template, b *budget, v ollamatemplate.Values) error {
	var system, prompt, response string
	exec := func(t *template.Template) error {
		err := t.Execute(b, map[string]any{"System": system, "Prompt": prompt, "Response": response,
			"Think": v.Think, "ThinkLevel": v.ThinkLevel, "IsThinkSet": v.IsThinkSet})
		system, prompt, response = "", "", ""
		return err
	}
	for _, m := range joinTurns(v.Messages) {
		var err error
		switch m.Role {
		case "system":
			if prompt != "" || response != "" {
				err = exec(run)
			}
			system = m.Content
		case "user":
			if response != "" {
				err = exec(run)
			}
			prompt = m.Content
		case "assistant":
			response = m.Content
		}
		if err != nil {
			return err
		}
	}
	last, err := run.AddParseTree("folio: the last turn", &parse.Tree{Name: "folio: the last turn", Root: upToResponse(run.Tree.Root.CopyList())})
	if err != nil {
		return err
	}
	return exec(last)
}

// joinTurns joins consecutive messages of one role (tool messages stay
// apart) with a blank line, as Ollama's template package does.
func joinTurns(msgs []api.Message) []api.Message {
	var out []api.Message
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role && m.Role != "tool" {
			out[n-1].Content += "\n\n" + m.Content
			continue
		}
		out = append(out, m)
	}
	return out
}

// upToResponse cuts list after the first {{ .Response }}: the nodes that
// follow it are dropped, in its own list and in the lists around it, as are
// the commands and arguments after it in its pipeline.
func upToResponse(list *parse.ListNode) *parse.ListNode {
	cut := false
	var walk func(n parse.Node) parse.Node
	walk = func(n parse.Node) parse.Node {
		if f, ok := n.(*parse.FieldNode); ok && slices.Contains(f.Ident, "Response") {
			cut = true
			return n
		}
		if cut {
			return nil
		}
		switch n := n.(type) {
		case *parse.ListNode:
			var kept []parse.Node
			for _, c := range n.Nodes {
				if c := walk(c); c != nil {
					kept = append(kept, c)
				}
			}
			n.Nodes = kept
		case *parse.IfNode:
			walkBranch(&n.BranchNode, walk)
		case *parse.WithNode:
			walkBranch(&n.BranchNode, walk)
		case *parse.RangeNode:
			walkBranch(&n.BranchNode, walk)
		case *parse.ActionNode:
			p := walk(n.Pipe)
			if p == nil {
				return nil
			}
			n.Pipe = p.(*parse.PipeNode)
		case *parse.PipeNode:
			var cmds []*parse.CommandNode
			for _, c := range n.Cmds {
				var args []parse.Node
				for _, a := range c.Args {
					if a := walk(a); a != nil {
						args = append(args, a)
					}
				}
				if len(args) > 0 {
					c.Args = args
					cmds = append(cmds, c)
				}
			}
			if len(cmds) == 0 {
				return nil
			}
			n.Cmds = cmds
		}
		return n
	}
	walk(list)
	return list
}

// walkBranch cuts the lists of an if, with or range (not its pipeline, as
// Ollama does); a list cut whole stays, empty.
func walkBranch(b *parse.BranchNode, walk func(parse.Node) parse.Node) {
	for _, l := range []*parse.ListNode{b.List, b.ElseList} {
		if l != nil && walk(l) == nil {
			l.Nodes = nil
		}
	}
}
