package template

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// method returns obj.name bound to obj for the Python methods templates call
// on str, dict, list and tuple, or nil.
func method(obj Value, name string) *builtin {
	var fn func(e *evaluator, args []Value, kw *kwargs) (Value, error)
	switch o := obj.(type) {
	case string:
		if inner := strMethod(o, name); inner != nil {
			fn = func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
				if err := e.chargeRead(len(o)); err != nil {
					return nil, err
				}
				return inner(e, args, kw)
			}
		}
	case *dict:
		fn = dictMethod(o, name)
	case *list:
		fn = listMethod(o, name)
	}
	if fn == nil {
		return nil
	}
	return &builtin{name: name, fn: fn}
}

type methodFn = func(e *evaluator, args []Value, kw *kwargs) (Value, error)

func dictMethod(d *dict, name string) methodFn {
	switch name {
	case "items":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			if err := e.chargeItems(3 * d.len()); err != nil {
				return nil, err
			}
			return dictItems(d), nil
		}
	case "keys":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			return newList(append([]Value(nil), d.keys...)), e.chargeItems(d.len())
		}
	case "values":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			return newList(append([]Value(nil), d.vals...)), e.chargeItems(d.len())
		}
	case "get":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec("get", args, kw, "key", "default")
			if err != nil {
				return nil, err
			}
			if v, ok := d.get(a[0]); ok {
				return v, nil
			}
			return or(a[1], nil), nil
		}
	case "copy":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			if err := e.chargeItems(3 * d.len()); err != nil {
				return nil, err
			}
			c := newDict()
			for i, k := range d.keys {
				_ = c.set(k, d.vals[i])
			}
			return c, nil
		}
	}
	return nil
}

func dictItems(d *dict) *list {
	items := make([]Value, d.len())
	for i, k := range d.keys {
		items[i] = newTuple([]Value{k, d.vals[i]})
	}
	return newList(items)
}

func listMethod(l *list, name string) methodFn {
	switch name {
	case "index":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec("index", args, kw, "value")
			if err != nil {
				return nil, err
			}
			for i, it := range l.items {
				if eq, err := e.equal(it, a[0], 0); err != nil || eq {
					return int64(i), err
				}
			}
			return nil, typeErrorf("%s is not in list", repr(a[0]))
		}
	case "count":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec("count", args, kw, "value")
			if err != nil {
				return nil, err
			}
			n := int64(0)
			for _, it := range l.items {
				if eq, err := e.equal(it, a[0], 0); err != nil {
					return nil, err
				} else if eq {
					n++
				}
			}
			return n, nil
		}
	}
	return nil
}

// strArg reads an optional string argument (None counts as not given).
func strArg(v Value, what string) (string, bool, error) {
	if !given(v) || v == nil {
		return "", false, nil
	}
	s, ok := v.(string)
	if !ok {
		return "", false, typeErrorf("%s arg must be None or str", what)
	}
	return s, true, nil
}

