package grammar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Schema compiles a JSON Schema into a grammar. The subset it enforces:
//
//   - type: object, array, string, number, integer, boolean, null, or a list
//     of them; without type, the keywords present imply it (properties: an
//     object, items: an array, pattern: a string, minimum: a number...), and
//     with none the value is any JSON
//   - properties, emitted in schema order; a property outside required may
//     be skipped; additionalProperties false or absent allows no others
//     (llama.cpp's converter does the same), true or a schema allows
//     others after the declared ones, named otherwise;
//     minProperties, maxProperties
//   - items (a schema or a boolean), prefixItems (or items as a list, with
//     additionalItems), minItems, maxItems
//   - minLength, maxLength (in code points; an escape counts as one);
//     pattern (ECMA-262, the subset regex.go lists; searched for, as JSON
//     Schema says, so "^...$" is the whole string); format date, time,
//     date-time, uuid and email (formats.go)
//   - minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers or,
//     draft 4, booleans beside minimum and maximum), on integers and
//     numbers: a bounded number is written without an exponent and
//     checked exactly (bounds.go)
//   - enum, const: the values in their canonical JSON text only
//   - anyOf, oneOf (as anyOf: exclusivity is not checked), allOf of one
//   - $ref to anywhere in the document (#/$defs/..., #/definitions/..., #),
//     recursion included; nullable (OpenAPI)
//
// Annotations (title, description, default, examples, other formats, ...)
// and keywords it does not know are ignored, as JSON Schema says.
// Validation keywords it cannot enforce (multipleOf, uniqueItems, not,
// lookarounds in a pattern, ...) are an error naming them, wrapping
// ErrFormat.
//
// Compiling costs time linear in the schema's size (every subschema is
// compiled once, however many $refs reach it) and is bounded: a schema
// nesting deeper than 512 levels (counting $ref hops) or needing more than
// 100,000 steps is refused, wrapping ErrFormat and naming the limit; so is
// a pattern longer than 2,000 bytes or one whose automaton needs more than
// 20,000 states, or 10,000 once determinized with its format, length
// bounds or the names an additional property must avoid. It stops with
// ctx's error once ctx is done.
func Schema(ctx context.Context, schema []byte) (*Grammar, error) {
	return newCompiler(ctx).schema(schema)
}

// maxSteps bounds the work of one compile: a step per subschema, property,
// required name, type name, enum value and $ref token (an object of n
// required properties of simple types takes 3n+1).
const maxSteps = 100_000

// errTooBig is wrapped when a schema passes a limit.
var errTooBig = fmt.Errorf("%w: schema is too big", ErrFormat)

// stopped is the error of a compile whose context ended.
func stopped(err error) error { return fmt.Errorf("grammar: schema compilation stopped: %w", err) }

func newCompiler(ctx context.Context) *compiler {
	return &compiler{builder: newBuilder(), ctx: ctx, null: -1, memo: map[*value]int32{},
		pending: map[*value]int32{}, targets: map[string]*value{}, named: map[int32]string{},
		strs: map[string]int32{}}
}

func (c *compiler) schema(schema []byte) (*Grammar, error) {
	root, err := parseValue(c.ctx, schema)
	switch {
	case err == nil:
	case errors.Is(err, errTooBig), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	default:
		return nil, fmt.Errorf("%w: schema: %v", ErrFormat, err)
	}
	c.root = root
	top, err := c.compile(root, &path{seg: "#"})
	if err != nil {
		return nil, err
	}
	if err := c.checkCycles(); err != nil {
		return nil, err
	}
	return c.finish(top, c.charge)
}

// unsupported are validation keywords the grammar cannot enforce: a schema
// using them is refused rather than silently loosened.
var unsupported = map[string]bool{
	"multipleOf": true, "uniqueItems": true, "contains": true,
	"minContains": true, "maxContains": true,
	"unevaluatedItems": true, "unevaluatedProperties": true, "patternProperties": true,
	"propertyNames":     true,
	"dependentRequired": true, "dependentSchemas": true, "dependencies": true, "not": true,
	"if": true, "then": true, "else": true, "$dynamicRef": true, "$recursiveRef": true,
	"contentSchema": true,
}

