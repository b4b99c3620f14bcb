package grammar

import (
	"context"
	"errors"
	"fmt"
	"math/big"
)

// str compiles a string schema: a plain string within its length bounds,
// or, with a pattern or a known format, a string automaton that enforces
// them all together.
func (c *compiler) str(s *value, at *path) (int32, error) {
	lo, hi, err := c.bounds(s, at, "minLength", "maxLength")
	if err != nil {
		return 0, err
	}
	var pattern, format string
	if p := s.get("pattern"); p != nil {
		if p.kind != '"' {
			return 0, c.fail(at, "pattern is %s, want a string", p.describe())
		}
		pattern = p.text
	}
	if f := s.get("format"); f != nil && f.kind == '"' && formats[f.text] != "" {
		format = f.text
	}
	if pattern == "" && format == "" {
		if lo == 0 && hi < 0 {
			return c.plainString(), nil
		}
		return c.add(node{kind: kString, min: lo, max: hi}), nil
	}
	key := fmt.Sprintf("%d %d %q %q", lo, hi, format, pattern)
	if idx, ok := c.strs[key]; ok {
		return idx, nil
	}
	spec := stringSpec{min: lo, max: hi}
	if pattern != "" {
		a, err := patternNFA(pattern)
		if err != nil {
			return 0, c.fail(at, "pattern %q: %v", pattern, err)
		}
		spec.must = append(spec.must, a)
	}
	if format != "" {
		a, err := patternNFA(formats[format])
		if err != nil {
			panic(fmt.Sprintf("grammar: format %s: %v", format, err)) // a fixed pattern
		}
		spec.must = append(spec.must, a)
	}
	d, err := buildDFA(c.ctx, spec)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return 0, err
	}
	if err != nil {
		what := fmt.Sprintf("pattern %q", pattern)
		if pattern == "" {
			what = fmt.Sprintf("format %q", format)
		}
		return 0, c.fail(at, "%s: %v", what, err)
	}
	if err := c.charge(len(d.accept)); err != nil {
		return 0, err
	}
	idx := c.add(node{kind: kPattern, dfa: d})
	c.strs[key] = idx
	return idx, nil
}

// number compiles a number or integer schema and its bounds.
func (c *compiler) number(s *value, integer bool, at *path) (int32, error) {
	n := node{kind: kNumber, integer: integer}
	read := func(key string) (*big.Rat, bool, error) {
		v := s.get(key)
		switch {
		case v == nil:
			return nil, false, nil
		case v.kind == 't' || v.kind == 'f': // draft 4: a flag on minimum or maximum
			return nil, v.kind == 't', nil
		case v.kind != '0':
			return nil, false, c.fail(at, "%s is %s, want a number", key, v.describe())
		}
		r, ok := new(big.Rat).SetString(v.text)
		if !ok || len(v.text) > 64 {
			return nil, false, c.fail(at, "%s %s is not a number the grammar can compare with", key, v.text)
		}
		return r, false, nil
	}
	var bound [4]*big.Rat
	var flag [4]bool
	for i, key := range []string{"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"} {
		var err error
		if bound[i], flag[i], err = read(key); err != nil {
			return 0, err
		}
	}
	// the tighter of minimum and exclusiveMinimum, and of the maxima
	lo, loStrict := bound[0], flag[1] && bound[0] != nil
	if x := bound[1]; x != nil && (lo == nil || x.Cmp(lo) >= 0) {
		lo, loStrict = x, true
	}
	hi, hiStrict := bound[2], flag[3] && bound[2] != nil
	if x := bound[3]; x != nil && (hi == nil || x.Cmp(hi) <= 0) {
		hi, hiStrict = x, true
	}
	if lo != nil || hi != nil {
		nb, err := newBounds(lo, hi, loStrict, hiStrict, integer)
		if err != nil {
			return 0, c.fail(at, "%v", err)
		}
		n.num = nb
	}
	return c.add(n), nil
}
