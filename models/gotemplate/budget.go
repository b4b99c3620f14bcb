package gotemplate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	jinja "folio/models/template"
)

// budget is one rendering's output and its account of steps. text/template
// writes every text node to it, the ticks included (bound.go), and stops at
// its first error; the functions of funcs charge it for what they build.
// One rendering goroutine owns it.
type budget struct {
	ctx   context.Context
	done  <-chan struct{}
	lim   jinja.Limits
	steps int
	out   strings.Builder
}

func newBudget(ctx context.Context, lim jinja.Limits) *budget {
	return &budget{ctx: ctx, done: ctx.Done(), lim: lim}
}

// step charges n steps and checks the context.
func (b *budget) step(n int) error {
	b.steps += n
	if b.steps > b.lim.MaxSteps {
		return fmt.Errorf("%w: rendering takes more than %d steps", jinja.ErrLimit, b.lim.MaxSteps)
	}
	select {
	case <-b.done:
		return fmt.Errorf("%w: rendering stopped: %w", jinja.ErrLimit, context.Cause(b.ctx))
	default:
	}
	return nil
}

// Write is one text node, action result or tick: a step, plus one per 16
// bytes, as models/template charges the strings it builds.
func (b *budget) Write(p []byte) (int, error) {
	if err := b.step(1 + len(p)/16); err != nil {
		return 0, err
	}
	if b.out.Len()+len(p) > b.lim.MaxOutput {
		return 0, fmt.Errorf("%w: output exceeds %d bytes", jinja.ErrLimit, b.lim.MaxOutput)
	}
	return b.out.Write(p)
}

// fits refuses a string of n bytes, about to be built, over MaxOutput.
func (b *budget) fits(what string, n int) error {
	if n > b.lim.MaxOutput {
		return fmt.Errorf("%w: %s would build %d bytes, over the %d-byte limit", jinja.ErrLimit, what, n, b.lim.MaxOutput)
	}
	return nil
}

// built charges a string a function built.
func (b *budget) built(s string) (string, error) {
	return s, b.step(1 + len(s)/16)
}

// funcs replaces the functions of text/template and Ollama that build
// strings longer than their arguments with ones that refuse, before
// building it, a string over MaxOutput. The others return a part of their
// arguments, a number or a boolean, or (Ollama's currentDate,
// yesterdayDate and toTypeScriptType) a short string.
func (b *budget) funcs() template.FuncMap {
	return template.FuncMap{
		"print": func(args ...any) (string, error) {
			if _, _, err := b.measure("print", args); err != nil {
				return "", err
			}
			return b.built(fmt.Sprint(args...))
		},
		"println": func(args ...any) (string, error) {
			if _, _, err := b.measure("println", args); err != nil {
				return "", err
			}
			return b.built(fmt.Sprintln(args...))
		},
		"printf":   b.printf,
		"html":     b.escaper("html", 5, template.HTMLEscaper), // " → &#34;
		"js":       b.escaper("js", 6, template.JSEscaper),     // < → \u003C
		"urlquery": b.escaper("urlquery", 3, template.URLQueryEscaper),
		"json": func(v any) (string, error) { // Ollama's json, which escapes < as \u003c
			if s, ok := v.(string); ok {
				if err := b.fits("json", 6*len(s)+2); err != nil {
					return "", err
				}
			}
			data, _ := json.Marshal(v)
			return b.built(string(data))
		},
	}
}

// measure returns the bytes that printing args takes: a string's length,
// or what fmt prints for another value (a walk of the request's data,
// charged as steps). other is the part that is not strings. It stops at the
// first argument that takes the sum over MaxOutput.
func (b *budget) measure(what string, args []any) (sum, other int, err error) {
	for _, a := range args {
		n := 0
		if s, ok := a.(string); ok {
			n = len(s)
		} else {
			n = len(fmt.Sprint(a)) + 1
			other += n
			if err := b.step(n / 16); err != nil {
				return 0, 0, err
			}
		}
		sum += n
		if err := b.fits(what, sum); err != nil {
			return 0, 0, err
		}
	}
	return sum, other, nil
}

// escaper wraps one of text/template's escaping functions, whose result is
// at most grow times as long as its printed arguments.
func (b *budget) escaper(name string, grow int, esc func(...any) string) func(...any) (string, error) {
	return func(args ...any) (string, error) {
		sum, _, err := b.measure(name, args)
		if err != nil {
			return "", err
		}
		if err := b.fits(name, grow*sum); err != nil {
			return "", err
		}
		return b.built(esc(args...))
	}
}

// printf is fmt.Sprintf, refused when the most it could build is over
// MaxOutput: the format, its arguments (each once, or each once per verb
// when the format picks arguments by index; six times over for verbs that
// quote or escape, as %q and % #x do), and for every verb its width and
// precision, which fmt applies to every element of a list.
func (b *budget) printf(format string, args ...any) (string, error) {
	sum, other, err := b.measure("printf", args)
	if err != nil {
		return "", err
	}
	f := scanFormat(format)
	if f.indexed {
		sum *= f.verbs
	}
	if !f.plain {
		sum *= 6
	}
	if err := b.fits("printf", len(format)+sum+f.verbs*(f.pad+32)*(1+other)); err != nil {
		return "", err
	}
	return b.built(fmt.Sprintf(format, args...))
}

// formatVerbs is what scanFormat finds in a printf format.
type formatVerbs struct {
	verbs   int  // verbs, not counting %%
	pad     int  // the largest width plus precision of a verb
	indexed bool // an argument is picked by index ([n]), so one may be printed many times
	plain   bool // every verb is %s or %v, with no flag but - and 0: arguments print as fmt.Sprint prints them
}

// scanFormat reads the verbs of a printf format as fmt does.
func scanFormat(format string) formatVerbs {
	f := formatVerbs{plain: true}
	const maxPad = 1_000_000 // fmt's: a larger width or precision is an error
	num := func(i int) (n, next int) {
		if i < len(format) && format[i] == '*' {
			return maxPad, i + 1
		}
		for ; i < len(format) && format[i] >= '0' && format[i] <= '9'; i++ {
			n = min(n*10+int(format[i]-'0'), maxPad)
		}
		return n, i
	}
	index := func(i int) int {
		if i < len(format) && format[i] == '[' {
			f.indexed = true
			if j := strings.IndexByte(format[i:], ']'); j >= 0 {
				return i + j + 1
			}
		}
		return i
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		i++
		for ; i < len(format) && strings.IndexByte("+-# 0", format[i]) >= 0; i++ {
			if format[i] != '-' && format[i] != '0' {
				f.plain = false
			}
		}
		var width, prec int
		width, i = num(index(i))
		if i < len(format) && format[i] == '.' {
			prec, i = num(index(i + 1))
		}
		i = index(i)
		if i >= len(format) {
			break
		}
		if format[i] == '%' {
			continue
		}
		if format[i] != 's' && format[i] != 'v' {
			f.plain = false
		}
		f.verbs++
		f.pad = max(f.pad, width+prec)
	}
	return f
}
