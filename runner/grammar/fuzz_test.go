package grammar

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// FuzzMatcher feeds arbitrary bytes, cut into pieces as tokens would cut
// them, to the "json" grammar and to a schema's. Nothing may panic;
// AllowedBytes must agree with AcceptBytes; an input the grammar accepts
// as complete must be valid JSON that validates against the schema.
func FuzzMatcher(f *testing.F) {
	schema := []byte(e2eSchemas[1].schema)
	for _, s := range []string{`{}`, `{"a":[1,2.5e-3,"x\u00e9",null]}`, "{\n  \"k\": true\n}",
		`{"name":"n","age":1,"ok":true}`, `{"name":"n","age":1,"tags":["a"],"ok":false}`, "{\"\xe2\x82\xac\":1}"} {
		f.Add([]byte(s), uint8(3))
	}
	keywords := []byte(`{"type":"object","properties":{"id":{"type":"integer","minimum":1,"maximum":500},
		"p":{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1},"code":{"type":"string","pattern":"^[A-Z]{2}\\d+$"},
		"day":{"type":"string","format":"date"},"pair":{"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}],"items":false}},
		"required":["id"],"additionalProperties":{"type":"string","maxLength":4},"maxProperties":5}`)
	for _, s := range []string{`{"id":7,"p":0.25,"code":"AB12","day":"2024-02-29","pair":["x",true],"z":"ab"}`, `{"id":500,"zz":""}`} {
		f.Add([]byte(s), uint8(2))
	}
	grammars := []*Grammar{JSON(), mustSchema(f, string(schema)), mustSchema(f, string(keywords))}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		for gi, g := range grammars {
			c := New(g, nil)
			step := int(cut%7) + 1
			accepted := true
			for i := 0; i < len(data) && accepted; i += step {
				p := data[i:min(i+step, len(data))]
				allowed := c.AllowedBytes(p)
				err := c.AcceptBytes(p)
				if allowed != (err == nil) {
					t.Fatalf("%q at %d: AllowedBytes %v, AcceptBytes %v", p, i, allowed, err)
				}
				accepted = err == nil
			}
			if !accepted || !c.CanEnd() {
				continue
			}
			if !json.Valid(data) {
				t.Fatalf("grammar %d accepted %q, which is not valid JSON", gi, data)
			}
			if gi > 0 {
				if err := validate([][]byte{nil, schema, keywords}[gi], data); err != nil {
					t.Fatalf("accepted %q: %v", data, err)
				}
			}
		}
	})
}

// FuzzSchema compiles arbitrary schemas, then walks random allowed bytes
// from each that compiles: whenever the output may end, it must be valid
// JSON that validates against the schema.
func FuzzSchema(f *testing.F) {
	for _, s := range e2eSchemas[1:] {
		f.Add([]byte(s.schema), uint64(1))
	}
	f.Add([]byte(`{"type":["string","integer"],"minLength":2,"nullable":true}`), uint64(2))
	f.Add([]byte(`{"anyOf":[{"enum":[1,12,123]},{"type":"array","maxItems":0}]}`), uint64(3))
	for i, s := range []string{
		`{"type":"string","pattern":"^(a|bc)+[^x]?\d{2}$","maxLength":6}`,
		`{"type":"string","pattern":"x.y","format":"email"}`,
		`{"type":"string","format":"date-time"}`,
		`{"type":"array","items":{"type":"integer","minimum":-12,"exclusiveMaximum":305}}`,
		`{"type":"array","items":{"type":"number","exclusiveMinimum":-0.5,"maximum":2.25}}`,
		`{"properties":{"a":{"type":"null"},"ab":{}},"additionalProperties":{"type":"boolean"},"minProperties":2,"maxProperties":3}`,
		`{"type":"array","prefixItems":[{"type":"string","format":"uuid"},{"const":1}],"items":false}`,
		`{"type":"object","additionalProperties":{"type":"integer"},"minProperties":3}`,
	} {
		f.Add([]byte(s), uint64(10+i))
	}
	f.Fuzz(func(t *testing.T, schema []byte, seed uint64) {
		g, err := Schema(context.Background(), schema)
		if err != nil {
			return
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		c := New(g, nil)
		var out, allowed []byte
		for range 400 {
			if c.CanEnd() {
				if err := validate(schema, out); err != nil {
					t.Fatalf("generated %q: %v", out, err)
				}
				if rng.IntN(4) == 0 {
					return
				}
			}
			allowed = allowed[:0]
			for b := range 256 {
				if c.AllowedBytes([]byte{byte(b)}) {
					allowed = append(allowed, byte(b))
				}
			}
			if len(allowed) == 0 {
				if !c.Done() {
					t.Fatalf("stuck after %q", out)
				}
				return
			}
			// favour bytes that close or separate, so values end
			b := allowed[rng.IntN(len(allowed))]
			for _, x := range allowed {
				if (x == '"' || x == ']' || x == '}' || x == ',') && rng.IntN(2) == 0 {
					b = x
				}
			}
			if err := c.AcceptBytes([]byte{b}); err != nil {
				t.Fatalf("allowed %q refused after %q: %v", b, out, err)
			}
			out = append(out, b)
		}
	})
}
