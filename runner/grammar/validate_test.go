package grammar

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
)

// validate checks a JSON text against a schema of the supported subset. It
// is the tests' oracle: written from JSON Schema's rules, sharing nothing
// with the compiler but the ordered decoder (patterns run in regexp2's
// ECMAScript mode, formats through the standard library's parsers), and
// stricter than JSON Schema in the two ways the grammar is: declared
// properties in schema order, and no additional properties unless
// additionalProperties says so.
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
		if n, ok := intKeyword(s, "minProperties"); ok && len(v.keys) < n {
			return fmt.Errorf("%s: %d properties, fewer than minProperties", at, len(v.keys))
		}
		if n, ok := intKeyword(s, "maxProperties"); ok && len(v.keys) > n {
			return fmt.Errorf("%s: %d properties, more than maxProperties", at, len(v.keys))
		}
		return validObject(root, s, v, at)
	case '[':
		if n, ok := intKeyword(s, "minItems"); ok && len(v.elems) < n {
			return fmt.Errorf("%s: %d items, fewer than minItems", at, len(v.elems))
		}
		if n, ok := intKeyword(s, "maxItems"); ok && len(v.elems) > n {
			return fmt.Errorf("%s: %d items, more than maxItems", at, len(v.elems))
		}
		prefix, rest := s.get("prefixItems"), s.get("items")
		if rest != nil && rest.kind == '[' {
			prefix, rest = rest, s.get("additionalItems")
		}
		for i, e := range v.elems {
			item := rest
			if prefix != nil && i < len(prefix.elems) {
				item = prefix.elems[i]
			}
			if item == nil {
				continue
			}
			if item.kind == 'f' {
				return fmt.Errorf("%s: item %d where no more are allowed", at, i)
			}
			if err := validValue(root, item, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
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
		if p := s.get("pattern"); p != nil {
			re, err := regexp2.Compile(p.text, regexp2.ECMAScript)
			if err != nil {
				return fmt.Errorf("%s: pattern %q: %v", at, p.text, err)
			}
			if ok, err := re.MatchString(v.text); err != nil || !ok {
				return fmt.Errorf("%s: %q does not match pattern %q", at, v.text, p.text)
			}
		}
		if f := s.get("format"); f != nil {
			if err := validFormat(f.text, v.text); err != nil {
				return fmt.Errorf("%s: %q is not a %s: %v", at, v.text, f.text, err)
			}
		}
	case '0':
		return validBounds(s, v, at)
	}
	return nil
}

// validFormat checks the formats the grammar enforces; others are
// annotations.
func validFormat(format, s string) error {
	switch format {
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err
	case "date-time":
		if strings.ContainsAny(s, "tz") || strings.Count(s, "T") != 1 {
			return fmt.Errorf("want an upper-case T and Z") // the spelling the grammar writes
		}
		_, err := time.Parse(time.RFC3339Nano, s)
		return err
	case "time":
		_, err := time.Parse(time.DateOnly+"T"+"15:04:05.999999999Z07:00", "2000-01-01T"+s)
		return err
	case "uuid":
		if len(s) != 36 || strings.Count(s, "-") != 4 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return fmt.Errorf("want 8-4-4-4-12 hex digits")
		}
		if strings.Trim(strings.ReplaceAll(s, "-", ""), "0123456789abcdefABCDEF") != "" {
			return fmt.Errorf("not hex")
		}
	case "email":
		a, err := mail.ParseAddress(s)
		if err != nil {
			return err
		}
		at := strings.LastIndexByte(s, '@')
		if a.Address != s || a.Name != "" || !strings.Contains(s[at:], ".") {
			return fmt.Errorf("not a bare address at a dotted domain")
		}
		for _, label := range strings.Split(s[at+1:], ".") {
			if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
				return fmt.Errorf("domain label %q", label)
			}
		}
	}
	return nil
}

// validBounds checks minimum, maximum and their exclusive forms (numbers,
// or draft 4's booleans) with exact rational arithmetic.
func validBounds(s, v *value, at string) error {
	x, ok := new(big.Rat).SetString(v.text)
	if !ok {
		return fmt.Errorf("%s: %s is not a number", at, v.text)
	}
	check := func(key string, bad func(c int) bool) error {
		b := s.get(key)
		if b == nil || b.kind != '0' {
			return nil
		}
		r, _ := new(big.Rat).SetString(b.text)
		if bad(x.Cmp(r)) {
			return fmt.Errorf("%s: %s is not within %s %s", at, v.text, key, b.text)
		}
		return nil
	}
	flag := func(key string) bool { b := s.get(key); return b != nil && b.kind == 't' }
	for _, err := range []error{
		check("minimum", func(c int) bool { return c < 0 || c == 0 && flag("exclusiveMinimum") }),
		check("maximum", func(c int) bool { return c > 0 || c == 0 && flag("exclusiveMaximum") }),
		check("exclusiveMinimum", func(c int) bool { return c <= 0 }),
		check("exclusiveMaximum", func(c int) bool { return c >= 0 }),
	} {
		if err != nil {
			return err
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
		case slices.Contains(v.keys[:i], k):
			return fmt.Errorf("%s: property %q twice", at, k)
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