// shapeKeywords constrain a value directly; a combinator ($ref, anyOf,
// oneOf, allOf) next to one of them would need an intersection.
var shapeKeywords = []string{"type", "properties", "required", "additionalProperties",
	"minProperties", "maxProperties", "items", "prefixItems", "additionalItems", "minItems", "maxItems",
	"minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
	"enum", "const"}

// compiler turns a decoded schema into nodes. Each subschema is compiled
// once: memo maps it to its node, and a $ref that reaches a subschema still
// being compiled (a recursive schema) gets a placeholder anyOf that is
// pointed at the node once it is done.
type compiler struct {
	*builder
	ctx     context.Context
	root    *value
	memo    map[*value]int32  // compiled subschemas; -1 while one is being compiled
	pending map[*value]int32  // placeholders handed out for subschemas being compiled
	targets map[string]*value // $ref text -> the subschema it resolves to
	named   map[int32]string  // placeholders -> their $ref, for cycle errors
	null    int32             // the null literal; -1 until first asked for
	steps   int               // work done, at most maxSteps
	depth   int               // compile's recursion, at most maxDepth
	strs    map[string]int32  // string automata compiled, by what they enforce
}

// path is where a subschema is in the document: a JSON pointer, put
// together only for an error message (building it at every level would
// cost the depth at every level).
type path struct {
	up  *path
	seg string // one or more pointer tokens; at the top "#" or a $ref
}

func (p *path) String() string {
	var segs []string
	for ; p != nil; p = p.up {
		segs = append(segs, p.seg)
	}
	slices.Reverse(segs)
	return strings.Join(segs, "/")
}

func (p *path) to(seg string) *path { return &path{up: p, seg: seg} }

func (c *compiler) fail(at *path, format string, args ...any) error {
	return fmt.Errorf("%w: schema at %s: %s", ErrFormat, at, fmt.Sprintf(format, args...))
}

// charge counts n steps of work, refusing the schema rather than going
// past maxSteps; every checkEvery steps it looks at the context.
func (c *compiler) charge(n int) error {
	before := c.steps
	if c.steps+n > maxSteps {
		return fmt.Errorf("%w: compiling it takes more than %d steps (a step per subschema, property, required name, "+
			"type name, enum value and $ref token): use fewer properties, enum values or subschemas", errTooBig, maxSteps)
	}
	c.steps += n
	if before/checkEvery != c.steps/checkEvery {
		if err := c.ctx.Err(); err != nil {
			return stopped(err)
		}
	}
	return nil
}

// compile returns the node matching the values of schema s, found at at.
func (c *compiler) compile(s *value, at *path) (int32, error) {
	if idx, ok := c.memo[s]; ok && idx >= 0 { // reached again through a $ref
		return idx, nil
	}
	if err := c.charge(1); err != nil {
		return 0, err
	}
	if c.depth++; c.depth > maxDepth {
		return 0, fmt.Errorf("%w: it nests deeper than %d levels (counting $ref hops)", errTooBig, maxDepth)
	}
	defer func() { c.depth-- }()
	c.memo[s] = -1
	idx, err := c.compileOnce(s, at)
	if err != nil {
		return 0, err
	}
	c.memo[s] = idx
	if p, ok := c.pending[s]; ok {
		c.nodes[p].alts = []int32{idx}
		delete(c.pending, s)
	}
	return idx, nil
}

func (c *compiler) compileOnce(s *value, at *path) (int32, error) {
	switch s.kind {
	case 't':
		return c.anyValue(), nil
	case 'f':
		return 0, c.fail(at, "false matches no value")
	case '{':
	default:
		return 0, c.fail(at, "is %s, want an object or a boolean", s.describe())
	}
	for _, k := range s.keys {
		if unsupported[k] {
			return 0, c.fail(at, "keyword %q cannot be enforced: remove it (supported: type, properties, required, "+
				"additionalProperties, minProperties, maxProperties, items, prefixItems, minItems, maxItems, "+
				"minLength, maxLength, pattern, format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, "+
				"enum, const, anyOf, oneOf, allOf of one, $ref)", k)
		}
	}
	idx, err := c.shape(s, at)
	if err != nil {
		return 0, err
	}
	if nb := s.get("nullable"); nb != nil && nb.kind == 't' {
		idx = c.add(node{kind: kAnyOf, alts: []int32{idx, c.nullNode()}})
	}
	return idx, nil
}