// pyStrip is str.strip/lstrip/rstrip: whitespace, or the characters in chars.
func pyStrip(s string, chars Value, left, right bool) (string, error) {
	set, ok, err := strArg(chars, "strip")
	if err != nil {
		return "", err
	}
	cut := isSpace
	if ok {
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s, nil
}

func strMethod(s, name string) methodFn {
	switch name {
	case "strip", "lstrip", "rstrip":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "chars")
			if err != nil {
				return nil, err
			}
			return pyStrip(s, a[0], name != "rstrip", name != "lstrip")
		}
	case "split", "rsplit":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "sep", "maxsplit")
			if err != nil {
				return nil, err
			}
			n := int64(-1)
			if given(a[1]) {
				var ok bool
				if n, ok = asInt(a[1]); !ok {
					return nil, typeErrorf("'%s' object cannot be interpreted as an integer", typeName(a[1]))
				}
			}
			if err := e.chargeItems(len(s)); err != nil {
				return nil, err
			}
			parts, err := pySplit(s, a[0], int(max(min(n, 1<<30), -1)), name == "rsplit")
			if err != nil {
				return nil, err
			}
			out := make([]Value, len(parts))
			for i, p := range parts {
				out[i] = p
			}
			return newList(out), nil
		}
	case "splitlines":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "keepends")
			if err != nil {
				return nil, err
			}
			if err := e.chargeItems(len(s)); err != nil {
				return nil, err
			}
			var out []Value
			for _, line := range splitLines(s, truthy(or(a[0], false))) {
				out = append(out, line)
			}
			return newList(out), nil
		}
	case "startswith", "endswith":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "prefix")
			if err != nil {
				return nil, err
			}
			var cands []Value
			switch p := a[0].(type) {
			case string:
				cands = []Value{p}
			case *list:
				if p.tuple {
					cands = p.items
				}
			}
			if cands == nil {
				return nil, typeErrorf("%s first arg must be str or a tuple of str, not %s", name, typeName(a[0]))
			}
			for _, c := range cands {
				cs, ok := c.(string)
				if !ok {
					return nil, typeErrorf("tuple for %s must only contain str, not %s", name, typeName(c))
				}
				if (name == "startswith" && strings.HasPrefix(s, cs)) || (name == "endswith" && strings.HasSuffix(s, cs)) {
					return true, nil
				}
			}
			return false, nil
		}
	case "upper", "lower", "title", "capitalize", "swapcase", "casefold":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			if _, err := argSpec(name, args, kw); err != nil {
				return nil, err
			}
			return caseMap(s, name), nil
		}
	case "replace":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "old", "new", "count")
			if err != nil {
				return nil, err
			}
			return e.replace(s, a[0], a[1], a[2])
		}
	case "find", "rfind", "index", "rindex", "count":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "sub")
			if err != nil {
				return nil, err
			}
			sub, ok := a[0].(string)
			if !ok {
				return nil, typeErrorf("must be str, not %s", typeName(a[0]))
			}
			if name == "count" {
				return int64(countSub(s, sub)), nil
			}
			i := strings.Index(s, sub)
			if name == "rfind" || name == "rindex" {
				i = strings.LastIndex(s, sub)
			}
			if i < 0 {
				if name == "index" || name == "rindex" {
					return nil, typeErrorf("substring not found")
				}
				return int64(-1), nil
			}
			return int64(runeLen(s[:i])), nil
		}
	case "join":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "iterable")
			if err != nil {
				return nil, err
			}
			items, err := e.iterate(a[0])
			if err != nil {
				return nil, err
			}
			for _, it := range items {
				if _, ok := it.(string); !ok {
					return nil, typeErrorf("sequence item 0: expected str instance, %s found", typeName(it))
				}
			}
			return e.join(items, s)
		}
	case "isdigit", "isdecimal", "isnumeric", "isalpha", "isalnum", "isspace", "isupper", "islower":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			return strPredicate(s, name), nil
		}
	case "removeprefix", "removesuffix":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "affix")
			if err != nil {
				return nil, err
			}
			x, ok := a[0].(string)
			if !ok {
				return nil, typeErrorf("%s() argument must be str, not %s", name, typeName(a[0]))
			}
			if name == "removeprefix" {
				return strings.TrimPrefix(s, x), nil
			}
			return strings.TrimSuffix(s, x), nil
		}
	case "center", "ljust", "rjust", "zfill":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			a, err := argSpec(name, args, kw, "width", "fillchar")
			if err != nil {
				return nil, err
			}
			w, ok := asInt(a[0])
			if !ok {
				return nil, typeErrorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
			}
			fill := " "
			if name == "zfill" {
				fill = "0"
			} else if f, ok := or(a[1], " ").(string); ok && runeLen(f) == 1 {
				fill = f
			} else {
				return nil, typeErrorf("The fill character must be exactly one character long")
			}
			return e.pad(s, w, fill, name)
		}
	case "format":
		return func(e *evaluator, args []Value, kw *kwargs) (Value, error) {
			return e.strFormat(s, args, kw)
		}
	}
	return nil
}

func strPredicate(s, name string) bool {
	if s == "" {
		return false
	}
	cased := false
	for _, r := range s {
		var ok bool
		switch name {
		case "isdigit", "isdecimal", "isnumeric":
			ok = unicode.IsDigit(r) || (name == "isnumeric" && unicode.IsNumber(r))
		case "isalpha":
			ok = unicode.IsLetter(r)
		case "isalnum":
			ok = unicode.IsLetter(r) || unicode.IsNumber(r)
		case "isspace":
			ok = isSpace(r)
		case "isupper":
			ok = !unicode.IsLower(r)
			cased = cased || unicode.IsUpper(r)
		case "islower":
			ok = !unicode.IsUpper(r)
			cased = cased || unicode.IsLower(r)
		}
		if !ok {
			return false
		}
	}
	return cased || (name != "isupper" && name != "islower")
}

func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

