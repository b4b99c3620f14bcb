package template

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// filterFunc is a Jinja filter: v | name(args, kw).
type filterFunc func(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error)

// filters are jinja2's built-in filters, less those that no chat template
// needs (groupby, slice, pprint, urlize, random, xmlattr, ...), with
// transformers' tojson.
var filters map[string]filterFunc

func init() {
	filters = map[string]filterFunc{
		"abs": fAbs, "attr": fAttr, "batch": fBatch, "capitalize": strFilter("capitalize"),
		"center": fCenter, "count": fLength, "d": fDefault, "default": fDefault,
		"dictsort": fDictsort, "e": fEscape, "escape": fEscape, "forceescape": fEscape,
		"first": fFirst, "float": fFloat, "format": fFormat, "indent": fIndent, "int": fInt,
		"items": fItems, "join": fJoin, "last": fLast, "length": fLength, "list": fList,
		"lower": strFilter("lower"), "map": fMap, "max": fMinMax(1), "min": fMinMax(-1),
		"reject": fSelect(false, false), "rejectattr": fSelect(false, true), "replace": fReplace,
		"reverse": fReverse, "round": fRound, "safe": fString, "select": fSelect(true, false),
		"selectattr": fSelect(true, true), "sort": fSort, "string": fString, "sum": fSum,
		"title": fTitle, "tojson": fToJSON, "trim": fTrim, "truncate": fTruncate,
		"unique": fUnique, "upper": strFilter("upper"), "wordcount": fWordcount,
	}
}

// applyFilter evaluates the arguments of f and applies it to v. A filter
// reads its whole input at most a few times: a string input is charged.
func (e *evaluator) applyFilter(f *filterExpr, v Value, s *scope) (Value, error) {
	if f.fn == nil {
		return nil, &Error{Msg: "No filter named " + reprString(f.name) + " found.", kind: ErrType}
	}
	if sv, ok := v.(string); ok {
		if err := e.chargeRead(len(sv)); err != nil {
			return nil, err
		}
	}
	args, kw, err := e.evalArgs(f.args, s)
	if err != nil {
		return nil, err
	}
	return f.fn(e, v, args, kw)
}

func strFilter(how string) filterFunc {
	return func(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
		if _, err := argSpec(how, args, kw); err != nil {
			return nil, err
		}
		s, err := e.strChecked(v)
		return caseMap(s, how), err
	}
}

func fString(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	return e.strChecked(v)
}

func fAbs(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	if err := firstUndefined(v); err != nil {
		return nil, err
	}
	f, i, isFloat, ok := asNumber(v)
	switch {
	case !ok:
		return nil, typeErrorf("bad operand type for abs(): '%s'", typeName(v))
	case isFloat:
		return math.Abs(f), nil
	case i == math.MinInt64:
		return nil, intOverflow()
	}
	return absInt(i), nil
}

func fAttr(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("attr", args, kw, "name")
	if err != nil {
		return nil, err
	}
	name, _ := a[0].(string)
	if u, ok := v.(*undefined); ok {
		return nil, u.err()
	}
	if m := method(v, name); m != nil {
		return m, nil
	}
	if ns, ok := v.(*namespace); ok {
		if x, ok := ns.attrs.get(name); ok {
			return x, nil
		}
	}
	return undefAttr(v, name), nil
}

func fCenter(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("center", args, kw, "width")
	if err != nil {
		return nil, err
	}
	w, ok := asInt(or(a[0], int64(80)))
	if !ok {
		return nil, typeErrorf("'%s' object cannot be interpreted as an integer", typeName(a[0]))
	}
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	return e.pad(s, w, " ", "center")
}

func fDefault(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("default", args, kw, "default_value", "boolean")
	if err != nil {
		return nil, err
	}
	if _, ok := v.(*undefined); ok || (truthy(or(a[1], false)) && !truthy(v)) {
		return or(a[0], ""), nil
	}
	return v, nil
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

func fEscape(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	if err := e.charge(6 * len(s)); err != nil {
		return nil, err
	}
	return htmlEscaper.Replace(s), nil
}

func fFirst(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefined{hint: "No first item, sequence was empty."}, nil
	}
	return items[0], nil
}

func fLast(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	if _, ok := v.(*undefined); ok {
		return &undefined{hint: "No last item, sequence was empty."}, nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return &undefined{hint: "No last item, sequence was empty."}, nil
	}
	return items[len(items)-1], nil
}

// pyInt is Python's int(string): surrounding spaces and underscores
// between digits are allowed.
func pyInt(s string, base int) (int64, bool) {
	s = strings.TrimFunc(s, isSpace)
	if strings.Contains(s, "__") || strings.HasPrefix(s, "_") || strings.HasSuffix(s, "_") {
		return 0, false
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), base, 64)
	return i, err == nil
}

