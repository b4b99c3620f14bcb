package template

import (
	"slices"
	"strconv"
	"strings"
)

// Filters over sequences: map, select and friends, sort, unique, min, max,
// sum, batch, dictsort.

// attrGetter is jinja2's make_attrgetter: "a.b.0" looks up a, then b, then
// item 0, each as x[part].
func (e *evaluator) attrGetter(attr Value) func(Value) (Value, error) {
	var parts []Value
	if s, ok := attr.(string); ok {
		for _, p := range strings.Split(s, ".") {
			if i, err := strconv.ParseInt(p, 10, 64); err == nil {
				parts = append(parts, i)
			} else {
				parts = append(parts, p)
			}
		}
	} else {
		parts = []Value{attr}
	}
	return func(v Value) (Value, error) {
		for _, p := range parts {
			var err error
			if v, err = e.getitem(v, p); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
}

// mapAttr replaces each item by its attribute attr (def where undefined, if given).
func (e *evaluator) mapAttr(items []Value, attr, def Value) ([]Value, error) {
	get := e.attrGetter(attr)
	out := make([]Value, len(items))
	for i, it := range items {
		if err := e.step(); err != nil {
			return nil, err
		}
		v, err := get(it)
		if err != nil {
			return nil, err
		}
		if _, ok := v.(*undefined); ok && given(def) {
			v = def
		}
		out[i] = v
	}
	return out, nil
}

func fMap(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	if !truthy(v) {
		return newList(nil), nil // jinja2 maps "if value:" only
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if attr, ok := kw.take("attribute"); ok {
		def, ok := kw.take("default")
		if !ok {
			def = missing
		}
		if kw.len() > 0 {
			return nil, typeErrorf("Unexpected keyword argument %s", reprString(kw.names[0]))
		}
		out, err := e.mapAttr(items, attr, def)
		return newList(out), err
	}
	if len(args) == 0 {
		return nil, typeErrorf("map requires a filter argument")
	}
	name, _ := args[0].(string)
	f := filters[name]
	if f == nil {
		return nil, typeErrorf("No filter named %s.", reprString(name))
	}
	out := make([]Value, len(items))
	for i, it := range items {
		if err := e.step(); err != nil {
			return nil, err
		}
		if out[i], err = f(e, it, args[1:], kw); err != nil {
			return nil, err
		}
	}
	return newList(out), nil
}

// fSelect makes select, reject, selectattr and rejectattr.
func fSelect(keep, byAttr bool) filterFunc {
	return func(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
		if !truthy(v) {
			return newList(nil), nil // jinja2 selects "if value:" only
		}
		items, err := e.iterate(v)
		if err != nil {
			return nil, err
		}
		get := func(x Value) (Value, error) { return x, nil }
		if byAttr {
			if len(args) == 0 {
				return nil, typeErrorf("Missing parameter for attribute name")
			}
			get = e.attrGetter(args[0])
			args = args[1:]
		}
		test := func(x Value, _ []Value) (bool, error) { return truthy(x), nil }
		if len(args) > 0 {
			name, _ := args[0].(string)
			t := tests[name]
			if t == nil {
				return nil, typeErrorf("No test named %s.", reprString(name))
			}
			test = func(x Value, a []Value) (bool, error) { return t(e, x, a) }
			args = args[1:]
		}
		var out []Value
		for _, it := range items {
			if err := e.step(); err != nil {
				return nil, err
			}
			x, err := get(it)
			if err != nil {
				return nil, err
			}
			ok, err := test(x, args)
			if err != nil {
				return nil, err
			}
			if ok == keep {
				out = append(out, it)
			}
		}
		return newList(out), nil
	}
}

// sortKey is an item with the key it sorts by.
type sortKey struct{ item, key Value }

func ignoreCase(v Value) Value {
	if s, ok := v.(string); ok {
		return strings.ToLower(s)
	}
	return v
}

// sortItems sorts stably by key, as Python's sorted does; a comparison that
// Python refuses ('<' between str and int) is an error.
func (e *evaluator) sortItems(ks []sortKey, reverse bool) error {
	if err := e.chargeItems(len(ks) * (1 + bitsLen(len(ks)))); err != nil {
		return err
	}
	var cmpErr error
	slices.SortStableFunc(ks, func(a, b sortKey) int {
		c, err := e.compare(a.key, b.key, "<", 0)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		if reverse {
			return -c
		}
		return c
	})
	return cmpErr
}

func bitsLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// keyed pairs each item with its sort key: the attribute (or comma-separated
// attributes) if given, lower-cased unless caseSensitive.
func (e *evaluator) keyed(items []Value, attr Value, caseSensitive bool) ([]sortKey, error) {
	var getters []func(Value) (Value, error)
	if s, ok := attr.(string); ok {
		for _, a := range strings.Split(s, ",") {
			getters = append(getters, e.attrGetter(a))
		}
	} else if given(attr) && attr != nil {
		getters = append(getters, e.attrGetter(attr))
	}
	ks := make([]sortKey, len(items))
	for i, it := range items {
		key := it
		if len(getters) > 0 {
			parts := make([]Value, len(getters))
			for j, g := range getters {
				v, err := g(it)
				if err != nil {
					return nil, err
				}
				if !caseSensitive {
					v = ignoreCase(v)
				}
				parts[j] = v
			}
			key = parts[0]
			if len(parts) > 1 {
				key = newList(parts)
			}
		} else if !caseSensitive {
			key = ignoreCase(it)
		}
		ks[i] = sortKey{item: it, key: key}
	}
	return ks, nil
}

func fSort(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("sort", args, kw, "reverse", "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	ks, err := e.keyed(items, a[2], truthy(or(a[1], false)))
	if err != nil {
		return nil, err
	}
	if err := e.sortItems(ks, truthy(or(a[0], false))); err != nil {
		return nil, err
	}
	out := make([]Value, len(ks))
	for i, k := range ks {
		out[i] = k.item
	}
	return newList(out), nil
}

func fDictsort(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("dictsort", args, kw, "case_sensitive", "by", "reverse")
	if err != nil {
		return nil, err
	}
	d, ok := v.(*dict)
	if !ok {
		return nil, typeErrorf("'%s' object has no attribute 'items'", typeName(v))
	}
	pos := 0
	switch or(a[1], "key") {
	case "key":
	case "value":
		pos = 1
	default:
		return nil, typeErrorf(`You can only sort by either "key" or "value"`)
	}
	items := dictItems(d).items
	ks := make([]sortKey, len(items))
	for i, it := range items {
		key := it.(*list).items[pos]
		if !truthy(or(a[0], false)) {
			key = ignoreCase(key)
		}
		ks[i] = sortKey{item: it, key: key}
	}
	if err := e.sortItems(ks, truthy(or(a[2], false))); err != nil {
		return nil, err
	}
	out := make([]Value, len(ks))
	for i, k := range ks {
		out[i] = k.item
	}
	return newList(out), nil
}

func fUnique(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("unique", args, kw, "case_sensitive", "attribute")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	ks, err := e.keyed(items, a[1], truthy(or(a[0], false)))
	if err != nil {
		return nil, err
	}
	seen := map[any]bool{}
	var out []Value
	for _, k := range ks {
		if err := e.step(); err != nil {
			return nil, err
		}
		h, ok := hashKey(k.key)
		if !ok {
			return nil, typeErrorf("unhashable type: '%s'", typeName(k.key))
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, k.item)
		}
	}
	return newList(out), nil
}

// fMinMax makes min (sign -1) and max (sign 1).
func fMinMax(sign int) filterFunc {
	return func(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
		a, err := argSpec("max", args, kw, "case_sensitive", "attribute")
		if err != nil {
			return nil, err
		}
		items, err := e.iterate(v)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return &undefined{hint: "No aggregated item, sequence was empty."}, nil
		}
		ks, err := e.keyed(items, a[1], truthy(or(a[0], false)))
		if err != nil {
			return nil, err
		}
		best := ks[0]
		for _, k := range ks[1:] {
			c, err := e.compare(k.key, best.key, map[int]string{1: ">", -1: "<"}[sign], 0)
			if err != nil {
				return nil, err
			}
			if c*sign > 0 {
				best = k
			}
		}
		return best.item, nil
	}
}

func fSum(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("sum", args, kw, "attribute", "start")
	if err != nil {
		return nil, err
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	if given(a[0]) && a[0] != nil {
		if items, err = e.mapAttr(items, a[0], missing); err != nil {
			return nil, err
		}
	}
	total := or(a[1], int64(0))
	for _, it := range items {
		if total, err = e.binop("+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func fBatch(e *evaluator, v Value, args []Value, kw *kwargs) (Value, error) {
	a, err := argSpec("batch", args, kw, "linecount", "fill_with")
	if err != nil {
		return nil, err
	}
	n, ok := asInt(a[0])
	if !ok || n <= 0 {
		return nil, typeErrorf("batch size must be a positive integer")
	}
	if n > int64(e.lim.MaxOutput) {
		return nil, limitErrorf("batch size %d exceeds the limit", n)
	}
	items, err := e.iterate(v)
	if err != nil {
		return nil, err
	}
	var out []Value
	for i := 0; i < len(items); i += int(n) {
		chunk := append([]Value(nil), items[i:min(i+int(n), len(items))]...)
		for given(a[1]) && a[1] != nil && len(chunk) < int(n) {
			chunk = append(chunk, a[1])
		}
		out = append(out, newList(chunk))
	}
	return newList(out), nil
}
