package grammar

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// feed runs text through a byte-level constraint of g and reports how far
// it got: the bytes accepted, and whether the output could end there.
func feed(g *Grammar, text string) (accepted int, canEnd bool) {
	c := New(g, nil)
	for i := range len(text) {
		if c.AcceptBytes([]byte{text[i]}) != nil {
			return i, false
		}
	}
	return len(text), c.CanEnd()
}

// check asserts the outcome for text under g: "ok" (a complete value),
// "prefix" (all accepted, not complete) or "reject" (some byte refused).
func check(t *testing.T, g *Grammar, text, want string) {
	t.Helper()
	n, end := feed(g, text)
	got := "reject"
	if n == len(text) {
		got = map[bool]string{true: "ok", false: "prefix"}[end]
	}
	if got != want {
		t.Errorf("%q: got %s (accepted %d bytes), want %s", text, got, n, want)
	}
	if got == "ok" && !json.Valid([]byte(text)) {
		t.Errorf("%q: complete but not valid JSON", text)
	}
}

func TestJSONMatcher(t *testing.T) {
	g := JSON()
	for _, tc := range []struct{ text, want string }{
		{`{}`, "ok"},
		{`{"a":1}`, "ok"},
		{` {"a": [1, 2.5, -0, 1e10, 2E-3, true, false, null, "x", {}, []]}`, "ok"},
		{"{\n  \"a\": {\n    \"b\": [\n      1\n    ]\n  }\n}", "ok"},
		{`{"a":"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"}`, "ok"},
		{`{"é":"日本語 😀"}`, "ok"},
		{`{"a":1`, "prefix"},
		{`{"a":"abc`, "prefix"},
		{`{"a":"\u00`, "prefix"},
		{`{"a":1.`, "prefix"},
		{`{"a":1e+`, "prefix"},
		{`{`, "prefix"},
		{``, "prefix"},
		{`[1]`, "reject"}, // "json" is an object, as in Ollama
		{`"x"`, "reject"}, // likewise
		{`{}x`, "reject"}, // nothing after the value
		{`{} `, "reject"}, // not even whitespace
		{`{,}`, "reject"}, // no empty members
		{`{"a":1,}`, "reject"},
		{`{"a" 1}`, "reject"},
		{`{a:1}`, "reject"},
		{`{"a":01}`, "reject"},
		{`{"a":-}`, "reject"},
		{`{"a":1.e5}`, "reject"},
		{`{"a":.5}`, "reject"},
		{`{"a":+1}`, "reject"},
		{`{"a":tru}`, "reject"},
		{`{"a":nulll}`, "reject"},
		{`{"a":"\x"}`, "reject"},
		{`{"a":"\u00g0"}`, "reject"},
		{"{\"a\":\"\x01\"}", "reject"},         // raw control character
		{"{\"a\":\"\xff\"}", "reject"},         // not UTF-8
		{"{\"a\":\"\xc0\xaf\"}", "reject"},     // overlong
		{"{\"a\":\"\xed\xa0\x80\"}", "reject"}, // a surrogate
		{"{\"a\":\"\xf4\x90\x80\x80\"}", "reject"},
		{`{"a":[1 2]}`, "reject"},
		{`{"a":[1,]}`, "reject"},
		{`{"a":[1}`, "reject"},
	} {
		t.Run(tc.text, func(t *testing.T) {
			check(t, g, tc.text, tc.want)
		})
	}
}

func TestWhitespaceIsBounded(t *testing.T) {
	g := JSON()
	check(t, g, "{  }", "reject")   // two spaces
	check(t, g, "{\n\n}", "reject") // two newlines
	check(t, g, "{ \n}", "reject")  // a space then a newline
	check(t, g, "\n{\n\t}", "ok")   // a newline then a tab
	check(t, g, "{\n"+strings.Repeat(" ", maxIndent)+"}", "ok")
	check(t, g, "{\n"+strings.Repeat(" ", maxIndent+1)+"}", "reject")
	check(t, g, " {}", "ok")
	check(t, g, "  {}", "reject")
}

