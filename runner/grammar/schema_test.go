package grammar

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestSchema(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		cases        map[string]string // text -> ok, prefix or reject
	}{
		{"properties in order, optional skipped", `{"type":"object","properties":{
			"a":{"type":"integer"},"b":{"type":"string"},"c":{"type":"boolean"}},"required":["a","c"]}`,
			map[string]string{
				`{"a":1,"b":"x","c":true}`: "ok",
				`{"a":1,"c":false}`:        "ok",
				`{"a":1}`:                  "reject", // c is required
				`{"c":true,"a":1}`:         "reject", // schema order
				`{"a":1,"b":"x"}`:          "reject",
				`{"a":1.5,"c":true}`:       "reject", // integer
				`{"a":1,"d":1}`:            "reject", // no additional properties
				`{"a":1,"c":true,"b":"x"}`: "reject",
				`{ "a" : 1 , "c" : true }`: "ok",
				`{"a":1,"b":"x","c":true`:  "prefix",
			}},
		{"all optional", `{"properties":{"x":{"type":"null"},"xy":{"type":"number"}}}`,
			map[string]string{`{}`: "ok", `{"xy":2}`: "ok", `{"x":null,"xy":-1}`: "ok", `{"x":null}`: "ok",
				`{"xy":1,"x":null}`: "reject", `{"x":1}`: "reject", `{"xyz":1}`: "reject"}},
		{"additional false, no properties", `{"type":"object","additionalProperties":false}`,
			map[string]string{`{}`: "ok", `{"a":1}`: "reject"}},
		{"a map", `{"type":"object","additionalProperties":{"type":"integer"}}`,
			map[string]string{`{"a":1,"b":2}`: "ok", `{"a":"x"}`: "reject", `{}`: "ok"}},
		{"a free object", `{"type":"object"}`,
			map[string]string{`{"a":[{"b":null}]}`: "ok", `[]`: "reject"}},
		{"array bounds", `{"type":"array","items":{"type":"string","maxLength":2},"minItems":1,"maxItems":2}`,
			map[string]string{`["ab"]`: "ok", `["a","b"]`: "ok", `[]`: "reject", `["a","b","c"]`: "reject",
				`["abc"]`: "reject", `["é😀"]`: "ok", `["\u00e9\n"]`: "ok", `["\n\n\n"]`: "reject"}},
		{"items false", `{"type":"array","items":false}`, map[string]string{`[]`: "ok", `[1]`: "reject"}},
		{"string length", `{"type":"string","minLength":2,"maxLength":3}`,
			map[string]string{`"ab"`: "ok", `"abc"`: "ok", `"a"`: "reject", `"abcd"`: "reject", `"日本"`: "ok"}},
		{"top-level scalars", `{"type":["integer","null"]}`,
			map[string]string{`12`: "ok", `-0`: "ok", `null`: "ok", `1.5`: "reject", `"1"`: "reject", ` 7`: "ok"}},
		{"enum", `{"enum":["red","green",1,12,null,{"a":[1]}]}`,
			map[string]string{`"red"`: "ok", `"green"`: "ok", `"blue"`: "reject", `1`: "ok", `12`: "ok",
				`123`: "reject", `null`: "ok", `{"a":[1]}`: "ok", `{"a": [1]}`: "reject", `"re`: "prefix"}},
		{"enum filtered by type", `{"type":["string","null"],"enum":["a",1,null]}`,
			map[string]string{`"a"`: "ok", `null`: "ok", `1`: "reject"}},
		{"const", `{"const":"a<b"}`, map[string]string{`"a<b"`: "ok", `"a\u003cb"`: "reject"}},
		{"anyOf", `{"anyOf":[{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]},
			{"type":"object","properties":{"k":{"type":"integer"},"n":{"type":"null"}},"required":["k","n"]}]}`,
			map[string]string{`{"k":"s"}`: "ok", `{"k":1,"n":null}`: "ok", `{"k":1}`: "reject",
				`{"k":"s","n":null}`: "reject"}},
		{"oneOf and nullable", `{"oneOf":[{"type":"boolean"},{"type":"string","nullable":true}]}`,
			map[string]string{`true`: "ok", `"x"`: "ok", `null`: "ok", `1`: "reject"}},
		{"$ref and recursion", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object",
			"properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
			"required":["v"]}}}`,
			map[string]string{`{"v":1,"kids":[{"v":2},{"v":3,"kids":[{"v":4}]}]}`: "ok",
				`{"v":1,"kids":[{}]}`: "reject"}},
		{"definitions and allOf", `{"definitions":{"a b":{"type":"string"}},
			"properties":{"x":{"allOf":[{"$ref":"#/definitions/a b"}],"description":"d"}}}`,
			map[string]string{`{"x":"s"}`: "ok", `{"x":1}`: "reject"}},
		{"annotations ignored", `{"type":"string","title":"t","description":"d","format":"uri",
			"default":"x","examples":["y"],"$schema":"https://json-schema.org/draft/2020-12/schema"}`,
			map[string]string{`"anything"`: "ok"}},
		{"empty schema", `{}`, map[string]string{`[1,"a",{}]`: "ok", `3`: "ok"}},
		{"true", `true`, map[string]string{`null`: "ok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustSchema(t, tc.schema)
			for text, want := range tc.cases {
				check(t, g, text, want)
			}
		})
	}
}

func TestSchemaErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"number","multipleOf":5}`, `keyword "multipleOf" cannot be enforced`},
		{`{"properties":{"n":{"type":"integer","multipleOf":2}}}`, `schema at #/properties/n: keyword "multipleOf"`},
		{`{"type":"array","uniqueItems":true}`, `"uniqueItems"`},
		{`{"type":"strin"}`, `type "strin" is not a JSON Schema type`},
		{`{"properties":{"a":{}},"required":["b"]}`, `required property "b" is not in properties`},
		{`{"$ref":"#/$defs/missing","$defs":{"other":{}}}`, `nothing at "missing"`},
		{`{"$ref":"https://example.com/s.json"}`, `only references within the schema`},
		{`{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},"$ref":"#/$defs/a"}`, `#/$defs/a refers to itself`},
		{`{"$ref":"#/$defs/a","type":"object","$defs":{"a":{}}}`, `$ref next to "type"`},
		{`{"allOf":[{"type":"string"},{"maxLength":3}]}`, `allOf is supported with exactly one schema`},
		{`{"type":"array","items":[{"type":"string"}],"prefixItems":[]}`, `items is a list next to prefixItems`},
		{`{"type":"string","minLength":3,"maxLength":2}`, `maxLength 2 is below minLength 3`},
		{`{"type":"array","maxItems":-1}`, `maxItems is -1`},
		{`{"enum":[]}`, `allows no value`},
		{`{"type":"string","enum":[1,null]}`, `allows no value (of the type given)`},
		{`false`, `false matches no value`},
		{`{"type":"object"`, `schema:`},
		{`[]`, `want an object or a boolean`},
	} {
		_, err := Schema(context.Background(), []byte(tc.schema))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an ErrFormat containing %q", tc.schema, err, tc.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format  string
		openai  bool
		wantNil bool
		wantErr string
		accepts string
	}{
		{format: ``, wantNil: true},
		{format: `null`, wantNil: true},
		{format: `""`, wantNil: true},
		{format: `"json"`, accepts: `{"a":1}`},
		{format: `"yaml"`, wantErr: `format "yaml"`},
		{format: `{"type":"string"}`, accepts: `"s"`},
		{format: `3`, wantErr: `use "json" or a JSON schema object`},
		{format: `{"type":"text"}`, openai: true, wantNil: true},
		{format: `{"type":"json_object"}`, openai: true, accepts: `{}`},
		{format: `{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"integer"}}}`, openai: true, accepts: `42`},
		{format: `{"type":"json_schema"}`, openai: true, wantErr: `needs json_schema.schema`},
		{format: `{"type":"xml"}`, openai: true, wantErr: `response_format type "xml"`},
	} {
		parse := Format
		if tc.openai {
			parse = ResponseFormat
		}
		g, err := parse(context.Background(), []byte(tc.format))
		switch {
		case tc.wantErr != "":
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: got %v, want an error containing %q", tc.format, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.format, err)
		case tc.wantNil != (g == nil):
			t.Errorf("%s: grammar %v, want nil %v", tc.format, g, tc.wantNil)
		case g != nil:
			check(t, g, tc.accepts, "ok")
		}
	}
}
