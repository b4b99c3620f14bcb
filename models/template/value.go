package template

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Value is a template value. The dynamic types are those of Python as Jinja
// sees them:
//
//	nil            None
//	bool           bool
//	int64          int (an overflow is an error, not a bignum)
//	float64        float
//	string         str (indexed and measured in code points, as Python does)
//	*list          list, or tuple when tuple is set
//	*dict          dict, keys in insertion order
//	*namespace     the object namespace() returns; the only mutable value
//	*undefined     Jinja's Undefined
//	*builtin       a global function, a bound method, or loop(...) of a recursive loop
//	*macro         a macro (or caller) bound to the scope it was defined in
//	*loopState     the loop variable
type Value = any

// list is a Python list or tuple. Templates cannot change one (the sandbox
// refuses append and friends), so lists are shared freely.
type list struct {
	items []Value
	tuple bool
	rng   string // for what range() returns: how Python prints it, "range(0, 3)"
}

func newList(items []Value) *list  { return &list{items: items} }
func newTuple(items []Value) *list { return &list{items: items, tuple: true} }

// dict is a Python dict: insertion-ordered, with keys hashed as Python does
// (1, 1.0 and True are the same key).
type dict struct {
	keys  []Value
	vals  []Value
	index map[any]int // hashKey(key) -> position
}

func newDict() *dict { return &dict{index: map[any]int{}} }

type noneKey struct{}

// hashKey maps a key to a comparable Go value; ok is false for an unhashable key.
func hashKey(k Value) (any, bool) {
	switch k := k.(type) {
	case nil:
		return noneKey{}, true
	case bool:
		if k {
			return int64(1), true
		}
		return int64(0), true
	case int64, string:
		return k, true
	case float64:
		if k == math.Trunc(k) && math.Abs(k) < 1<<62 {
			return int64(k), true
		}
		return k, true
	}
	return nil, false
}

func (d *dict) get(k Value) (Value, bool) {
	h, ok := hashKey(k)
	if !ok {
		return nil, false
	}
	i, ok := d.index[h]
	if !ok {
		return nil, false
	}
	return d.vals[i], true
}

// set inserts or replaces; a replaced key keeps its first spelling, as in Python.
func (d *dict) set(k, v Value) error {
	h, ok := hashKey(k)
	if !ok {
		return typeErrorf("unhashable type: '%s'", typeName(k))
	}
	if i, ok := d.index[h]; ok {
		d.vals[i] = v
		return nil
	}
	d.index[h] = len(d.keys)
	d.keys = append(d.keys, k)
	d.vals = append(d.vals, v)
	return nil
}

func (d *dict) len() int { return len(d.keys) }

// namespace is what namespace(...) returns: attributes that {% set ns.x = ... %}
// may change from inside loops.
type namespace struct{ attrs *dict }

// undefined is Jinja's default Undefined: it prints as "", iterates as empty,
// is false, and raises on arithmetic, attribute access and calls.
type undefined struct {
	name   Value // the variable, attribute or item that was missing
	obj    Value // the object it was looked up on, when hasObj
	hasObj bool
	hint   string // a message that replaces the generated one
}

func undef(name string) *undefined { return &undefined{name: name} }

func undefAttr(obj, name Value) *undefined { return &undefined{name: name, obj: obj, hasObj: true} }

// message is jinja2.Undefined._undefined_message.
func (u *undefined) message() string {
	switch {
	case u.hint != "":
		return u.hint
	case !u.hasObj:
		return reprString(str(u.name)) + " is undefined"
	}
	if _, ok := u.name.(string); !ok {
		return objectTypeRepr(u.obj) + " has no element " + repr(u.name)
	}
	return reprString(objectTypeRepr(u.obj)) + " has no attribute " + repr(u.name)
}

func (u *undefined) err() error { return &Error{Msg: u.message(), kind: ErrUndefined} }

func objectTypeRepr(v Value) string {
	if v == nil {
		return "None"
	}
	switch v.(type) {
	case *namespace:
		return "jinja2.utils.Namespace object"
	case *macro:
		return "jinja2.runtime.Macro object"
	case *loopState:
		return "jinja2.runtime.LoopContext object"
	}
	return typeName(v) + " object"
}

