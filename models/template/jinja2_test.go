package template

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// TestJinja2Cases renders small templates that exercise one feature each
// (operators, filters, tests, methods, whitespace control, scoping, errors)
// and compares with what Python's jinja2 3.1.2 gives in transformers'
// environment: testdata/jinja2_cases.json, made from jinja2_cases.txt by
// jinja2_cases.py.
func TestJinja2Cases(t *testing.T) {
	data, err := os.ReadFile("testdata/jinja2_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Src  string          `json:"src"`
		Vars json.RawMessage `json:"vars"`
		Want string          `json:"want"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		ctx := Context{Now: time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC), Vars: map[string]any{}}
		vars, err := DecodeJSON(c.Vars)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range vars.(Object) {
			ctx.Vars[m.Key] = m.Value
		}
		got, err := Render(c.Src, ctx)
		if err != nil {
			got = "ERROR: " + err.Error()
		}
		if got != c.Want {
			t.Errorf("case %d: %q\n got: %q\nwant: %q", i, c.Src, got, c.Want)
		}
	}
}
