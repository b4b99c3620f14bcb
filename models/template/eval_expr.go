package template

import (
	"fmt"
	"math"
	"math/bits"
	"strings"
)

func (e *evaluator) eval(x expr, s *scope) (Value, error) {
	if err := e.step(); err != nil {
		return nil, err
	}
	switch x := x.(type) {
	case *constExpr:
		return x.v, nil
	case *nameExpr:
		if v, ok := s.lookup(x.name); ok {
			return v, nil
		}
		return undef(x.name), nil
	case *listExpr:
		items := make([]Value, len(x.items))
		for i, it := range x.items {
			v, err := e.eval(it, s)
			if err != nil {
				return nil, err
			}
			items[i] = v
		}
		return &list{items: items, tuple: x.tuple}, nil
	case *dictExpr:
		d := newDict()
		for i := range x.keys {
			k, err := e.eval(x.keys[i], s)
			if err != nil {
				return nil, err
			}
			v, err := e.eval(x.vals[i], s)
			if err != nil {
				return nil, err
			}
			if err := d.set(k, v); err != nil {
				return nil, err
			}
		}
		return d, nil
	case *getattrExpr:
		obj, err := e.eval(x.obj, s)
		if err != nil {
			return nil, err
		}
		return e.getattr(obj, x.name)
	case *getitemExpr:
		obj, err := e.eval(x.obj, s)
		if err != nil {
			return nil, err
		}
		key, err := e.eval(x.key, s)
		if err != nil {
			return nil, err
		}
		return e.getitem(obj, key)
	case *sliceExpr:
		return e.evalSlice(x, s)
	case *callExpr:
		return e.evalCall(x, s, nil)
	case *filterExpr:
		v, err := e.eval(x.arg, s)
		if err != nil {
			return nil, err
		}
		return e.applyFilter(x, v, s)
	case *testExpr:
		return e.evalTest(x, s)
	case *binExpr:
		l, err := e.eval(x.l, s)
		if err != nil {
			return nil, err
		}
		r, err := e.eval(x.r, s)
		if err != nil {
			return nil, err
		}
		return e.binop(x.op, l, r)
	case *unaryExpr:
		v, err := e.eval(x.x, s)
		if err != nil {
			return nil, err
		}
		return unop(x.op, v)
	case *logicExpr:
		l, err := e.eval(x.l, s)
		if err != nil || truthy(l) != x.and {
			return l, err
		}
		return e.eval(x.r, s)
	case *compareExpr:
		return e.evalCompare(x, s)
	case *condExpr:
		t, err := e.eval(x.test, s)
		if err != nil {
			return nil, err
		}
		if truthy(t) {
			return e.eval(x.then, s)
		}
		if x.els == nil {
			return &undefined{hint: "the inline if-expression evaluated to false and no else section was defined."}, nil
		}
		return e.eval(x.els, s)
	}
	return nil, &Error{Msg: fmt.Sprintf("template: unknown expression %T", x), kind: ErrInternal}
}

func (e *evaluator) evalCompare(x *compareExpr, s *scope) (Value, error) {
	a, err := e.eval(x.first, s)
	if err != nil {
		return nil, err
	}
	for i, op := range x.ops {
		b, err := e.eval(x.rest[i], s)
		if err != nil {
			return nil, err
		}
		ok, err := e.compareOp(op, a, b)
		if err != nil || !ok {
			return false, err
		}
		a = b
	}
	return true, nil
}