func pyFloat(v Value) (float64, bool) {
	switch v := v.(type) {
	case string:
		s := strings.ToLower(strings.TrimFunc(v, isSpace))
		switch strings.TrimLeft(s, "+-") {
		case "inf", "infinity", "nan":
		default:
			if strings.ContainsAny(s, "x") || strings.HasPrefix(strings.TrimLeft(s, "+-"), "0") && len(strings.TrimLeft(s, "+-")) > 1 && !strings.ContainsAny(s, ".e") {
				return 0, false
			}
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
		return f, err == nil || f != 0
	}
	f, _, _, ok := asNumber(v)
	return f, ok
}

func fInt(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("int", args, kw, "default", "base")
	if err != nil {
		return nil, err
	}
	def := or(a[0], int64(0))
	base, _ := asInt(or(a[1], int64(10)))
	if u, ok := v.(*undefined); ok {
		return nil, u.err() // int(Undefined) raises; jinja2 catches only TypeError and ValueError
	}
	if s, ok := v.(string); ok {
		prefix := map[int64]string{2: "0b", 8: "0o", 16: "0x"}[base]
		if t := strings.TrimFunc(s, isSpace); prefix != "" && len(t) > 2 && strings.EqualFold(t[:2], prefix) {
			s = t[2:]
		}
		if i, ok := pyInt(s, int(base)); ok {
			return i, nil
		}
	} else if f, i, isFloat, ok := asNumber(v); ok {
		if !isFloat {
			return i, nil
		}
		if !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 9.2e18 {
			return int64(f), nil
		}
		return def, nil
	}
	if f, ok := pyFloat(v); ok && !math.IsNaN(f) && !math.IsInf(f, 0) && math.Abs(f) < 9.2e18 {
		return int64(f), nil
	}
	return def, nil
}

func fFloat(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("float", args, kw, "default")
	if err != nil {
		return nil, err
	}
	if u, ok := v.(*undefined); ok {
		return nil, u.err()
	}
	if f, ok := pyFloat(v); ok {
		return f, nil
	}
	return or(a[0], 0.0), nil
}

func fFormat(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	if len(args) > 0 && kw.len() > 0 {
		return nil, typeErrorf("can't handle positional and keyword arguments at the same time")
	}
	if kw.len() > 0 {
		d := newDict()
		for i, n := range kw.names {
			_ = d.set(n, kw.vals[i])
		}
		return e.percentFormat(s, d)
	}
	return e.percentFormat(s, newTuple(args))
}

func fIndent(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("indent", args, kw, "width", "first", "blank")
	if err != nil {
		return nil, err
	}
	s, ok := v.(string) // jinja2 appends "\n" to the value itself
	switch {
	case ok:
	case v == nil || isNumberValue(v) || isDict(v):
		return nil, typeErrorf("unsupported operand type(s) for +=: '%s' and 'str'", typeName(v))
	default:
		if u, isU := v.(*undefined); isU {
			return nil, u.err()
		}
		return nil, typeErrorf("'%s' object has no attribute 'splitlines'", typeName(v))
	}
	ind, ok := or(a[0], int64(4)).(string)
	if !ok {
		w, isInt := asInt(or(a[0], int64(4)))
		if !isInt {
			return nil, typeErrorf("can't multiply sequence by non-int of type '%s'", typeName(a[0]))
		}
		if w > int64(e.lim.MaxOutput) {
			return nil, limitErrorf("indent width %d exceeds the limit", w)
		}
		ind = strings.Repeat(" ", int(max(w, 0)))
	}
	lines := splitLines(s+"\n", false)
	if err := e.charge(len(s) + len(lines)*len(ind)); err != nil {
		return nil, err
	}
	var rv string
	if truthy(or(a[2], false)) {
		rv = strings.Join(lines, "\n"+ind)
	} else {
		var b strings.Builder
		b.WriteString(lines[0])
		for _, line := range lines[1:] {
			b.WriteString("\n")
			if line != "" {
				b.WriteString(ind)
			}
			b.WriteString(line)
		}
		rv = b.String()
	}
	if truthy(or(a[1], false)) {
		rv = ind + rv
	}
	return rv, nil
}

func isNumberValue(v Value) bool { _, _, _, ok := asNumber(v); return ok }

func isDict(v Value) bool { _, ok := v.(*dict); return ok }

func fItems(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	switch d := v.(type) {
	case *undefined:
		return newList(nil), nil
	case *dict:
		if err := e.chargeItems(3 * d.len()); err != nil {
			return nil, err
		}
		return dictItems(d), nil
	}
	return nil, typeErrorf("Can only get item pairs from a mapping.")
}

func fJoin(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("join", args, kw, "d", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if given(a[1]) && a[1] != nil {
		if items, err = e.mapAttr(items, a[1], missing); err != nil {
			return nil, err
		}
	}
	sep, err := e.strChecked(or(a[0], ""))
	if err != nil {
		return nil, err
	}
	return e.join(items, sep)
}

func fLength(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	switch v := v.(type) {
	case string:
		return int64(runeLen(v)), nil
	case *list:
		return int64(len(v.items)), nil
	case *dict:
		return int64(v.len()), nil
	case *undefined:
		return int64(0), nil
	case *loopState:
		return int64(len(v.items)), nil
	}
	return nil, typeErrorf("object of type '%s' has no len()", typeName(v))
}

func fList(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if err := e.chargeItems(len(items)); err != nil {
		return nil, err
	}
	return newList(append([]Value(nil), items...)), nil
}

func fReplace(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("replace", args, kw, "old", "new", "count")
	if err != nil {
		return nil, err
	}
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	old, err := e.strChecked(a[0])
	if err != nil {
		return nil, err
	}
	repl, err := e.strChecked(a[1])
	if err != nil {
		return nil, err
	}
	return e.replace(s, old, repl, a[2])
}

func fReverse(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	if s, ok := v.(string); ok {
		r := []rune(s)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if err := e.chargeItems(len(items)); err != nil {
		return nil, err
	}
	out := make([]Value, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return newList(out), nil
}

func fRound(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("round", args, kw, "precision", "method")
	if err != nil {
		return nil, err
	}
	prec, _ := asInt(or(a[0], int64(0)))
	method := or(a[1], "common")
	if err := firstUndefined(v); err != nil {
		return nil, err
	}
	f, i, isFloat, ok := asNumber(v)
	if !ok {
		return nil, typeErrorf("type %s doesn't define __round__ method", typeName(v))
	}
	prec = max(min(prec, 300), -300)
	switch method {
	case "common":
		if !isFloat && prec >= 0 {
			return i, nil
		}
		if !isFloat {
			p := math.Pow(10, float64(-prec))
			return int64(math.RoundToEven(f/p) * p), nil
		}
		if prec >= 0 {
			r, _ := strconv.ParseFloat(strconv.FormatFloat(f, 'f', int(prec), 64), 64)
			return r, nil
		}
		p := math.Pow(10, float64(-prec))
		return math.RoundToEven(f/p) * p, nil
	case "floor", "ceil":
		p := math.Pow(10, float64(prec))
		if method == "floor" {
			return math.Floor(f*p) / p, nil
		}
		return math.Ceil(f*p) / p, nil
	}
	return nil, typeErrorf("method must be common, ceil or floor")
}

var titleSplit = regexp.MustCompile(`[-\s({\[<]+`)

// fTitle is jinja2's title: each word (split at spaces, dashes and opening
// brackets) gets its first character upper-cased and the rest lower-cased.
func fTitle(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	last := 0
	word := func(w string) {
		for i, r := range w {
			if i == 0 {
				b.WriteString(caseMap(string(r), "upper"))
			} else {
				b.WriteString(caseMap(w[i:], "lower"))
				return
			}
		}
	}
	for _, m := range titleSplit.FindAllStringIndex(s, -1) {
		word(s[last:m[0]])
		b.WriteString(s[m[0]:m[1]])
		last = m[1]
	}
	word(s[last:])
	return b.String(), nil
}

func fTrim(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("trim", args, kw, "chars")
	if err != nil {
		return nil, err
	}
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	return pyStrip(s, a[0], true, true)
}

func fTruncate(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("truncate", args, kw, "length", "killwords", "end", "leeway")
	if err != nil {
		return nil, err
	}
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	length, _ := asInt(or(a[0], int64(255)))
	end, _ := or(a[2], "...").(string)
	leeway, _ := asInt(or(a[3], int64(5)))
	if a[3] == nil {
		leeway = 5
	}
	if length < int64(runeLen(end)) {
		return nil, typeErrorf("expected length >= %d, got %d", runeLen(end), length)
	}
	r := []rune(s)
	if int64(len(r)) <= length+leeway {
		return s, nil
	}
	cut := string(r[:length-int64(runeLen(end))])
	if truthy(or(a[1], false)) {
		return cut + end, nil
	}
	if i := strings.LastIndex(cut, " "); i >= 0 {
		cut = cut[:i]
	}
	return cut + end, nil
}

func fWordcount(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	s, err := e.strChecked(v)
	if err != nil {
		return nil, err
	}
	n, in := int64(0), false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.Is(unicode.Mn, r)
		if w && !in {
			n++
		}
		in = w
	}
	return n, nil
}

func fToJSON(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("tojson", args, kw, "ensure_ascii", "indent", "separators", "sort_keys")
	if err != nil {
		return nil, err
	}
	return e.toJSON(v, jsonOptions{
		ensureASCII: truthy(or(a[0], false)),
		indent:      or(a[1], nil),
		separators:  or(a[2], nil),
		sortKeys:    truthy(or(a[3], false)),
	})
}