// shape compiles s without nullable.
func (c *compiler) shape(s *value, at *path) (int32, error) {
	for _, comb := range []string{"$ref", "anyOf", "oneOf", "allOf"} {
		v := s.get(comb)
		if v == nil {
			continue
		}
		for _, k := range shapeKeywords {
			if s.get(k) != nil {
				return 0, c.fail(at, "%s next to %q is not supported: move %q into the %s", comb, k, k, comb)
			}
		}
		if f := s.get("format"); f != nil && f.kind == '"' && formats[f.text] != "" {
			return 0, c.fail(at, "%s next to format %q is not supported: move it into the %s", comb, f.text, comb)
		}
		switch comb {
		case "$ref":
			if v.kind != '"' {
				return 0, c.fail(at, "$ref is %s, want a string", v.describe())
			}
			return c.ref(v.text, at)
		case "allOf":
			if v.kind != '[' || len(v.elems) != 1 {
				return 0, c.fail(at, "allOf is supported with exactly one schema")
			}
			return c.compile(v.elems[0], at.to("allOf/0"))
		}
		if v.kind != '[' || len(v.elems) == 0 {
			return 0, c.fail(at, "%s must be a non-empty array of schemas", comb)
		}
		var alts []int32
		seen := map[int32]bool{} // alternatives that are one node (one subschema, or aliases of it)
		for i, e := range v.elems {
			a, err := c.compile(e, at.to(comb+"/"+strconv.Itoa(i)))
			if err != nil {
				return 0, err
			}
			if !seen[a] {
				seen[a] = true
				alts = append(alts, a)
			}
		}
		return c.add(node{kind: kAnyOf, alts: alts}), nil
	}
	var types []string
	switch t := s.get("type"); {
	case t == nil:
	case t.kind == '"' && t.text != "":
		types = []string{t.text}
	case t.kind == '[' && len(t.elems) > 0:
		for _, e := range t.elems {
			if err := c.charge(1); err != nil {
				return 0, err
			}
			switch {
			case e.kind != '"' || e.text == "":
				return 0, c.fail(at, "type lists %s, want type names", e.appendJSON(nil))
			case !slices.Contains(typeNames, e.text):
				return 0, c.fail(at, "type %q is not a JSON Schema type", e.text)
			case !slices.Contains(types, e.text): // at most len(typeNames)
				types = append(types, e.text)
			}
		}
	default:
		return 0, c.fail(at, "type must be a type name or a list of them")
	}
	if lits := literalValues(s); lits != nil {
		return c.enum(lits, types, at)
	}
	if types == nil {
		types = []string{impliedType(s)}
	}
	var alts []int32
	for _, t := range types {
		a, err := c.typed(s, t, at)
		if err != nil {
			return 0, err
		}
		alts = append(alts, a)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return c.add(node{kind: kAnyOf, alts: alts}), nil
}

// literalValues returns the values a const or enum allows, nil if neither.
func literalValues(s *value) []*value {
	if v := s.get("const"); v != nil {
		return []*value{v}
	}
	if v := s.get("enum"); v != nil {
		if v.kind != '[' || len(v.elems) == 0 {
			return []*value{} // not nil: refused below as allowing nothing
		}
		return v.elems
	}
	return nil
}

// enum compiles the values of an enum or const: of them, those of types
// when given. Other keywords next to them are not checked: the values are
// the schema's own.
func (c *compiler) enum(vals []*value, types []string, at *path) (int32, error) {
	if err := c.charge(len(vals)); err != nil {
		return 0, err
	}
	var lits [][]byte
	for _, v := range vals {
		if types == nil || slices.ContainsFunc(types, func(t string) bool { return v.is(t) }) {
			lits = append(lits, v.appendJSON(nil))
		}
	}
	if len(lits) == 0 {
		return 0, c.fail(at, "enum or const allows no value (of the type given)")
	}
	return c.literals(lits), nil
}

// impliedType is the type a schema without one constrains, "" for any.
func impliedType(s *value) string {
	switch {
	case s.get("properties") != nil || s.get("required") != nil || s.get("additionalProperties") != nil:
		return "object"
	case s.get("items") != nil || s.get("minItems") != nil || s.get("maxItems") != nil:
		return "array"
	case s.get("minProperties") != nil || s.get("maxProperties") != nil:
		return "object"
	case s.get("prefixItems") != nil || s.get("additionalItems") != nil:
		return "array"
	case s.get("minLength") != nil || s.get("maxLength") != nil || s.get("pattern") != nil:
		return "string"
	case s.get("minimum") != nil || s.get("maximum") != nil || s.get("exclusiveMinimum") != nil ||
		s.get("exclusiveMaximum") != nil:
		return "number"
	}
	if f := s.get("format"); f != nil && f.kind == '"' && formats[f.text] != "" {
		return "string"
	}
	return ""
}

// typeNames are JSON Schema's types.
var typeNames = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// typed compiles s as a value of type t.
func (c *compiler) typed(s *value, t string, at *path) (int32, error) {
	switch t {
	case "":
		return c.anyValue(), nil
	case "object":
		return c.object(s, at)
	case "array":
		return c.array(s, at)
	case "string":
		return c.str(s, at)
	case "number", "integer":
		return c.number(s, t == "integer", at)
	case "boolean":
		return c.literals([][]byte{[]byte("true"), []byte("false")}), nil
	case "null":
		return c.nullNode(), nil
	}
	return 0, c.fail(at, "type %q is not a JSON Schema type", t)
}

// bounds reads a minimum and maximum count; the maximum is -1 when absent.
func (c *compiler) bounds(s *value, at *path, minKey, maxKey string) (lo, hi int32, err error) {
	count := func(key string) (int32, error) {
		v := s.get(key)
		if v == nil {
			return -1, nil
		}
		n, ok := v.count()
		if !ok {
			got := v.text
			if v.kind != '0' {
				got = v.describe()
			}
			return 0, c.fail(at, "%s is %s, want a non-negative integer", key, got)
		}
		return n, nil
	}
	if lo, err = count(minKey); err != nil {
		return 0, 0, err
	}
	lo = max(lo, 0)
	if hi, err = count(maxKey); err != nil {
		return 0, 0, err
	}
	if hi >= 0 && hi < lo {
		return 0, 0, c.fail(at, "%s %d is below %s %d", maxKey, hi, minKey, lo)
	}
	return lo, hi, nil
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

func (c *compiler) nullNode() int32 {
	if c.null < 0 {
		c.null = c.literals([][]byte{[]byte("null")})
	}
	return c.null
}

// ref returns the node of a $ref: its target's, compiled once however
// many refs reach it or however they spell it. A target still being
// compiled (the ref is inside it) gets a placeholder anyOf, which compile
// points at the target's node when it is done: recursive schemas close on
// it.
func (c *compiler) ref(ref string, at *path) (int32, error) {
	target, ok := c.targets[ref]
	if !ok {
		if err := c.charge(1 + strings.Count(ref, "/")); err != nil {
			return 0, err
		}
		var err error
		if target, err = resolve(c.root, ref); err != nil {
			return 0, c.fail(at, "%v", err)
		}
		c.targets[ref] = target
	}
	idx, ok := c.memo[target]
	switch {
	case !ok:
		return c.compile(target, &path{seg: ref})
	case idx >= 0:
		return idx, nil
	}
	if p, ok := c.pending[target]; ok {
		return p, nil
	}
	p := c.add(node{kind: kAnyOf})
	c.pending[target], c.named[p] = p, ref
	return p, nil
}

// checkCycles refuses anyOf chains that lead back to themselves without
// reading a byte ({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}}}): the
// matcher would expand them forever.
func (c *compiler) checkCycles() error {
	color := make([]uint8, len(c.nodes)) // 0 unseen, 1 on the path, 2 done
	var visit func(i int32) error
	visit = func(i int32) error {
		if c.nodes[i].kind != kAnyOf || color[i] == 2 {
			return nil
		}
		if color[i] == 1 {
			name := c.named[i]
			if name == "" {
				name = "an anyOf"
			}
			return fmt.Errorf("%w: schema: %s refers to itself before any value starts", ErrFormat, name)
		}
		color[i] = 1
		for _, a := range c.nodes[i].alts {
			if err := visit(a); err != nil {
				return err
			}
		}
		color[i] = 2
		return nil
	}
	for i := range c.nodes {
		if err := visit(int32(i)); err != nil {
			return err
		}
	}
	return nil
}