// typeName is Python's type(v).__name__.
func typeName(v Value) string {
	switch v := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case *list:
		switch {
		case v.tuple:
			return "tuple"
		case v.rng != "":
			return "range"
		}
		return "list"
	case *dict:
		return "dict"
	case *namespace:
		return "Namespace"
	case *undefined:
		return "Undefined"
	case *macro:
		return "Macro"
	case *loopState:
		return "LoopContext"
	case *builtin:
		return "builtin_function_or_method"
	}
	return fmt.Sprintf("%T", v)
}

// truthy is Python's bool(v).
func truthy(v Value) bool {
	switch v := v.(type) {
	case nil, *undefined:
		return false
	case bool:
		return v
	case int64:
		return v != 0
	case float64:
		return v != 0
	case string:
		return v != ""
	case *list:
		return len(v.items) > 0
	case *dict:
		return v.len() > 0
	}
	return true
}

// maxValueDepth bounds recursion through nested values (printing, JSON,
// comparison), where Python would raise RecursionError.
const maxValueDepth = 500

func errTooDeep() error {
	return &Error{Msg: "maximum recursion depth exceeded while walking a nested value", kind: ErrLimit}
}

// smallRepr bounds str and repr where no evaluator is at hand (error
// messages): longer results are cut to "...".
const smallRepr = 1 << 12

// str is Python's str(v) as Jinja prints it, for messages: an undefined
// prints as "", and a long result is cut short.
func str(v Value) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	if err := writeRepr(&b, v, false, 0, smallRepr); err != nil {
		return b.String() + "..."
	}
	return b.String()
}

// repr is Python's repr(v), for messages.
func repr(v Value) string {
	var b strings.Builder
	if err := writeRepr(&b, v, true, 0, smallRepr); err != nil {
		return b.String() + "..."
	}
	return b.String()
}

// strChecked is str(v) for output and string building: a result over
// MaxOutput is an error, and its bytes are charged.
func (e *evaluator) strChecked(v Value) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	var b strings.Builder
	if err := writeRepr(&b, v, false, 0, e.lim.MaxOutput); err != nil {
		return "", err
	}
	return b.String(), e.charge(b.Len())
}

// reprChecked is repr(v) with strChecked's bounds.
func (e *evaluator) reprChecked(v Value) (string, error) {
	var b strings.Builder
	if err := writeRepr(&b, v, true, 0, e.lim.MaxOutput); err != nil {
		return "", err
	}
	return b.String(), e.charge(b.Len())
}

// writeRepr writes str(v) (repr(v) if quote) and fails once b passes limit
// bytes: a list holding one big list many times prints exponentially large.
func writeRepr(b *strings.Builder, v Value, quote bool, depth, limit int) error {
	if depth > maxValueDepth {
		return errTooDeep()
	}
	if b.Len() > limit {
		return limitErrorf("printing a value takes more than %d bytes", limit)
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		b.WriteString(formatFloat(v))
	case string:
		if quote {
			b.WriteString(reprString(v))
		} else {
			b.WriteString(v)
		}
	case *undefined:
		if quote {
			b.WriteString("Undefined")
		}
	case *list:
		if v.rng != "" {
			b.WriteString(v.rng)
			return nil
		}
		open, close := "[", "]"
		if v.tuple {
			open, close = "(", ")"
		}
		b.WriteString(open)
		for i, x := range v.items {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := writeRepr(b, x, true, depth+1, limit); err != nil {
				return err
			}
		}
		if v.tuple && len(v.items) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	case *dict:
		return writeDict(b, v, depth, limit)
	case *namespace:
		b.WriteString("<Namespace ")
		if err := writeDict(b, v.attrs, depth, limit); err != nil {
			return err
		}
		b.WriteString(">")
	case *macro:
		b.WriteString("<Macro " + reprString(v.name) + ">")
	case *loopState:
		fmt.Fprintf(b, "<LoopContext %d/%d>", v.index+1, len(v.items))
	case *builtin:
		b.WriteString("<built-in function " + v.name + ">")
	default:
		fmt.Fprintf(b, "%v", v)
	}
	return nil
}

func writeDict(b *strings.Builder, d *dict, depth, limit int) error {
	b.WriteString("{")
	for i, k := range d.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := writeRepr(b, k, true, depth+1, limit); err != nil {
			return err
		}
		b.WriteString(": ")
		if err := writeRepr(b, d.vals[i], true, depth+1, limit); err != nil {
			return err
		}
	}
	b.WriteString("}")
	return nil
}

