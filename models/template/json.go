package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Member is one key of an Object.
type Member struct {
	Key   string
	Value any
}

// Object is a JSON object that keeps its keys in document order, so that a
// template printing it with tojson writes them as the client sent them.
type Object []Member

// Get returns the value of key.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// DecodeJSON decodes one JSON value: objects become Object (key order kept;
// a repeated key keeps its first place and last value, as Python's json
// does), arrays []any, numbers int64 when integral and in range, else float64.
func DecodeJSON(data []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d)
	if err != nil {
		return nil, fmt.Errorf("template: decode JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("template: decode JSON: trailing data")
	}
	return v, nil
}

func decodeValue(d *json.Decoder) (any, error) {
	t, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := Object{}
			index := map[string]int{}
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(d)
				if err != nil {
					return nil, err
				}
				key := k.(string)
				if i, ok := index[key]; ok {
					o[i].Value = v
					continue
				}
				index[key] = len(o)
				o = append(o, Member{key, v})
			}
			_, err := d.Token()
			return o, err
		case '[':
			a := []any{}
			for d.More() {
				v, err := decodeValue(d)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := d.Token()
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if !strings.ContainsAny(string(t), ".eE") {
			if i, err := t.Int64(); err == nil {
				return i, nil
			}
		}
		return t.Float64()
	}
	return t, nil
}

// toValue converts a caller's Go value into a template value.
func toValue(v any, depth int) (Value, error) {
	if depth > maxValueDepth {
		return nil, errTooDeep()
	}
	switch v := v.(type) {
	case nil, bool, int64, float64, string:
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case float32:
		return float64(v), nil
	case json.Number:
		return DecodeJSON([]byte(v))
	case json.RawMessage:
		x, err := DecodeJSON(v)
		if err != nil {
			return nil, err
		}
		return toValue(x, depth)
	case Object:
		d := newDict()
		for _, m := range v {
			x, err := toValue(m.Value, depth+1)
			if err != nil {
				return nil, err
			}
			_ = d.set(m.Key, x)
		}
		return d, nil
	case []any:
		items := make([]Value, len(v))
		for i, x := range v {
			var err error
			if items[i], err = toValue(x, depth+1); err != nil {
				return nil, err
			}
		}
		return newList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := newDict()
		for _, k := range keys {
			x, err := toValue(v[k], depth+1)
			if err != nil {
				return nil, err
			}
			_ = d.set(k, x)
		}
		return d, nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, nil
	}
	// Anything else (structs, typed slices and maps) goes through its JSON form.
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("template: convert %T: %w", v, err)
	}
	x, err := DecodeJSON(data)
	if err != nil {
		return nil, err
	}
	return toValue(x, depth)
}

// jsonOptions are the arguments of transformers' tojson, which is
// json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
type jsonOptions struct {
	ensureASCII bool
	indent      Value // None, an int (spaces) or a string
	separators  Value // None or a pair (item, key)
	sortKeys    bool
}

type jsonWriter struct {
	e               *evaluator
	b               strings.Builder
	opt             jsonOptions
	indent          string
	hasIndent       bool
	itemSep, keySep string
	limit           int
}

func (e *evaluator) toJSON(v Value, opt jsonOptions) (Value, error) {
	w := &jsonWriter{e: e, opt: opt, itemSep: ", ", keySep: ": ", limit: e.lim.MaxOutput}
	switch ind := opt.indent.(type) {
	case nil:
	case string:
		w.indent, w.hasIndent = ind, true
	default:
		n, ok := asInt(ind)
		if !ok {
			return nil, typeErrorf("can't multiply sequence by non-int of type '%s'", typeName(ind))
		}
		if n > 1024 {
			return nil, limitErrorf("tojson indent %d is too large", n)
		}
		w.indent, w.hasIndent = strings.Repeat(" ", int(max(n, 0))), true
	}
	if w.hasIndent {
		w.itemSep = ","
	}
	if opt.separators != nil {
		l, ok := opt.separators.(*list)
		if !ok || len(l.items) != 2 {
			return nil, typeErrorf("separators must be a pair of strings")
		}
		a, ok1 := l.items[0].(string)
		b, ok2 := l.items[1].(string)
		if !ok1 || !ok2 {
			return nil, typeErrorf("separators must be a pair of strings")
		}
		w.itemSep, w.keySep = a, b
	}
	if err := w.value(v, 0); err != nil {
		return nil, err
	}
	if err := e.charge(w.b.Len()); err != nil {
		return nil, err
	}
	return w.b.String(), nil
}

