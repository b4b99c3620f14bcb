package template

import (
	"slices"
	"unicode/utf8"
)

// builtin is a Go function callable from a template: a global, a bound
// method, or the loop(...) of a recursive loop.
type builtin struct {
	name string
	fn   func(e *evaluator, args []Value, kw *kwargs) (Value, error)
}

// kwargs are keyword arguments in call order.
type kwargs struct {
	names []string
	vals  []Value
}

func (k *kwargs) len() int {
	if k == nil {
		return 0
	}
	return len(k.names)
}

func (k *kwargs) add(name string, v Value) {
	k.names = append(k.names, name)
	k.vals = append(k.vals, v)
}

// take removes and returns the keyword argument name.
func (k *kwargs) take(name string) (Value, bool) {
	if k == nil {
		return nil, false
	}
	i := slices.Index(k.names, name)
	if i < 0 {
		return nil, false
	}
	v := k.vals[i]
	k.names = slices.Delete(k.names, i, i+1)
	k.vals = slices.Delete(k.vals, i, i+1)
	return v, true
}

// macro is a macro (or a call block's caller) bound to the scope it was defined in.
type macro struct {
	def   *macroDef
	scope *scope
	name  string
}

func (e *evaluator) evalArgs(a callArgs, s *scope) ([]Value, *kwargs, error) {
	args := make([]Value, 0, len(a.pos))
	for _, x := range a.pos {
		v, err := e.eval(x, s)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	if a.dynArgs != nil {
		v, err := e.eval(a.dynArgs, s)
		if err != nil {
			return nil, nil, err
		}
		more, err := e.iterate(v)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, more...)
	}
	kw := &kwargs{}
	for i, name := range a.kwNames {
		v, err := e.eval(a.kwVals[i], s)
		if err != nil {
			return nil, nil, err
		}
		kw.add(name, v)
	}
	if a.dynKwargs != nil {
		v, err := e.eval(a.dynKwargs, s)
		if err != nil {
			return nil, nil, err
		}
		d, ok := v.(*dict)
		if !ok {
			if _, isU := v.(*undefined); !isU {
				return nil, nil, typeErrorf("argument after ** must be a mapping, not %s", typeName(v))
			}
			d = newDict()
		}
		for i, k := range d.keys {
			ks, ok := k.(string)
			if !ok {
				return nil, nil, typeErrorf("keywords must be strings")
			}
			kw.add(ks, d.vals[i])
		}
	}
	return args, kw, nil
}

// evalCall calls a function; caller is the body of a call block, or nil.
func (e *evaluator) evalCall(c *callExpr, s *scope, caller *macro) (Value, error) {
	fn, err := e.eval(c.fn, s)
	if err != nil {
		return nil, err
	}
	args, kw, err := e.evalArgs(c.args, s)
	if err != nil {
		return nil, err
	}
	return e.call(fn, args, kw, caller)
}

func (e *evaluator) call(fn Value, args []Value, kw *kwargs, caller *macro) (Value, error) {
	switch f := fn.(type) {
	case *macro:
		return e.callMacro(f, args, kw, caller)
	case *builtin:
		if caller != nil {
			kw.add("caller", caller)
		}
		return f.fn(e, args, kw)
	case *loopState:
		if f.recurse == nil {
			return nil, typeErrorf("The loop must be marked as recursive to be called with loop(...)")
		}
		return f.recurse.fn(e, args, kw)
	case *undefined:
		return nil, f.err()
	}
	return nil, typeErrorf("'%s' object is not callable", typeName(fn))
}

// callMacro binds arguments as jinja2's Macro does and renders the body.
func (e *evaluator) callMacro(m *macro, args []Value, kw *kwargs, caller *macro) (Value, error) {
	if err := e.enterCall(); err != nil {
		return nil, err
	}
	defer func() { e.depth-- }()
	d := m.def
	ms := e.frame(m.scope, d.undef)
	if len(args) > len(d.params) && !d.usesVarargs {
		return nil, typeErrorf("macro '%s' takes not more than %d argument(s)", d.name, len(d.params))
	}
	for i, name := range d.params {
		if i < len(args) {
			if _, dup := kw.take(name); dup {
				return nil, typeErrorf("macro '%s' got multiple values for argument '%s'", d.name, name)
			}
			ms.set(name, args[i])
			continue
		}
		if v, ok := kw.take(name); ok {
			ms.set(name, v)
			continue
		}
		if d.defaults[i] != nil {
			v, err := e.eval(d.defaults[i], ms)
			if err != nil {
				return nil, err
			}
			ms.set(name, v)
			continue
		}
		ms.set(name, &undefined{name: name, hint: "parameter " + reprString(name) + " was not provided"})
	}
	if d.usesVarargs {
		var extra []Value
		if len(args) > len(d.params) {
			extra = args[len(d.params):]
		}
		ms.set("varargs", newTuple(extra))
	}
	if c, ok := kw.take("caller"); ok && caller == nil {
		caller, _ = c.(*macro)
		ms.set("caller", c)
	}
	if caller != nil {
		if !d.usesCaller {
			return nil, typeErrorf("macro '%s' takes no keyword argument 'caller'", d.name)
		}
		ms.set("caller", caller)
	}
	if d.usesKwargs {
		kd := newDict()
		for i, n := range kw.names {
			_ = kd.set(n, kw.vals[i])
		}
		ms.set("kwargs", kd)
	} else if kw.len() > 0 {
		return nil, typeErrorf("macro '%s' takes no keyword argument '%s'", d.name, kw.names[0])
	}
	return e.capture(func() error { return e.execBody(d.body, ms) })
}