// formatFloat is Python's repr(float): the shortest digits that round-trip,
// positional for exponents in [-4, 16), scientific otherwise.
func formatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±dd
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp >= -4 && exp < 16 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".") {
			s += ".0"
		}
		return s
	}
	sign := "+"
	if exp < 0 {
		sign, exp = "-", -exp
	}
	return fmt.Sprintf("%se%s%02d", mant, sign, exp)
}

// reprString is Python's repr(str).
func reprString(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError:
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && !unicode.IsPrint(r)):
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r < 0x10000:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// isSpace is Python's str.isspace for one code point.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// runeLen is len(s) in Python: code points.
func runeLen(s string) int { return utf8.RuneCountInString(s) }

// asInt reads an int (bool counts, as in Python).
func asInt(v Value) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// asNumber reads an int or a float; isFloat says which.
func asNumber(v Value) (f float64, i int64, isFloat, ok bool) {
	switch v := v.(type) {
	case float64:
		return v, 0, true, true
	case int64:
		return float64(v), v, false, true
	case bool:
		if v {
			return 1, 1, false, true
		}
		return 0, 0, false, true
	}
	return 0, 0, false, false
}

// equal is Python's ==. Each value visited costs a step: comparing lists
// that hold one list many times takes exponential time otherwise.
func (e *evaluator) equal(a, b Value, depth int) (bool, error) {
	if depth > maxValueDepth {
		return false, errTooDeep()
	}
	if err := e.step(); err != nil {
		return false, err
	}
	if af, ai, aFloat, ok := asNumber(a); ok {
		bf, bi, bFloat, ok := asNumber(b)
		if !ok {
			return false, nil
		}
		if aFloat || bFloat {
			return af == bf, nil
		}
		return ai == bi, nil
	}
	switch a := a.(type) {
	case nil:
		return b == nil, nil
	case string:
		bs, ok := b.(string)
		if ok && len(a) == len(bs) {
			if err := e.chargeRead(len(a)); err != nil {
				return false, err
			}
		}
		return ok && a == bs, nil
	case *undefined:
		_, ok := b.(*undefined)
		return ok, nil
	case *list:
		bl, ok := b.(*list)
		if !ok || bl.tuple != a.tuple || (bl.rng == "") != (a.rng == "") || len(bl.items) != len(a.items) {
			return false, nil
		}
		for i := range a.items {
			if eq, err := e.equal(a.items[i], bl.items[i], depth+1); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	case *dict:
		bd, ok := b.(*dict)
		if !ok || bd.len() != a.len() {
			return false, nil
		}
		for i, k := range a.keys {
			bv, ok := bd.get(k)
			if !ok {
				return false, nil
			}
			if eq, err := e.equal(a.vals[i], bv, depth+1); err != nil || !eq {
				return false, err
			}
		}
		return true, nil
	}
	return a == b, nil
}

// compare orders two values as Python's < does: -1, 0 or 1.
func (e *evaluator) compare(a, b Value, op string, depth int) (int, error) {
	if depth > maxValueDepth {
		return 0, errTooDeep()
	}
	if err := e.step(); err != nil {
		return 0, err
	}
	if u, ok := a.(*undefined); ok {
		return 0, u.err()
	}
	if u, ok := b.(*undefined); ok {
		return 0, u.err()
	}
	if af, ai, aFloat, ok := asNumber(a); ok {
		if bf, bi, bFloat, ok := asNumber(b); ok {
			if !aFloat && !bFloat {
				return cmp3(ai < bi, ai > bi), nil
			}
			return cmp3(af < bf, af > bf), nil
		}
	}
	switch a := a.(type) {
	case string:
		if bs, ok := b.(string); ok {
			if err := e.chargeRead(min(len(a), len(bs))); err != nil {
				return 0, err
			}
			return strings.Compare(a, bs), nil
		}
	case *list:
		if bl, ok := b.(*list); ok && bl.tuple == a.tuple {
			for i := 0; i < len(a.items) && i < len(bl.items); i++ {
				eq, err := e.equal(a.items[i], bl.items[i], depth+1)
				if err != nil {
					return 0, err
				}
				if !eq {
					return e.compare(a.items[i], bl.items[i], op, depth+1)
				}
			}
			return cmp3(len(a.items) < len(bl.items), len(a.items) > len(bl.items)), nil
		}
	}
	return 0, typeErrorf("'%s' not supported between instances of '%s' and '%s'", op, typeName(a), typeName(b))
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}
