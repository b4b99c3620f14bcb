package template

import "strings"

// testFunc is a Jinja test: v is name(args).
type testFunc func(e *evaluator, v Value, args []Value) (bool, error)

// tests are jinja2's built-in tests.
var tests map[string]testFunc

func init() {
	tests = map[string]testFunc{
		"boolean":     isType(func(v Value) bool { _, ok := v.(bool); return ok }),
		"callable":    isType(func(v Value) bool { return isCallable(v) }),
		"defined":     isType(func(v Value) bool { _, ok := v.(*undefined); return !ok }),
		"undefined":   isType(func(v Value) bool { _, ok := v.(*undefined); return ok }),
		"none":        isType(func(v Value) bool { return v == nil }),
		"true":        isType(func(v Value) bool { b, ok := v.(bool); return ok && b }),
		"false":       isType(func(v Value) bool { b, ok := v.(bool); return ok && !b }),
		"string":      isType(func(v Value) bool { _, ok := v.(string); return ok }),
		"mapping":     isType(func(v Value) bool { _, ok := v.(*dict); return ok }),
		"float":       isType(func(v Value) bool { _, ok := v.(float64); return ok }),
		"integer":     isType(func(v Value) bool { _, ok := v.(int64); return ok }),
		"number":      isType(func(v Value) bool { _, _, _, ok := asNumber(v); return ok }),
		"escaped":     isType(func(v Value) bool { return false }),
		"iterable":    isType(isIterable),
		"sequence":    isType(isSequence),
		"lower":       strTest("islower"),
		"upper":       strTest("isupper"),
		"odd":         parity(1),
		"even":        parity(0),
		"divisibleby": tDivisibleBy,
		"eq":          compareTest("=="),
		"==":          compareTest("=="),
		"equalto":     compareTest("=="),
		"ne":          compareTest("!="),
		"!=":          compareTest("!="),
		"lt":          compareTest("<"),
		"<":           compareTest("<"),
		"lessthan":    compareTest("<"),
		"le":          compareTest("<="),
		"<=":          compareTest("<="),
		"gt":          compareTest(">"),
		">":           compareTest(">"),
		"greaterthan": compareTest(">"),
		"ge":          compareTest(">="),
		">=":          compareTest(">="),
		"in":          compareTest("in"),
		"sameas":      tSameAs,
		"filter": func(e *evaluator, v Value, args []Value) (bool, error) {
			s, ok := v.(string)
			return ok && filters[s] != nil, nil
		},
		"test": func(e *evaluator, v Value, args []Value) (bool, error) {
			s, ok := v.(string)
			return ok && tests[s] != nil, nil
		},
	}
	for _, name := range []string{"boolean", "callable", "defined", "undefined", "none", "true", "false",
		"string", "mapping", "float", "integer", "number", "escaped", "iterable", "sequence", "lower",
		"upper", "odd", "even"} {
		tests[name] = oneArg(name, tests[name])
	}
}

func (e *evaluator) evalTest(t *testExpr, s *scope) (Value, error) {
	if t.fn == nil {
		return nil, &Error{Msg: "No test named " + reprString(t.name) + " found.", kind: ErrType}
	}
	v, err := e.eval(t.arg, s)
	if err != nil {
		return nil, err
	}
	args, kw, err := e.evalArgs(t.args, s)
	if err != nil {
		return nil, err
	}
	if kw.len() > 0 {
		return nil, typeErrorf("%s() got an unexpected keyword argument '%s'", t.name, kw.names[0])
	}
	ok, err := t.fn(e, v, args)
	return ok != t.negate, err
}

func isType(pred func(Value) bool) testFunc {
	return func(e *evaluator, v Value, args []Value) (bool, error) { return pred(v), nil }
}

// oneArg wraps the tests that take no argument besides the value.
func oneArg(name string, t testFunc) testFunc {
	return func(e *evaluator, v Value, args []Value) (bool, error) {
		if len(args) > 0 {
			if name == "callable" {
				return false, typeErrorf("callable() takes exactly one argument (%d given)", len(args)+1)
			}
			return false, typeErrorf("test_%s() takes 1 positional argument but %d were given", name, len(args)+1)
		}
		return t(e, v, args)
	}
}

func strTest(pred string) testFunc {
	return func(e *evaluator, v Value, args []Value) (bool, error) {
		s, err := e.strChecked(v)
		return strPredicate(s, pred), err
	}
}

func isCallable(v Value) bool {
	switch v := v.(type) {
	case *macro, *builtin, *undefined:
		return true
	case *loopState:
		return v.recurse != nil
	}
	return false
}

// isIterable is Python's "iter(v) works"; an undefined iterates (as empty).
func isIterable(v Value) bool {
	switch v.(type) {
	case string, *list, *dict, *undefined:
		return true
	}
	return false
}

// isSequence is "len(v) and v[...] work".
func isSequence(v Value) bool {
	switch v.(type) {
	case string, *list, *dict:
		return true
	}
	return false
}

func parity(rem int64) testFunc {
	return func(e *evaluator, v Value, args []Value) (bool, error) {
		if err := firstUndefined(v); err != nil {
			return false, err
		}
		i, ok := asInt(v)
		if !ok {
			if f, ok := v.(float64); ok {
				r, err := numOp("%", f, 0, true, 2, 2, false)
				return err == nil && r.(float64) == float64(rem), err
			}
			return false, typeErrorf("unsupported operand type(s) for %%: '%s' and 'int'", typeName(v))
		}
		return ((i%2)+2)%2 == rem, nil
	}
}

func tDivisibleBy(e *evaluator, v Value, args []Value) (bool, error) {
	if len(args) != 1 {
		return false, typeErrorf("divisibleby() takes 2 positional arguments but %d were given", len(args)+1)
	}
	r, err := e.binop("%", v, args[0])
	if err != nil {
		return false, err
	}
	return e.equal(r, int64(0), 0)
}

func compareTest(op string) testFunc {
	return func(e *evaluator, v Value, args []Value) (bool, error) {
		if len(args) != 1 {
			return false, typeErrorf("test takes 2 positional arguments but %d were given", len(args)+1)
		}
		return e.compareOp(op, v, args[0])
	}
}

// tSameAs is Python's "is": identity for containers, value for the
// immutable scalars Python shares (None, booleans, small ints, strings).
func tSameAs(e *evaluator, v Value, args []Value) (bool, error) {
	if len(args) != 1 {
		return false, typeErrorf("sameas() takes 2 positional arguments but %d were given", len(args)+1)
	}
	o := args[0]
	switch v := v.(type) {
	case nil:
		return o == nil, nil
	case bool:
		b, ok := o.(bool)
		return ok && b == v, nil
	case int64:
		i, ok := o.(int64)
		return ok && i == v && v >= -5 && v <= 256, nil
	case string:
		s, ok := o.(string)
		return ok && strings.Compare(s, v) == 0, nil
	case float64, *undefined:
		return false, nil
	}
	return v == o, nil
}
