package template

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// evaluator is one rendering. It is not shared between goroutines.
type evaluator struct {
	ctx       context.Context
	lim       Limits
	steps     int
	nextCheck int
	depth     int // macro calls and recursive loops in progress
	out       *strings.Builder
	now       time.Time
}

// scope holds the variables one level of the template assigns. A for loop
// iteration, a macro call, a with block and the bodies of set and filter
// blocks get their own; if does not (jinja2's rules). Scopes hold a few
// names, so they are slices searched in order, not maps.
type scope struct {
	names  []string
	vals   []Value
	parent *scope
}

func newScope(parent *scope) *scope { return &scope{parent: parent} }

func (s *scope) lookup(name string) (Value, bool) {
	for ; s != nil; s = s.parent {
		for i, n := range s.names {
			if n == name {
				return s.vals[i], true
			}
		}
	}
	return nil, false
}

// set binds name in this scope.
func (s *scope) set(name string, v Value) {
	for i, n := range s.names {
		if n == name {
			s.vals[i] = v
			return
		}
	}
	s.names = append(s.names, name)
	s.vals = append(s.vals, v)
}

// frame starts the scope of a frame under s, with its names that are
// undefined until assigned (scopes.go).
func (e *evaluator) frame(s *scope, undef []string) *scope {
	f := newScope(s)
	bindUndefined(f, undef)
	return f
}

// errBreak and errContinue carry {% break %} and {% continue %} to their loop.
var (
	errBreak    = errors.New("break")
	errContinue = errors.New("continue")
)

func limitErrorf(format string, args ...any) *Error {
	return &Error{Msg: "template: " + fmt.Sprintf(format, args...), kind: ErrLimit}
}

// step counts one unit of work and checks the limits.
func (e *evaluator) step() error {
	e.steps++
	if e.steps < e.nextCheck {
		return nil
	}
	return e.checkLimits()
}

func (e *evaluator) checkLimits() error {
	if e.steps > e.lim.MaxSteps {
		return limitErrorf("rendering takes more than %d steps", e.lim.MaxSteps)
	}
	e.nextCheck = min(e.steps+1024, e.lim.MaxSteps+1)
	if err := e.ctx.Err(); err != nil {
		return limitErrorf("rendering stopped: %v", err)
	}
	return nil
}

// charge accounts for a string or list of n bytes about to be built: it must
// fit in MaxOutput, and every 16 bytes cost a step, which bounds the memory
// a rendering can allocate.
func (e *evaluator) charge(n int) error {
	if n > e.lim.MaxOutput || n < 0 {
		return limitErrorf("a value of %d bytes exceeds the %d-byte limit", n, e.lim.MaxOutput)
	}
	e.steps += n >> 4
	if e.steps < e.nextCheck {
		return nil
	}
	return e.checkLimits()
}

// chargeItems accounts for a list or dict of n items about to be built: a
// step each, which bounds the memory lists take.
func (e *evaluator) chargeItems(n int) error {
	if n < 0 || n > e.lim.MaxSteps {
		return limitErrorf("rendering takes more than %d steps", e.lim.MaxSteps)
	}
	e.steps += n
	if e.steps < e.nextCheck {
		return nil
	}
	return e.checkLimits()
}

// chargeRead accounts for a pass over n bytes of an existing string (a
// search, a case mapping, a comparison): a step per 64 bytes.
func (e *evaluator) chargeRead(n int) error {
	e.steps += n >> 6
	if e.steps < e.nextCheck {
		return nil
	}
	return e.checkLimits()
}

func (e *evaluator) write(s string) error {
	if e.out.Len()+len(s) > e.lim.MaxOutput {
		return limitErrorf("output exceeds %d bytes", e.lim.MaxOutput)
	}
	if err := e.charge(len(s)); err != nil {
		return err
	}
	e.out.WriteString(s)
	return nil
}

// writeValue writes str(v).
func (e *evaluator) writeValue(v Value) error {
	text, err := e.strChecked(v)
	if err != nil {
		return err
	}
	return e.write(text)
}

// capture runs fn with output going to a fresh buffer and returns what it wrote.
func (e *evaluator) capture(fn func() error) (string, error) {
	saved := e.out
	e.out = &strings.Builder{}
	err := fn()
	s := e.out.String()
	e.out = saved
	return s, err
}

// enterCall counts a macro call or recursive loop against MaxDepth.
func (e *evaluator) enterCall() error {
	e.depth++
	if e.depth > e.lim.MaxDepth {
		return limitErrorf("macro calls or recursive loops nest deeper than %d", e.lim.MaxDepth)
	}
	return nil
}

func (e *evaluator) execBody(body []stmt, s *scope) error {
	for _, st := range body {
		if err := e.exec(st, s); err != nil {
			var te *Error
			if errors.As(err, &te) && te.Line == 0 {
				te.Line = st.stmtLine()
			}
			return err
		}
	}
	return nil
}

