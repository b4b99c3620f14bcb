// Package template renders chat templates: the Jinja text a model file keeps
// in tokenizer.chat_template. It is a Jinja interpreter of its own, written to
// render the way Hugging Face transformers does (jinja2's
// ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
// loopcontrols; tojson as json.dumps with ensure_ascii off; raise_exception and
// strftime_now), byte for byte, and to be safe on hostile input: a template
// comes from a downloaded file.
//
// Safety: rendering is bounded in steps, time, output and string size, and in
// the nesting of macro calls and recursive loops (Limits); the parser bounds
// the nesting of blocks and expressions; nothing touches the file system
// (include, import and extends are refused). Errors are *Error values whose
// message is the one Python would give (raise_exception's text for a
// template's own check).
//
// Values the caller passes (messages, tools, extra variables) are JSON-like:
// nil, bool, numbers, string, []any, Object (an object that keeps its key
// order; DecodeJSON makes them from request bytes), map[string]any (keys
// sorted), or any other Go value, which goes through encoding/json. Key order
// matters: templates print tools with tojson.
package template

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Error kinds, for errors.Is.
var (
	ErrSyntax    = errors.New("template: syntax error")
	ErrRaised    = errors.New("template: raise_exception")
	ErrUndefined = errors.New("template: undefined")
	ErrType      = errors.New("template: type error")
	ErrLimit     = errors.New("template: limit exceeded")
	ErrInternal  = errors.New("template: internal error") // a bug here, never the template's fault
)

// Error is a parse or render error. Error() is the message alone, as Python
// prints the exception (for raise_exception, the template's own text).
type Error struct {
	Msg  string
	Line int // template line (1-based), 0 if unknown
	kind error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind: ErrSyntax, ErrRaised, ErrUndefined, ErrType,
// ErrLimit or ErrInternal.
func (e *Error) Unwrap() error { return e.kind }

func typeErrorf(format string, args ...any) error {
	return &Error{Msg: fmt.Sprintf(format, args...), kind: ErrType}
}

// Limits bound one rendering.
type Limits struct {
	MaxSteps  int           // evaluation steps; building strings and lists costs one step per 16 bytes
	MaxOutput int           // bytes of output, and of any one string or list built on the way
	MaxDepth  int           // nesting of macro calls and recursive loops
	Timeout   time.Duration // wall-clock time; 0 means none beyond the context's
}

// DefaultLimits suit a chat prompt: far above what real templates use (a few
// thousand steps, some kilobytes), far below what would hurt the server.
var DefaultLimits = Limits{
	MaxSteps:  5_000_000,
	MaxOutput: 16 << 20,
	MaxDepth:  100,
	Timeout:   5 * time.Second,
}

// Message is one chat message as templates see it: a dict with role and
// content, plus the optional keys below when they are set.
type Message struct {
	Role       string
	Content    any        // a string, nil (None), or a list of parts such as {"type": "text", "text": ...}
	Thinking   string     // "reasoning_content" and "thinking" when not empty
	ToolCalls  []ToolCall // "tool_calls" when not empty
	ToolCallID string     // "tool_call_id" when not empty
	ToolName   string     // "name" when not empty (the tool a tool message answers for)
	Extra      Object     // further keys, after the ones above
	// Raw, when set, is the whole message as the client sent it (key order
	// kept); the fields above are then ignored.
	Raw Object
}

// ToolCall is {"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}.
type ToolCall struct {
	ID        string // left out when empty
	Type      string // "function" when empty
	Name      string
	Arguments any // usually an Object; a string stays a string; nil is {}
}

// Context is what one rendering sees.
type Context struct {
	Messages            []Message
	Tools               []any // nil renders as None (no tools), as transformers passes it
	AddGenerationPrompt bool
	BOSToken, EOSToken  *string        // nil leaves bos_token / eos_token undefined
	Vars                map[string]any // further variables, e.g. enable_thinking
	Now                 time.Time      // what strftime_now formats; zero means time.Now()
}

// Template is a parsed template. It is immutable and may render concurrently.
type Template struct {
	body      []stmt
	rootUndef []string // see scopes.go
	Limits    Limits   // DefaultLimits unless changed before rendering
}

// maxParseDepth bounds the nesting of blocks and expressions in the source
// (the parser recurses on them; Python's own limit is near 1000 frames).
const maxParseDepth = 200

// Parse parses a template.
func Parse(src string) (t *Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, &Error{Msg: fmt.Sprintf("template: internal error: %v", r), kind: ErrInternal}
		}
	}()
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	body, err := p.parseTemplate()
	if err != nil {
		return nil, err
	}
	return &Template{body: body, rootUndef: analyzeFrame(nil, nil, nil, body), Limits: DefaultLimits}, nil
}

// Render parses src and renders it with DefaultLimits.
func Render(src string, c Context) (string, error) {
	t, err := Parse(src)
	if err != nil {
		return "", err
	}
	return t.Render(c)
}

// Render renders the template.
func (t *Template) Render(c Context) (string, error) {
	return t.Execute(context.Background(), c)
}

// Execute renders the template, stopping with an ErrLimit error when ctx is
// done or a limit is reached.
func (t *Template) Execute(ctx context.Context, c Context) (out string, err error) {
	// A panic here is a bug in this package; the server must survive it.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", &Error{Msg: fmt.Sprintf("template: internal error: %v", r), kind: ErrInternal}
		}
	}()
	if t.Limits.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.Limits.Timeout)
		defer cancel()
	}
	e := &evaluator{ctx: ctx, lim: t.Limits, out: &strings.Builder{}}
	root, err := e.globals(c)
	if err != nil {
		return "", err
	}
	top := newScope(root)
	bindUndefined(top, t.rootUndef)
	if err := e.execBody(t.body, top); err != nil {
		switch err {
		case errBreak, errContinue: // only inside loops, which the parser checks
		default:
			return "", err
		}
	}
	return e.out.String(), nil
}