func (e *evaluator) compareOp(op string, a, b Value) (bool, error) {
	switch op {
	case "==":
		return e.equal(a, b, 0)
	case "!=":
		eq, err := e.equal(a, b, 0)
		return !eq, err
	case "in":
		return e.contains(b, a)
	case "notin":
		in, err := e.contains(b, a)
		return !in, err
	}
	c, err := e.compare(a, b, op, 0)
	if err != nil {
		return false, err
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

// contains is Python's "x in container".
func (e *evaluator) contains(container, x Value) (bool, error) {
	switch c := container.(type) {
	case string:
		if err := e.chargeRead(len(c)); err != nil {
			return false, err
		}
		xs, ok := x.(string)
		if !ok {
			if u, isU := x.(*undefined); isU {
				return false, u.err()
			}
			return false, typeErrorf("'in <string>' requires string as left operand, not %s", typeName(x))
		}
		return strings.Contains(c, xs), nil
	case *dict:
		if _, ok := x.(*undefined); ok {
			return false, nil // Undefined hashes, and is no key
		}
		if _, ok := hashKey(x); !ok {
			return false, typeErrorf("unhashable type: '%s'", typeName(x))
		}
		_, ok := c.get(x)
		return ok, nil
	case *list:
		for _, it := range c.items {
			if err := e.step(); err != nil {
				return false, err
			}
			if eq, err := e.equal(it, x, 0); err != nil || eq {
				return eq, err
			}
		}
		return false, nil
	case *undefined:
		return false, nil
	case *namespace:
		_, ok := c.attrs.get(x)
		return ok, nil
	}
	return false, typeErrorf("argument of type '%s' is not iterable", typeName(container))
}

func firstUndefined(vs ...Value) error {
	for _, v := range vs {
		if u, ok := v.(*undefined); ok {
			return u.err()
		}
	}
	return nil
}

func unop(op string, v Value) (Value, error) {
	if op == "not" {
		return !truthy(v), nil
	}
	if err := firstUndefined(v); err != nil {
		return nil, err
	}
	f, i, isFloat, ok := asNumber(v)
	if !ok {
		return nil, typeErrorf("bad operand type for unary %s: '%s'", op, typeName(v))
	}
	switch {
	case op == "+" && isFloat:
		return f, nil
	case op == "+":
		return i, nil
	case isFloat:
		return -f, nil
	case i == math.MinInt64:
		return nil, intOverflow()
	}
	return -i, nil
}

func intOverflow() error {
	return &Error{Msg: "template: integer overflow (numbers are limited to 64 bits)", kind: ErrLimit}
}

func unsupported(op string, a, b Value) error {
	return typeErrorf("unsupported operand type(s) for %s: '%s' and '%s'", op, typeName(a), typeName(b))
}

// binop is Python's a op b for + - * / // % ** and Jinja's ~.
func (e *evaluator) binop(op string, a, b Value) (Value, error) {
	if op == "~" {
		as, err := e.strChecked(a)
		if err != nil {
			return nil, err
		}
		bs, err := e.strChecked(b)
		if err != nil {
			return nil, err
		}
		if err := e.charge(len(as) + len(bs)); err != nil {
			return nil, err
		}
		return as + bs, nil
	}
	if as, ok := a.(string); ok && op == "%" {
		return e.percentFormat(as, b) // str % x takes any x, an undefined too
	}
	if err := firstUndefined(a, b); err != nil {
		return nil, err
	}
	af, ai, aFloat, aNum := asNumber(a)
	bf, bi, bFloat, bNum := asNumber(b)
	if aNum && bNum {
		return numOp(op, af, ai, aFloat, bf, bi, bFloat)
	}
	switch op {
	case "+":
		return e.add(a, b)
	case "*":
		if aNum && !aFloat {
			return e.repeat(b, ai, a)
		}
		if bNum && !bFloat {
			return e.repeat(a, bi, b)
		}
		if _, ok := a.(string); ok {
			return nil, typeErrorf("can't multiply sequence by non-int of type '%s'", typeName(b))
		}
		if _, ok := a.(*list); ok {
			return nil, typeErrorf("can't multiply sequence by non-int of type '%s'", typeName(b))
		}
	case "%":
		if as, ok := a.(string); ok {
			return e.percentFormat(as, b)
		}
	}
	sym := op
	if op == "**" {
		sym = "** or pow()"
	}
	return nil, unsupported(sym, a, b)
}

func (e *evaluator) add(a, b Value) (Value, error) {
	switch a := a.(type) {
	case string:
		bs, ok := b.(string)
		if !ok {
			return nil, typeErrorf(`can only concatenate str (not "%s") to str`, typeName(b))
		}
		if err := e.charge(len(a) + len(bs)); err != nil {
			return nil, err
		}
		return a + bs, nil
	case *list:
		bl, ok := b.(*list)
		if a.rng != "" || (ok && bl.rng != "") {
			return nil, unsupported("+", a, b)
		}
		if !ok || bl.tuple != a.tuple {
			return nil, typeErrorf(`can only concatenate %s (not "%s") to %s`, typeName(a), typeName(b), typeName(a))
		}
		n := len(a.items) + len(bl.items)
		if err := e.chargeItems(n); err != nil {
			return nil, err
		}
		items := make([]Value, 0, n)
		return &list{items: append(append(items, a.items...), bl.items...), tuple: a.tuple}, nil
	}
	return nil, unsupported("+", a, b)
}

// repeat is seq * n for a string or list.
func (e *evaluator) repeat(seq Value, n int64, num Value) (Value, error) {
	n = max(n, 0)
	switch s := seq.(type) {
	case string:
		if n > 0 && int64(len(s)) > int64(e.lim.MaxOutput)/n {
			return nil, limitErrorf("a string of %d bytes repeated %d times exceeds the %d-byte limit", len(s), n, e.lim.MaxOutput)
		}
		if err := e.charge(len(s) * int(n)); err != nil {
			return nil, err
		}
		return strings.Repeat(s, int(n)), nil
	case *list:
		if s.rng != "" {
			return nil, unsupported("*", seq, num)
		}
		if n > 0 && int64(len(s.items)) > int64(e.lim.MaxSteps)/n {
			return nil, limitErrorf("a list of %d items repeated %d times takes more than %d steps", len(s.items), n, e.lim.MaxSteps)
		}
		if err := e.chargeItems(len(s.items) * int(n)); err != nil {
			return nil, err
		}
		items := make([]Value, 0, len(s.items)*int(n))
		for range n {
			items = append(items, s.items...)
		}
		return &list{items: items, tuple: s.tuple}, nil
	}
	return nil, unsupported("*", seq, num)
}

func numOp(op string, af float64, ai int64, aFloat bool, bf float64, bi int64, bFloat bool) (Value, error) {
	isFloat := aFloat || bFloat
	zero := func(msg string) error { return &Error{Msg: msg, kind: ErrType} }
	switch op {
	case "+", "-", "*":
		if isFloat {
			switch op {
			case "+":
				return af + bf, nil
			case "-":
				return af - bf, nil
			}
			return af * bf, nil
		}
		var r int64
		var ok bool
		switch op {
		case "+":
			r = ai + bi
			ok = (r > ai) == (bi > 0)
		case "-":
			r = ai - bi
			ok = (r < ai) == (bi > 0)
		default:
			hi, lo := bits.Mul64(uint64(absInt(ai)), uint64(absInt(bi)))
			ok = hi == 0 && lo <= math.MaxInt64 && ai != math.MinInt64 && bi != math.MinInt64
			r = ai * bi
		}
		if !ok {
			return nil, intOverflow()
		}
		return r, nil
	case "/":
		if bf == 0 {
			return nil, zero("division by zero")
		}
		return af / bf, nil
	case "//":
		if isFloat {
			if bf == 0 {
				return nil, zero("float floor division by zero")
			}
			return math.Floor(af / bf), nil
		}
		if bi == 0 {
			return nil, zero("integer division or modulo by zero")
		}
		if ai == math.MinInt64 && bi == -1 {
			return nil, intOverflow()
		}
		q := ai / bi
		if (ai%bi != 0) && ((ai < 0) != (bi < 0)) {
			q--
		}
		return q, nil
	case "%":
		if isFloat {
			if bf == 0 {
				return nil, zero("float modulo")
			}
			r := math.Mod(af, bf)
			if r != 0 && (r < 0) != (bf < 0) {
				r += bf
			}
			return r, nil
		}
		if bi == 0 {
			return nil, zero("integer modulo by zero")
		}
		if bi == -1 {
			return int64(0), nil
		}
		r := ai % bi
		if r != 0 && (r < 0) != (bi < 0) {
			r += bi
		}
		return r, nil
	case "**":
		if isFloat || bi < 0 {
			if af == 0 && bf < 0 {
				return nil, zero("0.0 cannot be raised to a negative power")
			}
			return math.Pow(af, bf), nil
		}
		return intPow(ai, bi)
	}
	return nil, &Error{Msg: "template: unknown operator " + op, kind: ErrInternal}
}

func absInt(i int64) int64 {
	if i < 0 {
		return -i
	}
	return i
}

func intPow(base, exp int64) (Value, error) {
	result := int64(1)
	for exp > 0 {
		if exp&1 == 1 {
			r, err := numOp("*", 0, result, false, 0, base, false)
			if err != nil {
				return nil, err
			}
			result = r.(int64)
		}
		exp >>= 1
		if exp > 0 {
			b, err := numOp("*", 0, base, false, 0, base, false)
			if err != nil {
				return nil, err
			}
			base = b.(int64)
		}
	}
	return result, nil
}
