package grammar

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// wideSchema is an object of n properties, the first req of them required.
func wideSchema(n, req int) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`},"required":[`)
	for i := range req {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d"`, i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// The compile of a wide object is a step per property, required name and
// subschema: 1 (the object) + n (properties) + req (required) + n (their
// schemas), then a step per node for each pass that settles the minimal
// lengths (two here: one lowers them, one finds them settled). Before the
// compiler looked names up in maps it compared every required name with
// every property: 40,000 of each took 32 s.
func TestSchemaWorkIsLinear(t *testing.T) {
	for _, n := range []int{1000, 8000, 30000} {
		c := newCompiler(context.Background())
		g, err := c.schema(wideSchema(n, n))
		if err != nil {
			t.Fatalf("%d properties: %v", n, err)
		}
		if want := 1 + n + n + n + 2*len(g.nodes); c.steps != want {
			t.Errorf("%d properties: %d steps, want %d", n, c.steps, want)
		}
		if got := len(g.nodes[g.nodes[g.doc].child].props); got != n {
			t.Errorf("%d properties compiled, want %d", got, n)
		}
	}
}

// A schema past a limit is refused with an ErrFormat naming it, having
// done no more than the limit's work.
func TestSchemaTooBig(t *testing.T) {
	chain := func(depth int) string { // {"$ref":"#/$defs/d0"}, d0 -> d1 -> ... -> a string
		var defs []string
		for i := range depth {
			defs = append(defs, fmt.Sprintf(`"d%d":{"$ref":"#/$defs/d%d"}`, i, i+1))
		}
		defs = append(defs, fmt.Sprintf(`"d%d":{"type":"string"}`, depth))
		return `{"$ref":"#/$defs/d0","$defs":{` + strings.Join(defs, ",") + `}}`
	}
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"40k required properties", string(wideSchema(40000, 40000)), "more than 100000 steps"},
		{"an enum of 100k values", `{"enum":[` + strings.Repeat(`1,`, 100000) + `2]}`, "more than 100000 steps"},
		{"nested 600 deep", strings.Repeat(`{"items":`, 600) + `{}` + strings.Repeat(`}`, 600), "nests deeper than 512 levels"},
		{"a chain of 600 $refs", chain(600), "nests deeper than 512 levels (counting $ref hops)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCompiler(context.Background())
			_, err := c.schema([]byte(tc.schema))
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "schema is too big") ||
				!strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want an ErrFormat saying %q", tc.name, err, tc.want)
			}
			if c.steps > maxSteps {
				t.Errorf("%s: %d steps, past the limit of %d", tc.name, c.steps, maxSteps)
			}
		})
	}
	// just under the limits compiles
	for _, s := range []string{string(wideSchema(33000, 33000)), chain(500)} {
		if _, err := Schema(context.Background(), []byte(s)); err != nil {
			t.Errorf("%.60s: %v", s, err)
		}
	}
}

// A $ref target is compiled once, however many $refs reach it, however
// they spell its pointer, and whether it is also reached inline: the
// grammar does not grow with the number of aliases.
func TestSchemaRefAliasesCompileOnce(t *testing.T) {
	const item = `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":5},` +
		`"c":{"type":"array","items":{"type":"number"}}},"required":["a"]}`
	aliases := func(k int) []byte {
		var refs []string
		for i := range k { // #/$defs/list/0, #/$defs/list/00, ...: one element
			refs = append(refs, `{"$ref":"#/$defs/list/`+strings.Repeat("0", i+1)+`"}`)
		}
		return []byte(`{"$defs":{"list":[` + item + `]},"type":"array","items":{"anyOf":[` + strings.Join(refs, ",") + `]}}`)
	}
	nodes := func(schema []byte) int {
		t.Helper()
		g, err := Schema(context.Background(), schema)
		if err != nil {
			t.Fatalf("%s: %v", schema, err)
		}
		return len(g.nodes)
	}
	if one, many := nodes(aliases(1)), nodes(aliases(40)); one != many {
		t.Errorf("1 alias: %d nodes, 40 aliases: %d; want equal", one, many)
	}
	// a property reached inline and by two $refs
	inline := nodes([]byte(`{"type":"object","properties":{"x":` + item + `}}`))
	refs := nodes([]byte(`{"type":"object","properties":{"x":` + item + `,"y":{"$ref":"#/properties/x"},"z":{"$ref":"#/properties/x"}}}`))
	if inline != refs {
		t.Errorf("inline only: %d nodes, with two $refs to it: %d; want equal", inline, refs)
	}
	// and the grammar still matches through the aliases and the recursion
	check(t, mustSchema(t, string(aliases(3))), `[{"a":1},{"a":2,"b":"x"}]`, "ok")
	check(t, mustSchema(t, e2eSchemas[2].schema), `{"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]}`, "ok")
}

// countdown is a context whose Err turns to Canceled after left calls, so
// a test can cancel a compile at an exact point of its work.
type countdown struct {
	context.Context
	left, calls int
}

func (c *countdown) Err() error {
	c.calls++
	if c.left--; c.left < 0 {
		return context.Canceled
	}
	return nil
}

// A compile stops when its context ends: while decoding the schema, and
// while compiling it, well before the end of the work.
func TestSchemaStopsWhenCancelled(t *testing.T) {
	schema := wideSchema(30000, 30000)
	full := &countdown{Context: context.Background(), left: 1 << 30}
	whole := newCompiler(full)
	if _, err := whole.schema(schema); err != nil {
		t.Fatal(err)
	}
	parse := &countdown{Context: context.Background(), left: 1 << 30}
	if _, err := parseValue(parse, schema); err != nil {
		t.Fatal(err)
	}
	decoding, compiling := parse.calls, full.calls-parse.calls // looks at the context
	if decoding < 10 || compiling < 10 {
		t.Fatalf("the context was looked at %d times decoding and %d compiling; want both at least 10", decoding, compiling)
	}
	for _, tc := range []struct {
		name     string
		left     int
		maxSteps int
	}{
		{"already cancelled", 0, 0},
		{"while decoding", decoding / 2, 0},
		{"while compiling", decoding + compiling/2, whole.steps - 5*checkEvery},
	} {
		ctx := &countdown{Context: context.Background(), left: tc.left}
		c := newCompiler(ctx)
		_, err := c.schema(schema)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %v, want context.Canceled", tc.name, err)
		}
		if ctx.calls != tc.left+1 || c.steps > tc.maxSteps {
			t.Errorf("%s: went on after the cancel: %d looks at the context (want %d), %d steps (want at most %d)",
				tc.name, ctx.calls, tc.left+1, c.steps, tc.maxSteps)
		}
	}
}
