package template

import (
	"strings"
	"unicode/utf8"
)

// getattr is jinja2's x.name: an attribute (a method of str, dict or list,
// a namespace attribute, a loop property) first, then the item x[name].
func (e *evaluator) getattr(obj Value, name string) (Value, error) {
	switch o := obj.(type) {
	case *undefined:
		return nil, o.err()
	case *loopState:
		return e.loopAttr(o, name), nil
	case *namespace:
		if v, ok := o.attrs.get(name); ok {
			return v, nil
		}
		return undefAttr(obj, name), nil
	}
	if m := method(obj, name); m != nil {
		return m, nil
	}
	if unsafeMethod(obj, name) {
		return unsafeAttr(obj, name), nil
	}
	if d, ok := obj.(*dict); ok {
		if v, ok := d.get(name); ok {
			return v, nil
		}
	}
	return undefAttr(obj, name), nil
}

// getitem is jinja2's x[key]: the item first, then the attribute.
func (e *evaluator) getitem(obj, key Value) (Value, error) {
	if u, ok := obj.(*undefined); ok {
		return nil, u.err()
	}
	switch o := obj.(type) {
	case *dict:
		if v, ok := o.get(key); ok {
			return v, nil
		}
	case *list:
		if i, ok := asInt(key); ok {
			if i < 0 {
				i += int64(len(o.items))
			}
			if i >= 0 && i < int64(len(o.items)) {
				return o.items[i], nil
			}
			return undefAttr(obj, key), nil
		}
	case string:
		if err := e.chargeRead(len(o)); err != nil {
			return nil, err
		}
		if i, ok := asInt(key); ok {
			n := int64(runeLen(o))
			if i < 0 {
				i += n
			}
			if i >= 0 && i < n {
				return runeAt(o, int(i)), nil
			}
			return undefAttr(obj, key), nil
		}
	}
	if name, ok := key.(string); ok {
		return e.getattr(obj, name)
	}
	return undefAttr(obj, key), nil
}

func runeAt(s string, i int) string {
	if len(s) == utf8.RuneCountInString(s) {
		return s[i : i+1]
	}
	for _, r := range s {
		if i == 0 {
			return string(r)
		}
		i--
	}
	return ""
}

// unsafeAttr is what the immutable sandbox gives for a method that would
// change a value: calling it fails.
func unsafeAttr(obj Value, name string) *undefined {
	return &undefined{name: name, obj: obj, hasObj: true,
		hint: "access to attribute " + reprString(name) + " of " + reprString(typeName(obj)) + " object is unsafe."}
}

func unsafeMethod(obj Value, name string) bool {
	if strings.HasPrefix(name, "_") {
		return true
	}
	switch o := obj.(type) {
	case *dict:
		switch name {
		case "clear", "pop", "popitem", "setdefault", "update":
			return true
		}
	case *list:
		if o.tuple {
			return false
		}
		switch name {
		case "append", "clear", "extend", "insert", "pop", "remove", "reverse", "sort":
			return true
		}
	}
	return false
}

func (e *evaluator) loopAttr(l *loopState, name string) Value {
	n := len(l.items)
	switch name {
	case "index":
		return int64(l.index + 1)
	case "index0":
		return int64(l.index)
	case "revindex":
		return int64(n - l.index)
	case "revindex0":
		return int64(n - l.index - 1)
	case "first":
		return l.index == 0
	case "last":
		return l.index == n-1
	case "length":
		return int64(n)
	case "depth":
		return int64(l.depth)
	case "depth0":
		return int64(l.depth - 1)
	case "previtem":
		if l.index > 0 {
			return l.items[l.index-1]
		}
		return &undefined{hint: "there is no previous item"}
	case "nextitem":
		if l.index+1 < n {
			return l.items[l.index+1]
		}
		return &undefined{hint: "there is no next item"}
	case "cycle":
		return &builtin{name: "cycle", fn: func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			if len(args) == 0 {
				return nil, typeErrorf("no items for cycling given")
			}
			return args[l.index%len(args)], nil
		}}
	case "changed":
		return &builtin{name: "changed", fn: func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			now := newTuple(args)
			if l.hasLast {
				if eq, err := e.equal(now, newTuple(l.changed), 0); err != nil || eq {
					return false, err
				}
			}
			l.changed, l.hasLast = args, true
			return true, nil
		}}
	}
	return undefAttr(l, name)
}