func (e *evaluator) exec(st stmt, s *scope) error {
	if err := e.step(); err != nil {
		return err
	}
	switch st := st.(type) {
	case *textStmt:
		return e.write(st.text)
	case *outputStmt:
		v, err := e.eval(st.x, s)
		if err != nil {
			return err
		}
		return e.writeValue(v)
	case *ifStmt:
		for i, c := range st.conds {
			v, err := e.eval(c, s)
			if err != nil {
				return err
			}
			if truthy(v) {
				return e.execBody(st.bodies[i], s)
			}
		}
		return e.execBody(st.els, s)
	case *forStmt:
		v, err := e.eval(st.iter, s)
		if err != nil {
			return err
		}
		return e.loop(st, s, v, 1)
	case *setStmt:
		v, err := e.eval(st.x, s)
		if err != nil {
			return err
		}
		return e.assign(st.target, v, s)
	case *setBlockStmt:
		text, err := e.capture(func() error { return e.execBody(st.body, e.frame(s, st.undef)) })
		if err != nil {
			return err
		}
		v, err := e.applyFilters(st.filters, text, s)
		if err != nil {
			return err
		}
		return e.assign(st.target, v, s)
	case *macroStmt:
		s.set(st.m.name, &macro{def: st.m, scope: s})
		return nil
	case *callBlockStmt:
		v, err := e.evalCall(st.call, s, &macro{def: st.caller, scope: s})
		if err != nil {
			return err
		}
		return e.writeValue(v)
	case *filterBlockStmt:
		text, err := e.capture(func() error { return e.execBody(st.body, e.frame(s, st.undef)) })
		if err != nil {
			return err
		}
		v, err := e.applyFilters(st.filters, text, s)
		if err != nil {
			return err
		}
		return e.writeValue(v)
	case *withStmt:
		inner := e.frame(s, st.undef)
		for i, t := range st.targets {
			v, err := e.eval(st.values[i], s)
			if err != nil {
				return err
			}
			if err := e.assign(t, v, inner); err != nil {
				return err
			}
		}
		return e.execBody(st.body, inner)
	case *loopCtlStmt:
		if st.brk {
			return errBreak
		}
		return errContinue
	case *unsupportedStmt:
		return &Error{Msg: "no loader for this environment specified", kind: ErrType}
	}
	return &Error{Msg: fmt.Sprintf("template: unknown statement %T", st), kind: ErrInternal}
}

func (e *evaluator) applyFilters(fs []*filterExpr, v Value, s *scope) (Value, error) {
	for _, f := range fs {
		var err error
		if v, err = e.applyFilter(f, v, s); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// assign binds a set, for or with target in s.
func (e *evaluator) assign(t target, v Value, s *scope) error {
	switch {
	case t.ns != "":
		obj, _ := s.lookup(t.ns)
		ns, ok := obj.(*namespace)
		if !ok {
			return &Error{Msg: "cannot assign attribute on non-namespace object", kind: ErrType}
		}
		return ns.attrs.set(t.name, v)
	case !t.isTup:
		s.set(t.name, v)
		return nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return typeErrorf("cannot unpack non-iterable %s object", typeName(v))
	}
	if len(items) < len(t.tuple) {
		return typeErrorf("not enough values to unpack (expected %d, got %d)", len(t.tuple), len(items))
	}
	if len(items) > len(t.tuple) {
		return typeErrorf("too many values to unpack (expected %d)", len(t.tuple))
	}
	for i, sub := range t.tuple {
		if err := e.assign(sub, items[i], s); err != nil {
			return err
		}
	}
	return nil
}

// loopState is the loop variable of one for loop.
type loopState struct {
	items   []Value
	index   int // 0-based
	depth   int // 1 at the outermost level of a recursive loop
	recurse *builtin
	changed []Value
	hasLast bool
}

// loop runs a for statement over v at recursion depth.
func (e *evaluator) loop(st *forStmt, s *scope, v Value, depth int) error {
	items, err := e.iterate(v)
	if err != nil {
		return err
	}
	if st.cond != nil {
		kept := items[:0:0]
		for _, it := range items {
			if err := e.step(); err != nil {
				return err
			}
			is := newScope(s)
			if err := e.assign(st.target, it, is); err != nil {
				return err
			}
			ok, err := e.eval(st.cond, is)
			if err != nil {
				return err
			}
			if truthy(ok) {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	ls := &loopState{items: items, depth: depth}
	if st.recursive {
		ls.recurse = &builtin{name: "loop", fn: func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			if len(args) != 1 || kw.len() > 0 {
				return nil, typeErrorf("loop() takes exactly one argument")
			}
			if err := e.enterCall(); err != nil {
				return nil, err
			}
			defer func() { e.depth-- }()
			return e.capture(func() error { return e.loop(st, s, args[0], depth+1) })
		}}
	}
	for i, it := range items {
		if err := e.step(); err != nil {
			return err
		}
		is := e.frame(s, st.bodyUndef)
		if err := e.assign(st.target, it, is); err != nil {
			return err
		}
		ls.index = i
		is.set("loop", ls)
		switch err := e.execBody(st.body, is); err {
		case nil, errContinue:
		case errBreak:
			return nil
		default:
			return err
		}
	}
	if len(items) == 0 && st.els != nil {
		return e.execBody(st.els, e.frame(s, st.elseUndef))
	}
	return nil
}

// iterate lists what a for loop over v visits: a list's items, a dict's
// keys, a string's characters; nothing for an undefined.
func (e *evaluator) iterate(v Value) ([]Value, error) {
	switch v := v.(type) {
	case *list:
		return v.items, nil
	case *dict:
		return v.keys, nil
	case *namespace:
		return nil, typeErrorf("'Namespace' object is not iterable")
	case string:
		if err := e.chargeItems(len(v)); err != nil {
			return nil, err
		}
		out := make([]Value, 0, len(v))
		for _, r := range v {
			out = append(out, string(r))
		}
		return out, nil
	case *undefined:
		return nil, nil
	case *loopState:
		return nil, typeErrorf("'LoopContext' object is not iterable")
	}
	return nil, typeErrorf("'%s' object is not iterable", typeName(v))
}
