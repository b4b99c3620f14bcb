package grammar

import (
	"context"
	"errors"
	"strconv"
)

// array compiles an array schema: prefixItems (or items as a list, as
// drafts before 2020-12 wrote tuples) for the first positions, then items
// (or additionalItems beside a list) for the rest.
func (c *compiler) array(s *value, at *path) (int32, error) {
	lo, hi, err := c.bounds(s, at, "minItems", "maxItems")
	if err != nil {
		return 0, err
	}
	prefixKey, restKey := "prefixItems", "items"
	prefix := s.get("prefixItems")
	if items := s.get("items"); items != nil && items.kind == '[' {
		if prefix != nil {
			return 0, c.fail(at, "items is a list next to prefixItems: use prefixItems and an items schema")
		}
		prefix, prefixKey, restKey = items, "items", "additionalItems"
	}
	n := node{kind: kArray, child: c.anyValue(), min: lo, max: hi}
	if prefix != nil {
		if prefix.kind != '[' {
			return 0, c.fail(at, "%s is %s, want an array of schemas", prefixKey, prefix.describe())
		}
		if err := c.charge(len(prefix.elems)); err != nil {
			return 0, err
		}
		for i, e := range prefix.elems {
			item, err := c.compile(e, at.to(prefixKey+"/"+strconv.Itoa(i)))
			if err != nil {
				return 0, err
			}
			n.prefix = append(n.prefix, item)
		}
	}
	switch v := s.get(restKey); {
	case v == nil || v.kind == 't':
	case v.kind == 'f':
		n.child = -1
		if lo > int32(len(n.prefix)) {
			return 0, c.fail(at, "%s false after %d items with minItems %d matches no array", restKey, len(n.prefix), lo)
		}
		if n.max < 0 || n.max > int32(len(n.prefix)) {
			n.max = int32(len(n.prefix))
		}
	default:
		if n.child, err = c.compile(v, at.to(restKey)); err != nil {
			return 0, err
		}
	}
	return c.add(n), nil
}

// object compiles an object schema: its declared properties in schema
// order, then, if additionalProperties allows them, others (any string key
// but the declared names), all within minProperties and maxProperties.
func (c *compiler) object(s *value, at *path) (int32, error) {
	props := s.get("properties")
	if props != nil && props.kind != '{' {
		return 0, c.fail(at, "properties is %s, want an object", props.describe())
	}
	var required []bool // by property position
	if r := s.get("required"); r != nil {
		if r.kind != '[' {
			return 0, c.fail(at, "required is %s, want an array of names", r.describe())
		}
		if err := c.charge(len(r.elems)); err != nil {
			return 0, err
		}
		if props != nil {
			required = make([]bool, len(props.keys))
		}
		for _, e := range r.elems {
			if e.kind != '"' {
				return 0, c.fail(at, "required lists %s, want property names", e.describe())
			}
			i := props.find(e.text)
			if i < 0 {
				return 0, c.fail(at, "required property %q is not in properties", e.text)
			}
			required[i] = true
		}
	}
	minP, maxP, err := c.bounds(s, at, "minProperties", "maxProperties")
	if err != nil {
		return 0, err
	}
	n := node{kind: kObject, lastReq: -1, child: -1, obj: &objInfo{minP: minP, maxP: maxP}}
	var keys []string
	if props != nil {
		keys = props.keys
		if err := c.charge(len(keys)); err != nil {
			return 0, err
		}
	}
	for i, k := range keys {
		if props.find(k) != i {
			return 0, c.fail(at, "property %q is declared twice", k)
		}
		value, err := c.compile(props.elems[i], at.to("properties/"+escapePointer(k)))
		if err != nil {
			return 0, err
		}
		req := required != nil && required[i]
		n.props = append(n.props, prop{key: appendString(nil, k), value: value, required: req})
		if req {
			n.lastReq = int32(i)
		}
	}
	// window: scanning back, the next required property at or after i
	next := int32(len(n.props) - 1)
	for i := len(n.props) - 1; i >= 0; i-- {
		if required != nil && required[i] {
			next = int32(i)
		}
		n.props[i].window = next
	}
	if n.lastReq >= 0 && maxP >= 0 {
		if reqs := countTrue(required); reqs > int(maxP) {
			return 0, c.fail(at, "%d required properties, more than maxProperties %d", reqs, maxP)
		}
	}
	switch extra := s.get("additionalProperties"); {
	case extra == nil && len(keys) > 0, extra != nil && extra.kind == 'f':
	default: // true, a schema, or no properties at all
		n.free, n.child = true, c.anyValue()
		if extra != nil && extra.kind != 't' {
			if n.child, err = c.compile(extra, at.to("additionalProperties")); err != nil {
				return 0, err
			}
		}
		n.key = c.anyKey()
		if len(keys) > 0 {
			if n.key, err = c.otherKey(keys, at); err != nil {
				return 0, err
			}
		}
	}
	if !n.free && minP > int32(len(keys)) {
		return 0, c.fail(at, "minProperties %d is more than the %d properties allowed", minP, len(keys))
	}
	return c.add(n), nil
}

// otherKey compiles the key of an additional property next to declared
// ones: any string but their names.
func (c *compiler) otherKey(names []string, at *path) (int32, error) {
	words, err := literalsNFA(names)
	if err != nil {
		return 0, c.fail(at, "additionalProperties next to %d properties: %v", len(names), err)
	}
	d, err := buildDFA(c.ctx, stringSpec{must: []*nfa{anyStringNFA()}, mustNot: []*nfa{words}, max: -1})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return 0, err
	}
	if err != nil {
		return 0, c.fail(at, "additionalProperties next to %d properties: the names additional keys must avoid: %v", len(names), err)
	}
	if err := c.charge(len(d.accept)); err != nil {
		return 0, err
	}
	return c.add(node{kind: kPattern, dfa: d, isKey: true}), nil
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