// argSpec reads a builtin's arguments by position or name, in Python's way.
func argSpec(fname string, args []Value, kw *kwargs, names ...string) ([]Value, error) {
	if len(args) > len(names) {
		return nil, typeErrorf("%s() takes at most %d arguments (%d given)", fname, len(names), len(args))
	}
	out := make([]Value, len(names))
	for i := range names {
		out[i] = missing
		if i < len(args) {
			out[i] = args[i]
		}
	}
	if kw != nil {
		for i, n := range kw.names {
			j := slices.Index(names, n)
			if j < 0 {
				return nil, typeErrorf("%s() got an unexpected keyword argument '%s'", fname, n)
			}
			if out[j] != missing {
				return nil, typeErrorf("%s() got multiple values for argument '%s'", fname, n)
			}
			out[j] = kw.vals[i]
		}
	}
	return out, nil
}

// missing marks an argument that was not given.
var missing = &struct{ byte }{}

func given(v Value) bool { return v != missing }

// or returns v, or def when v was not given.
func or(v, def Value) Value {
	if v == missing {
		return def
	}
	return v
}

// sliceIndices is Python's slice.indices(n).
func sliceIndices(start, stop, step Value, n int) (int, int, int, error) {
	st := 1
	if step != nil {
		s, ok := asInt(step)
		if !ok {
			return 0, 0, 0, typeErrorf("slice indices must be integers or None or have an __index__ method")
		}
		if s == 0 {
			return 0, 0, 0, typeErrorf("slice step cannot be zero")
		}
		st = int(max(min(s, 1<<40), -(1 << 40)))
	}
	bound := func(v Value, def int) (int, error) {
		if v == nil {
			return def, nil
		}
		i, ok := asInt(v)
		if !ok {
			return 0, typeErrorf("slice indices must be integers or None or have an __index__ method")
		}
		lo, hi := 0, n
		if st < 0 {
			lo, hi = -1, n-1
		}
		if i < 0 {
			i += int64(n)
			if i < int64(lo) {
				return lo, nil
			}
			return int(i), nil
		}
		if i > int64(hi) {
			return hi, nil
		}
		return int(i), nil
	}
	var a, b int
	var err error
	if st > 0 {
		a, err = bound(start, 0)
		if err == nil {
			b, err = bound(stop, n)
		}
	} else {
		a, err = bound(start, n-1)
		if err == nil {
			b, err = bound(stop, -1)
		}
	}
	return a, b, st, err
}

func (e *evaluator) evalSlice(x *sliceExpr, s *scope) (Value, error) {
	obj, err := e.eval(x.obj, s)
	if err != nil {
		return nil, err
	}
	var parts [3]Value
	for i, p := range []expr{x.start, x.stop, x.step} {
		if p == nil {
			continue
		}
		if parts[i], err = e.eval(p, s); err != nil {
			return nil, err
		}
		if u, ok := parts[i].(*undefined); ok {
			return nil, u.err()
		}
	}
	return e.slice(obj, parts[0], parts[1], parts[2])
}

func (e *evaluator) slice(obj, start, stop, step Value) (Value, error) {
	var items []Value
	var runes []rune
	n := 0
	switch o := obj.(type) {
	case *list:
		items, n = o.items, len(o.items)
	case string:
		runes = []rune(o)
		n = len(runes)
	case *undefined:
		return nil, o.err()
	case *dict:
		return nil, typeErrorf("unhashable type: 'slice'")
	default:
		return nil, typeErrorf("'%s' object is not subscriptable", typeName(obj))
	}
	a, b, st, err := sliceIndices(start, stop, step, n)
	if err != nil {
		return nil, err
	}
	if err := e.chargeItems(n); err != nil {
		return nil, err
	}
	var outItems []Value
	var outRunes []rune
	for i := a; (st > 0 && i < b) || (st < 0 && i > b); i += st {
		if runes != nil {
			outRunes = append(outRunes, runes[i])
		} else {
			outItems = append(outItems, items[i])
		}
	}
	if l, ok := obj.(*list); ok {
		return &list{items: outItems, tuple: l.tuple}, nil
	}
	if st == 1 && utf8.ValidString(obj.(string)) {
		return string(runes[a:max(a, b)]), nil
	}
	return string(outRunes), nil
}