func (w *jsonWriter) newline(level int) error {
	if !w.hasIndent {
		return nil
	}
	w.b.WriteByte('\n')
	for range level {
		w.b.WriteString(w.indent)
	}
	return w.check()
}

func (w *jsonWriter) check() error {
	if w.b.Len() > w.limit {
		return limitErrorf("tojson output exceeds %d bytes", w.limit)
	}
	return w.e.step()
}

func (w *jsonWriter) value(v Value, level int) error {
	if level > maxValueDepth {
		return errTooDeep()
	}
	if err := w.check(); err != nil {
		return err
	}
	switch v := v.(type) {
	case nil:
		w.b.WriteString("null")
	case bool:
		w.b.WriteString(strconv.FormatBool(v))
	case int64:
		w.b.WriteString(strconv.FormatInt(v, 10))
	case float64:
		w.b.WriteString(jsonFloat(v))
	case string:
		w.str(v)
	case *list:
		if v.rng != "" {
			return typeErrorf("Object of type range is not JSON serializable")
		}
		if len(v.items) == 0 {
			w.b.WriteString("[]")
			return nil
		}
		w.b.WriteByte('[')
		for i, x := range v.items {
			if i > 0 {
				w.b.WriteString(w.itemSep)
			}
			if err := w.newline(level + 1); err != nil {
				return err
			}
			if err := w.value(x, level+1); err != nil {
				return err
			}
		}
		if err := w.newline(level); err != nil {
			return err
		}
		w.b.WriteByte(']')
	case *dict:
		return w.object(v, level)
	default:
		return typeErrorf("Object of type %s is not JSON serializable", typeName(v))
	}
	return nil
}

func (w *jsonWriter) object(d *dict, level int) error {
	if d.len() == 0 {
		w.b.WriteString("{}")
		return nil
	}
	order := make([]int, d.len())
	for i := range order {
		order[i] = i
	}
	if w.opt.sortKeys {
		var err error
		sort.SliceStable(order, func(a, b int) bool {
			c, e := w.e.compare(d.keys[order[a]], d.keys[order[b]], "<", 0)
			if e != nil && err == nil {
				err = e
			}
			return c < 0
		})
		if err != nil {
			return err
		}
	}
	w.b.WriteByte('{')
	for n, i := range order {
		if n > 0 {
			w.b.WriteString(w.itemSep)
		}
		if err := w.newline(level + 1); err != nil {
			return err
		}
		switch k := d.keys[i].(type) {
		case string:
			w.str(k)
		case nil:
			w.str("null")
		case bool:
			w.str(strconv.FormatBool(k))
		case int64:
			w.str(strconv.FormatInt(k, 10))
		case float64:
			w.str(jsonFloat(k))
		default:
			return typeErrorf("keys must be str, int, float, bool or None, not %s", typeName(k))
		}
		w.b.WriteString(w.keySep)
		if err := w.value(d.vals[i], level+1); err != nil {
			return err
		}
	}
	if err := w.newline(level); err != nil {
		return err
	}
	w.b.WriteByte('}')
	return nil
}

func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return formatFloat(f)
}

// str writes a JSON string as Python's json module does.
func (w *jsonWriter) str(s string) {
	b := &w.b
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (w.opt.ensureASCII && r >= 0x7f):
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(b, `\u%04x`, r)
			}
		case r == utf8.RuneError:
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
