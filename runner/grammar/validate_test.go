package grammar

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"unicode/utf8"
)

// validate checks a JSON text against a schema of the supported subset. It
// is the tests' oracle: written from JSON Schema's rules, sharing nothing
// with the compiler but the ordered decoder, and stricter than JSON Schema
// in the two ways the grammar is: properties in schema order, and no
// additional properties unless additionalProperties says so.
func validate(schema, text []byte) error {
	root, err := parseValue(context.Background(), schema)
	if err != nil {
		return err
	}
	v, err := parseValue(context.Background(), text)
	if err != nil {
		return err
	}
	return validValue(root, root, v, "$")
}

func validValue(root, s, v *value, at string) error {
	if s.kind == 't' {
		return nil
	}
	if nb := s.get("nullable"); nb != nil && nb.kind == 't' && v.kind == 'n' {
		return nil
	}
	if r := s.get("$ref"); r != nil {
		target, err := resolve(root, r.text)
		if err != nil {
			return err
		}
		return validValue(root, target, v, at)
	}
	if all := s.get("allOf"); all != nil {
		return validValue(root, all.elems[0], v, at)
	}
	for _, comb := range []string{"anyOf", "oneOf"} {
		if alts := s.get(comb); alts != nil {
			for _, a := range alts.elems {
				if validValue(root, a, v, at) == nil {
					return nil
				}
			}
			return fmt.Errorf("%s: matches no %s alternative", at, comb)
		}
	}
	text := v.appendJSON(nil)
	if c := s.get("const"); c != nil && !bytes.Equal(c.appendJSON(nil), text) {
		return fmt.Errorf("%s: %s is not the const", at, text)
	}
	if e := s.get("enum"); e != nil && !slices.ContainsFunc(e.elems, func(x *value) bool { return bytes.Equal(x.appendJSON(nil), text) }) {
		return fmt.Errorf("%s: %s is not in the enum", at, text)
	}
	if t := s.get("type"); t != nil {
		types := []*value{t}
		if t.kind == '[' {
			types = t.elems
		}
		if !slices.ContainsFunc(types, func(x *value) bool { return v.is(x.text) }) {
			return fmt.Errorf("%s: %s is not of type %s", at, text, t.appendJSON(nil))
		}
	}
	if s.get("enum") != nil || s.get("const") != nil {
		return nil // the listed values are the schema's own: nothing else is checked
	}
	switch v.kind {
	case '{':
		return validObject(root, s, v, at)
	case '[':
		if n, ok := intKeyword(s, "minItems"); ok && len(v.elems) < n {
			return fmt.Errorf("%s: %d items, fewer than minItems", at, len(v.elems))
		}
		if n, ok := intKeyword(s, "maxItems"); ok && len(v.elems) > n {
			return fmt.Errorf("%s: %d items, more than maxItems", at, len(v.elems))
		}
		if items := s.get("items"); items != nil {
			for i, e := range v.elems {
				if err := validValue(root, items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case '"':
		n := utf8.RuneCountInString(v.text)
		if lo, ok := intKeyword(s, "minLength"); ok && n < lo {
			return fmt.Errorf("%s: %d characters, fewer than minLength", at, n)
		}
		if hi, ok := intKeyword(s, "maxLength"); ok && n > hi {
			return fmt.Errorf("%s: %d characters, more than maxLength", at, n)
		}
	}
	return nil
}

func validObject(root, s, v *value, at string) error {
	props := s.get("properties")
	extra := s.get("additionalProperties")
	last := -1 // schema index of the previous key
	for i, k := range v.keys {
		j := -1
		if props != nil {
			j = slices.Index(props.keys, k)
		}
		sub := extra
		switch {
		case j >= 0:
			if j <= last {
				return fmt.Errorf("%s: property %q out of schema order", at, k)
			}
			last, sub = j, props.elems[j]
		case props != nil && len(props.keys) > 0 && (extra == nil || extra.kind == 'f'):
			return fmt.Errorf("%s: additional property %q", at, k)
		case extra != nil && extra.kind == 'f':
			return fmt.Errorf("%s: additional property %q", at, k)
		case sub == nil:
			continue
		}
		if err := validValue(root, sub, v.elems[i], at+"."+k); err != nil {
			return err
		}
	}
	if r := s.get("required"); r != nil {
		for _, name := range r.elems {
			if !slices.Contains(v.keys, name.text) {
				return fmt.Errorf("%s: required property %q missing", at, name.text)
			}
		}
	}
	return nil
}

func intKeyword(s *value, key string) (int, bool) {
	v := s.get(key)
	if v == nil {
		return 0, false
	}
	var n int
	fmt.Sscan(v.text, &n)
	return n, true
}