// caseMap is str.upper, lower, title, capitalize, swapcase and casefold.
func caseMap(s, how string) string {
	switch how {
	case "upper":
		return cases.Upper(language.Und).String(s) // full mapping: ß becomes SS, as in Python
	case "lower", "casefold":
		return cases.Lower(language.Und).String(s) // final sigma, as in Python
	}
	var b strings.Builder
	prevCased := false
	for i, r := range s {
		switch how {
		case "title":
			if prevCased {
				r = unicode.ToLower(r)
			} else {
				r = unicode.ToTitle(r)
			}
			prevCased = isCased(r)
		case "capitalize":
			if i == 0 {
				r = unicode.ToTitle(r)
			} else {
				r = unicode.ToLower(r)
			}
		case "swapcase":
			if unicode.IsUpper(r) {
				r = unicode.ToLower(r)
			} else if unicode.IsLower(r) {
				r = unicode.ToUpper(r)
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

func countSub(s, sub string) int {
	if sub == "" {
		return runeLen(s) + 1
	}
	return strings.Count(s, sub)
}

// replace is str.replace with the result size checked before it is built.
func (e *evaluator) replace(s string, oldV, newV, countV Value) (Value, error) {
	old, ok1 := oldV.(string)
	repl, ok2 := newV.(string)
	if !ok1 || !ok2 {
		return nil, typeErrorf("replace() argument must be str, not %s", typeName(oldV))
	}
	n := int64(-1)
	if given(countV) && countV != nil {
		var ok bool
		if n, ok = asInt(countV); !ok {
			return nil, typeErrorf("'%s' object cannot be interpreted as an integer", typeName(countV))
		}
	}
	matches := int64(countSub(s, old))
	if n >= 0 && n < matches {
		matches = n
	}
	size := int64(len(s)) + matches*(int64(len(repl))-int64(len(old)))
	if size > int64(e.lim.MaxOutput) {
		return nil, limitErrorf("replace() would build %d bytes, over the %d-byte limit", size, e.lim.MaxOutput)
	}
	if err := e.charge(int(size)); err != nil {
		return nil, err
	}
	if n < 0 {
		return strings.ReplaceAll(s, old, repl), nil
	}
	return strings.Replace(s, old, repl, int(n)), nil
}

func (e *evaluator) pad(s string, width int64, fill, how string) (Value, error) {
	n := int64(runeLen(s))
	if width <= n {
		return s, nil
	}
	if width > int64(e.lim.MaxOutput) {
		return nil, limitErrorf("width %d exceeds the %d-byte limit", width, e.lim.MaxOutput)
	}
	if err := e.charge(int(width) * len(fill)); err != nil {
		return nil, err
	}
	total := int(width - n)
	left := 0
	switch how {
	case "rjust":
		left = total
	case "center":
		left = total / 2
		if total%2 == 1 && width%2 == 1 {
			left++
		}
	case "zfill":
		left = total
		if s != "" && (s[0] == '-' || s[0] == '+') {
			return s[:1] + strings.Repeat("0", total) + s[1:], nil
		}
	}
	return strings.Repeat(fill, left) + s + strings.Repeat(fill, total-left), nil
}

// pySplit is str.split / str.rsplit.
func pySplit(s string, sepV Value, maxsplit int, fromRight bool) ([]string, error) {
	sep, hasSep, err := strArg(sepV, "sep")
	if err != nil {
		return nil, err
	}
	if hasSep && sep == "" {
		return nil, typeErrorf("empty separator")
	}
	if hasSep {
		if maxsplit < 0 {
			return strings.Split(s, sep), nil
		}
		if !fromRight {
			return strings.SplitN(s, sep, maxsplit+1), nil
		}
		var parts []string
		for len(parts) < maxsplit {
			i := strings.LastIndex(s, sep)
			if i < 0 {
				break
			}
			parts = append(parts, s[i+len(sep):])
			s = s[:i]
		}
		parts = append(parts, s)
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		return parts, nil
	}
	fields := strings.FieldsFunc(s, isSpace)
	if maxsplit < 0 || len(fields) <= maxsplit+1 {
		if fields == nil {
			fields = []string{}
		}
		return fields, nil
	}
	// Split off maxsplit fields; the rest keeps its inner whitespace.
	if fromRight {
		rest := strings.TrimRightFunc(s, isSpace)
		var tail []string
		for range maxsplit {
			i := strings.LastIndexFunc(rest, isSpace)
			tail = append([]string{rest[i+1:]}, tail...)
			rest = strings.TrimRightFunc(rest[:i+1], isSpace)
		}
		return append([]string{rest}, tail...), nil
	}
	rest := strings.TrimLeftFunc(s, isSpace)
	var head []string
	for range maxsplit {
		i := strings.IndexFunc(rest, isSpace)
		head = append(head, rest[:i])
		rest = strings.TrimLeftFunc(rest[i:], isSpace)
	}
	return append(head, rest), nil
}

// splitLines is str.splitlines.
func splitLines(s string, keepends bool) []string {
	var out []string
	start := 0
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch r {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		default:
			continue
		}
		end := i + 1
		if r == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
			end++
		}
		if keepends {
			out = append(out, string(rs[start:end]))
		} else {
			out = append(out, string(rs[start:i]))
		}
		start = end
		i = end - 1
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

// join concatenates str(item) with sep between, the size checked first.
func (e *evaluator) join(items []Value, sep string) (Value, error) {
	size := len(sep) * max(len(items)-1, 0)
	strs := make([]string, len(items))
	for i, it := range items {
		s, err := e.strChecked(it)
		if err != nil {
			return nil, err
		}
		strs[i] = s
		size += len(s)
		if err := e.charge(len(s)); err != nil {
			return nil, err
		}
	}
	if err := e.charge(size); err != nil {
		return nil, err
	}
	return strings.Join(strs, sep), nil
}
