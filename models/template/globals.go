package template

import (
	"fmt"
	"time"
)

// maxRange is the sandbox's limit on range(), as in jinja2.sandbox.MAX_RANGE.
const maxRange = 100000

// globals builds the outermost scope: the functions transformers and jinja2
// provide, then the context's variables.
func (e *evaluator) globals(c Context) (*scope, error) {
	g := newScope(nil)
	e.now = c.Now
	if e.now.IsZero() {
		e.now = time.Now()
	}
	for name, fn := range builtins {
		g.set(name, &builtin{name: name, fn: fn})
	}
	msgs := make([]Value, len(c.Messages))
	for i, m := range c.Messages {
		v, err := messageValue(m)
		if err != nil {
			return nil, err
		}
		msgs[i] = v
	}
	g.set("messages", newList(msgs))
	g.set("tools", nil)
	if c.Tools != nil {
		tools, err := toValue(c.Tools, 0)
		if err != nil {
			return nil, err
		}
		g.set("tools", tools)
	}
	g.set("documents", nil)
	g.set("add_generation_prompt", c.AddGenerationPrompt)
	if c.BOSToken != nil {
		g.set("bos_token", *c.BOSToken)
	}
	if c.EOSToken != nil {
		g.set("eos_token", *c.EOSToken)
	}
	for k, v := range c.Vars {
		x, err := toValue(v, 0)
		if err != nil {
			return nil, err
		}
		g.set(k, x)
	}
	return g, nil
}

// messageValue is the dict a template sees for m.
func messageValue(m Message) (Value, error) {
	if m.Raw != nil {
		return toValue(m.Raw, 0)
	}
	o := Object{{"role", m.Role}, {"content", m.Content}}
	if m.Thinking != "" {
		o = append(o, Member{"reasoning_content", m.Thinking}, Member{"thinking", m.Thinking})
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]any, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			var call Object
			if tc.ID != "" {
				call = append(call, Member{"id", tc.ID})
			}
			typ := tc.Type
			if typ == "" {
				typ = "function"
			}
			args := tc.Arguments
			if args == nil {
				args = Object{}
			}
			call = append(call, Member{"type", typ}, Member{"function", Object{{"name", tc.Name}, {"arguments", args}}})
			calls[i] = call
		}
		o = append(o, Member{"tool_calls", calls})
	}
	if m.ToolCallID != "" {
		o = append(o, Member{"tool_call_id", m.ToolCallID})
	}
	if m.ToolName != "" {
		o = append(o, Member{"name", m.ToolName})
	}
	o = append(o, m.Extra...)
	return toValue(o, 0)
}

type builtinFn = func(e *evaluator, args []Value, kw *kwargs) (Value, error)

var builtins = map[string]builtinFn{
	"range":           bRange,
	"namespace":       bNamespace,
	"dict":            bDict,
	"raise_exception": bRaise,
	"strftime_now":    bStrftimeNow,
}

func bRange(e *evaluator, args []Value, kw *kwargs) (Value, error) {
	if kw.len() > 0 {
		return nil, typeErrorf("range() takes no keyword arguments")
	}
	nums := make([]int64, len(args))
	for i, a := range args {
		n, ok := asInt(a)
		if !ok {
			return nil, typeErrorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		nums[i] = n
	}
	start, stop, step := int64(0), int64(0), int64(1)
	switch len(nums) {
	case 1:
		stop = nums[0]
	case 2:
		start, stop = nums[0], nums[1]
	case 3:
		start, stop, step = nums[0], nums[1], nums[2]
	default:
		return nil, typeErrorf("range expected at most 3 arguments, got %d", len(nums))
	}
	if step == 0 {
		return nil, typeErrorf("range() arg 3 must not be zero")
	}
	var n int64
	switch {
	case step > 0 && stop > start:
		n = (stop - start + step - 1) / step
	case step < 0 && stop < start:
		n = (start - stop - step - 1) / -step
	}
	if n > maxRange || n < 0 {
		return nil, &Error{Msg: fmt.Sprintf("Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).", maxRange), kind: ErrLimit}
	}
	if err := e.chargeItems(int(n)); err != nil {
		return nil, err
	}
	items := make([]Value, n)
	for i := range items {
		items[i] = start + int64(i)*step
	}
	rng := fmt.Sprintf("range(%d, %d)", start, stop)
	if step != 1 {
		rng = fmt.Sprintf("range(%d, %d, %d)", start, stop, step)
	}
	return &list{items: items, rng: rng}, nil
}

// dictFromArgs is dict(mapping_or_pairs, **kw).
func dictFromArgs(e *evaluator, fname string, args []Value, kw *kwargs) (*dict, error) {
	d := newDict()
	if len(args) > 1 {
		return nil, typeErrorf("%s expected at most 1 argument, got %d", fname, len(args))
	}
	if len(args) == 1 {
		switch a := args[0].(type) {
		case *dict:
			for i, k := range a.keys {
				_ = d.set(k, a.vals[i])
			}
		default:
			items, err := e.iterate(a)
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				pair, ok := it.(*list)
				if !ok || len(pair.items) != 2 {
					return nil, typeErrorf("dictionary update sequence element has wrong length")
				}
				if err := d.set(pair.items[0], pair.items[1]); err != nil {
					return nil, err
				}
			}
		}
	}
	for i, n := range kw.names {
		_ = d.set(n, kw.vals[i])
	}
	return d, nil
}

func bNamespace(e *evaluator, args []Value, kw *kwargs) (Value, error) {
	d, err := dictFromArgs(e, "namespace", args, kw)
	if err != nil {
		return nil, err
	}
	return &namespace{attrs: d}, nil
}

func bDict(e *evaluator, args []Value, kw *kwargs) (Value, error) {
	return dictFromArgs(e, "dict", args, kw)
}

func bRaise(e *evaluator, args []Value, kw *kwargs) (Value, error) {
	msg := ""
	if len(args) > 0 {
		msg = str(args[0])
	}
	return nil, &Error{Msg: msg, kind: ErrRaised}
}

func bStrftimeNow(e *evaluator, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("strftime_now", args, kw, "format")
	if err != nil {
		return nil, err
	}
	f, ok := a[0].(string)
	if !ok {
		return nil, typeErrorf("strftime() argument 1 must be str, not %s", typeName(a[0]))
	}
	if err := e.charge(32 * len(f)); err != nil {
		return nil, err
	}
	return strftime(e.now, f), nil
}