func TestNumberDigitsAreBounded(t *testing.T) {
	g := JSON()
	check(t, g, `{"a":`+strings.Repeat("9", maxIntDigits)+`}`, "ok")
	check(t, g, `{"a":`+strings.Repeat("9", maxIntDigits+1)+`}`, "reject")
	check(t, g, `{"a":0.`+strings.Repeat("5", maxFracDigits)+`}`, "ok")
	check(t, g, `{"a":0.`+strings.Repeat("5", maxFracDigits+1)+`}`, "reject")
	check(t, g, `{"a":1e999}`, "ok")
	check(t, g, `{"a":1e1000}`, "reject")
}

func TestDoneAndCanEnd(t *testing.T) {
	num := mustSchema(t, `{"type":"number"}`)
	c := New(num, nil)
	for _, s := range []string{"1", "2"} {
		if err := c.AcceptBytes([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if !c.CanEnd() || c.Done() {
		t.Errorf("after 12: CanEnd %v Done %v, want true false (more digits may follow)", c.CanEnd(), c.Done())
	}
	obj := New(JSON(), nil)
	for _, s := range []string{"{", `"k"`, ":", "[]"} {
		if obj.CanEnd() {
			t.Errorf("CanEnd before %q", s)
		}
		if err := obj.AcceptBytes([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := obj.AcceptBytes([]byte("}")); err != nil {
		t.Fatal(err)
	}
	if !obj.CanEnd() || !obj.Done() {
		t.Errorf("after {\"k\":[]}: CanEnd %v Done %v, want true true", obj.CanEnd(), obj.Done())
	}
}

// A token may split anything: every split of a valid text is accepted
// piece by piece, and AllowedBytes agrees with AcceptBytes.
func TestSplitsAnywhere(t *testing.T) {
	g := JSON()
	text := `{"kéy": ["日本\u00e9", 1.5e-3, {"x": null}], "b": true}`
	for i := 1; i < len(text); i++ {
		c := New(g, nil)
		for _, p := range []string{text[:i], text[i:]} {
			if !c.AllowedBytes([]byte(p)) {
				t.Fatalf("split at %d: %q not allowed", i, p)
			}
			if err := c.AcceptBytes([]byte(p)); err != nil {
				t.Fatalf("split at %d: %v", i, err)
			}
		}
		if !c.Done() {
			t.Fatalf("split at %d: not done", i)
		}
	}
}

func TestClone(t *testing.T) {
	c := New(JSON(), nil)
	if err := c.AcceptBytes([]byte(`{"a":[`)); err != nil {
		t.Fatal(err)
	}
	d := c.Clone()
	if err := c.AcceptBytes([]byte(`1]}`)); err != nil {
		t.Fatal(err)
	}
	if err := d.AcceptBytes([]byte(`"x","y"]}`)); err != nil {
		t.Fatal(err)
	}
	if !c.Done() || !d.Done() {
		t.Errorf("Done: %v %v", c.Done(), d.Done())
	}
}

func mustSchema(t testing.TB, s string) *Grammar {
	t.Helper()
	g, err := Schema(context.Background(), []byte(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return g
}

// Look-alike alternatives nested ten deep would hold 2^10 threads open;
// the bound keeps the step cheap and the input still matches.
func TestAlternativesAreBounded(t *testing.T) {
	defs := []string{`"l0":{"type":"integer"}`}
	for k := 1; k <= 10; k++ {
		item := fmt.Sprintf(`{"$ref":"#/$defs/l%d"}`, k-1)
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[{"type":"array","items":%s},{"type":"array","items":%s,"maxItems":5}]}`, k, item, item))
	}
	g := mustSchema(t, `{"$ref":"#/$defs/l10","$defs":{`+strings.Join(defs, ",")+`}}`)
	text := strings.Repeat("[", 10) + "1" + strings.Repeat("]", 10)
	c := New(g, nil)
	for i := range len(text) {
		if err := c.AcceptBytes([]byte{text[i]}); err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
		if len(c.cur) > maxThreads {
			t.Fatalf("byte %d: %d threads", i, len(c.cur))
		}
	}
	if !c.Done() {
		t.Fatalf("%s: not done", text)
	}
}
