package grammar

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// keywordCases runs tables of texts against schemas: ok (a complete
// value), prefix (all taken, not complete) or reject (a byte refused);
// every ok text must also pass the oracle.
func keywordCases(t *testing.T, cases []struct {
	name, schema string
	texts        map[string]string
}) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := mustSchema(t, tc.schema)
			for text, want := range tc.texts {
				check(t, g, text, want)
				if want == "ok" {
					if err := validate([]byte(tc.schema), []byte(text)); err != nil {
						t.Errorf("%s: the oracle refuses it: %v", text, err)
					}
				}
			}
		})
	}
}

func TestPattern(t *testing.T) {
	keywordCases(t, []struct {
		name, schema string
		texts        map[string]string
	}{
		{"anchored", `{"type":"string","pattern":"^[A-Z]{2}\\d{3}$"}`, map[string]string{
			`"AB123"`: "ok", `"AB1234"`: "reject", `"ab123"`: "reject", `"AB12`: "prefix", `"AB12"`: "reject"}},
		{"searched, as JSON Schema says", `{"type":"string","pattern":"cat"}`, map[string]string{
			`"concatenate"`: "ok", `"cat"`: "ok", `"dog"`: "reject", `"ca`: "prefix"}},
		{"start anchor only", `{"type":"string","pattern":"^ab"}`, map[string]string{
			`"abc"`: "ok", `"xab"`: "reject", `"ab"`: "ok"}},
		{"end anchor only", `{"type":"string","pattern":"b$"}`, map[string]string{
			`"aab"`: "ok", `"aba"`: "reject", `"b"`: "ok"}},
		{"groups and alternation", `{"type":"string","pattern":"^(foo|ba[rz])+(?:-\\d)?$"}`, map[string]string{
			`"foobaz"`: "ok", `"barfoo-7"`: "ok", `"fob"`: "reject", `"-1"`: "reject"}},
		{"quantifier ranges, lazy ones", `{"type":"string","pattern":"^a{2,3}?b*?c+$"}`, map[string]string{
			`"aac"`: "ok", `"aaabbc"`: "ok", `"ac"`: "reject", `"aaaac"`: "reject"}},
		{"perl classes", `{"type":"string","pattern":"^\\w+\\s\\d\\D\\W$"}`, map[string]string{
			`"ab_9 1x!"`: "ok", `"ab 12!"`: "reject", `"é 1x!"`: "reject"}},
		{"ECMA \\s takes Unicode spaces, \\S none", `{"type":"string","pattern":"^\\S\\s\\S$"}`, map[string]string{
			"\"a\u00a0b\"": "ok", "\"a\u2003b\"": "ok", `"a\tb"`: "ok", `"a b"`: "ok", "\"a\u00a0\u00a0\"": "reject"}},
		{"dot: any character but line terminators", `{"type":"string","pattern":"^a.b$"}`, map[string]string{
			`"axb"`: "ok", `"aéb"`: "ok", `"a😀b"`: "ok", `"a\nb"`: "reject", `"a\rb"`: "reject", "\"a\u2028b\"": "reject"}},
		{"negated class", `{"type":"string","pattern":"^[^a-c\"]+$"}`, map[string]string{
			`"xyz"`: "ok", `"日本"`: "ok", `"\n"`: "ok", `"xb"`: "reject", `"x\"y"`: "reject"}},
		{"Unicode ranges and \\u", `{"type":"string","pattern":"^[α-ω]+\\u0021$"}`, map[string]string{
			`"αβγ!"`: "ok", `"abc!"`: "reject", `"α"`: "reject"}},
		{"escapes in the JSON text", `{"type":"string","pattern":"^a\\\\\"\\n\\t\\u0001$"}`, map[string]string{
			`"a\\\"\n\t\u0001"`: "ok", `"a\\\"\n\t\u0002"`: "reject", `"a\\\"\n\u0009\u0001"`: "ok", `"a\\\"\n\t\u0001x"`: "reject"}},
		{"with length bounds, in code points", `{"type":"string","pattern":"^[a-zé]+$","minLength":2,"maxLength":3}`, map[string]string{
			`"ab"`: "ok", `"éé"`: "ok", `"éaé"`: "ok", `"a"`: "reject", `"abcd"`: "reject"}},
		{"\\x, and [ in a class a literal", `{"type":"string","pattern":"^\\x41[[:a]+$"}`, map[string]string{
			`"A:["`: "ok", `"Aa"`: "ok", `"A[[:"`: "ok", `"Ab"`: "reject", `"A"`: "reject"}},
		{"named group, escaped punctuation", `{"type":"string","pattern":"^(?<y>\\d{4})\\/\\.\\-$"}`, map[string]string{
			`"2024/.-"`: "ok", `"2024x.-"`: "reject"}},
	})
}

func TestPatternErrors(t *testing.T) {
	big := func(s string) string { return `{"type":"string","pattern":"` + s + `"}` }
	for _, tc := range []struct{ schema, want string }{
		{big(`^(?=a)a$`), `pattern "^(?=a)a$": invalid or unsupported Perl syntax`},
		{big(`^(a)\\1$`), `backreferences cannot be enforced`},
		{big(`^a\\b$`), `word boundaries`},
		{big(`\\Aab\\z`), `\A is not an anchor in JSON Schema's regular expressions (ECMA-262): write ^`},
		{big(`^a\\Z$`), `\Z is not an anchor`},
		{big(`^\\x{41}$`), `\x must be followed by two hex digits`},
		{big(`^[[:alpha:]]+$`), `POSIX classes such as [:alpha:] are not ECMA-262's`},
		{big(`^(?i)a$`), `inline flags such as (?i) are not ECMA-262's`},
		{big(`^(?P<n>a)$`), `(? must begin a group`},
		{big(`^\\p{L}+$`), `property escapes such as \p{L} (Unicode classes) are not supported`},
		{big(`^(?<x>a)\\k<x>$`), `backreferences cannot be enforced`},
		{big(`^[\\e]$`), `\e is not an escape of ECMA-262: write the letter e without the backslash`},
		{big(`^[\\S]$`), `\S inside a character class`},
		{big(`^[]$`), `the class [] matches nothing`},
		{big(`^(a$`), `missing closing )`},
		{`{"type":"string","pattern":3}`, `pattern is a number, want a string`},
		{`{"type":"string","pattern":"^[a-z]{5}$","maxLength":3}`, `no string matches it`},
		// the limits, each named
		{big(strings.Repeat("a", 2001)), `2001 bytes long, more than the 2000 a pattern may have`},
		{big(`^[^a]{1000}[^b]{1000}$`), `more than 20000 states`},
		{big(`^.*a.{15}$`), `more than 10000 states`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Schema(context.Background(), []byte(tc.schema))
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want an ErrFormat containing %q", tc.schema, err, tc.want)
			}
		})
	}
}

// A determinization that runs past the context's end stops.
func TestPatternCompileStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Schema(ctx, []byte(`{"type":"string","pattern":"^.*a.{11}$"}`)) // 4096+ states
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestStringFormats(t *testing.T) {
	keywordCases(t, []struct {
		name, schema string
		texts        map[string]string
	}{
		{"date", `{"type":"string","format":"date"}`, map[string]string{
			`"2024-02-29"`: "ok", `"2000-02-29"`: "ok", `"2023-02-29"`: "reject", `"1900-02-29"`: "reject",
			`"2024-04-31"`: "reject", `"2024-13-01"`: "reject", `"2024-1-01"`: "reject", `"0001-12-31"`: "ok"}},
		{"time", `{"type":"string","format":"time"}`, map[string]string{
			`"12:34:56Z"`: "ok", `"23:59:59.123+05:30"`: "ok", `"24:00:00Z"`: "reject", `"12:34:56"`: "reject",
			`"12:60:00Z"`: "reject", `"00:00:00-23:59"`: "ok"}},
		{"date-time", `{"type":"string","format":"date-time"}`, map[string]string{
			`"2024-01-02T03:04:05Z"`: "ok", `"2024-01-02t03:04:05Z"`: "reject", `"2024-01-02 03:04:05Z"`: "reject",
			`"2024-02-30T03:04:05Z"`: "reject", `"2024-01-02T03:04:05.5-01:00"`: "ok"}},
		{"uuid", `{"type":"string","format":"uuid"}`, map[string]string{
			`"123e4567-e89b-12d3-a456-426614174000"`: "ok", `"123E4567-E89B-12D3-A456-426614174000"`: "ok",
			`"123e4567e89b12d3a456426614174000"`: "reject", `"123e4567-e89b-12d3-a456-42661417400g"`: "reject"}},
		{"email", `{"type":"string","format":"email"}`, map[string]string{
			`"first.last+tag@mail.example.org"`: "ok", `"a@b.co"`: "ok", `"a@b"`: "reject", `"a@@b.com"`: "reject",
			`".a@b.com"`: "reject", `"a@-b.com"`: "reject", `"a@b.c0m"`: "reject"}},
		{"unknown formats are annotations", `{"type":"string","format":"uri"}`, map[string]string{`"not a uri"`: "ok"}},
		{"a format with a pattern: both", `{"type":"string","format":"date","pattern":"^2024"}`, map[string]string{
			`"2024-05-06"`: "ok", `"2023-05-06"`: "reject"}},
	})
}

// Every day of four years, and every day number 00-39 of every month
// number 00-19: accepted exactly when the calendar has it.
func TestDateFormatIsTheCalendar(t *testing.T) {
	g := mustSchema(t, `{"type":"string","format":"date"}`)
	for _, y := range []int{1900, 2000, 2023, 2024} {
		for m := range 20 {
			for d := range 40 {
				s := fmt.Sprintf("%04d-%02d-%02d", y, m, d)
				_, err := time.Parse(time.DateOnly, s)
				n, end := feed(g, `"`+s+`"`)
				if got := n == len(s)+2 && end; got != (err == nil) {
					t.Errorf("%s: accepted %v, a date %v", s, got, err == nil)
				}
			}
		}
	}
}

// Numbers under bounds, checked exactly against rational arithmetic over a
// grid of texts: every integer from -1200 to 1200, and decimals with up
// to three fraction digits around the bounds.
func TestNumberBounds(t *testing.T) {
	schemas := []string{
		`{"type":"integer","minimum":10,"maximum":20}`,
		`{"type":"integer","minimum":-5,"maximum":120}`,
		`{"type":"integer","minimum":-1000,"maximum":-3}`,
		`{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":100}`,
		`{"type":"integer","minimum":2.5,"maximum":7.5}`,
		`{"type":"integer","minimum":0,"maximum":0}`,
		`{"type":"integer","minimum":999}`,
		`{"type":"integer","maximum":-999}`,
		`{"type":"number","minimum":0,"maximum":1}`,
		`{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}`,
		`{"type":"number","minimum":-2.5,"maximum":2.5}`,
		`{"type":"number","minimum":0.125,"exclusiveMaximum":0.75}`,
		`{"type":"number","exclusiveMinimum":-1.5,"maximum":-0.25}`,
		`{"type":"number","minimum":0,"exclusiveMinimum":true,"maximum":10}`,
		`{"type":"number","exclusiveMinimum":5,"minimum":6}`,
		`{"type":"number","minimum":1e2,"maximum":1.5E2}`,
	}
	var texts []string
	for i := -1200; i <= 1200; i++ {
		texts = append(texts, fmt.Sprint(i))
	}
	for i := -3000; i <= 3000; i++ {
		r := big.NewRat(int64(i), 1000)
		texts = append(texts, r.FloatString(3), strings.TrimRight(strings.TrimRight(r.FloatString(3), "0"), "."))
	}
	texts = append(texts, "-0", "-0.0", "0.0", "1.0", "10.00", "150.0", "100.000")
	for _, schema := range schemas {
		g := mustSchema(t, schema)
		for _, text := range texts {
			inRange := validate([]byte(schema), []byte(text)) == nil
			n, end := feed(g, text)
			if got := n == len(text) && end; got != inRange {
				t.Errorf("%s: %s accepted %v, within the bounds %v", schema, text, got, inRange)
			}
		}
	}
}

func TestNumberBoundErrors(t *testing.T) {
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"integer","minimum":5,"maximum":4}`, `no number is at once above the minimum 5 and below the maximum 4`},
		{`{"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5}`, `above the minimum 5 and below the maximum 4`},
		{`{"type":"number","minimum":1e20}`, `no number of at most 16 integer digits`},
		{`{"type":"number","minimum":"1"}`, `minimum is a string, want a number`},
	} {
		_, err := Schema(context.Background(), []byte(tc.schema))
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an ErrFormat containing %q", tc.schema, err, tc.want)
		}
	}
}

func TestObjectAndArrayKeywords(t *testing.T) {
	keywordCases(t, []struct {
		name, schema string
		texts        map[string]string
	}{
		{"additionalProperties schema beside properties", `{"type":"object","properties":{"a":{"type":"integer"},
			"ab":{"type":"null"}},"required":["a"],"additionalProperties":{"type":"string"}}`, map[string]string{
			`{"a":1,"b":"x"}`: "ok", `{"a":1,"ab":null,"abc":"x","a b":""}`: "ok", `{"a":1,"a":"x"}`: "reject",
			`{"a":1,"ab":"x"}`: "reject", `{"b":"x","a":1}`: "reject", `{"a":1,"b":2}`: "reject", `{"a":1,"":"x"}`: "ok"}},
		{"additionalProperties true beside properties", `{"properties":{"k":{"const":1}},"additionalProperties":true}`,
			map[string]string{`{"k":1,"x":[{}]}`: "ok", `{"x":null}`: "ok", `{"k":1,"k":1}`: "reject"}},
		{"prefixItems, then items", `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":{"type":"boolean"}}`,
			map[string]string{`[1,"x",true,false]`: "ok", `[1]`: "ok", `[]`: "ok", `["x"]`: "reject", `[1,"x",2]`: "reject"}},
		{"prefixItems without more", `{"type":"array","prefixItems":[{"type":"integer"},{"type":"string"}],"items":false,"minItems":2}`,
			map[string]string{`[1,"x"]`: "ok", `[1]`: "reject", `[1,"x",2]`: "reject"}},
		{"items as a list (draft 7)", `{"type":"array","items":[{"const":"a"}],"additionalItems":{"type":"null"}}`,
			map[string]string{`["a",null,null]`: "ok", `["a","a"]`: "reject", `[null]`: "reject"}},
		{"min and maxProperties of a map", `{"type":"object","additionalProperties":{"type":"integer"},"minProperties":2,"maxProperties":3}`,
			map[string]string{`{"a":1,"b":2}`: "ok", `{"a":1,"b":2,"c":3}`: "ok", `{"a":1}`: "reject", `{"a":1,"a":2}`: "reject",
				`{"a":1,"b":2,"c":3,"d":4}`: "reject"}},
		{"min and maxProperties of declared properties", `{"properties":{"a":{"type":"null"},"b":{"type":"null"},"c":{"type":"null"}},
			"minProperties":1,"maxProperties":2}`, map[string]string{`{"b":null}`: "ok", `{"a":null,"c":null}`: "ok", `{}`: "reject",
			`{"a":null,"b":null,"c":null}`: "reject"}},
		{"keys of a free object are distinct", `{"type":"object"}`, map[string]string{`{"a":1,"b":{"a":2}}`: "ok", `{"a":1,"a":2}`: "reject",
			`{"é":1,"\u00e9":2}`: "reject"}},
	})
	for _, tc := range []struct{ schema, want string }{
		{`{"properties":{"a":{}},"required":["a"],"maxProperties":0}`, `1 required properties, more than maxProperties 0`},
		{`{"properties":{"a":{}},"minProperties":2}`, `minProperties 2 is more than the 1 properties allowed`},
		{`{"type":"array","prefixItems":[{}],"items":false,"minItems":2}`, `items false after 1 items with minItems 2`},
		{`{"$defs":{"n":{"properties":{"n":{"$ref":"#/$defs/n"}},"required":["n"]}},"$ref":"#/$defs/n"}`, `no finite value matches it`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := Schema(context.Background(), []byte(tc.schema))
			if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want an ErrFormat containing %q", tc.schema, err, tc.want)
			}
		})
	}
}

// No dead ends: random walks over allowed bytes through schemas whose
// branches can fail late (bounds, patterns, property counts) always find
// a next byte until the value can end, and every end validates.
func TestNoDeadEnds(t *testing.T) {
	for _, schema := range []string{
		`{"type":"array","items":{"type":"number","exclusiveMinimum":0.25,"maximum":0.5}}`,
		`{"type":"array","items":{"type":"integer","minimum":-15,"maximum":1234}}`,
		`{"type":"array","items":{"anyOf":[{"type":"string","pattern":"^(aa|bbbbb)$","maxLength":3},{"type":"string","pattern":"^ab+$","minLength":3}]}}`,
		`{"type":"object","properties":{"a":{"type":"null"},"b":{"type":"null"}},"additionalProperties":{"type":"integer","maximum":9,"minimum":0},"minProperties":3,"maxProperties":4}`,
	} {
		g := mustSchema(t, schema)
		rng := rand.New(rand.NewPCG(uint64(len(schema)), 5))
		for run := range 200 {
			c := New(g, nil)
			var out []byte
			for step := 0; step < 300; step++ {
				if c.CanEnd() {
					if err := validate([]byte(schema), out); err != nil {
						t.Fatalf("%s: %q: %v", schema, out, err)
					}
					if rng.IntN(3) == 0 {
						break
					}
				}
				var allowed []byte
				for b := range 256 {
					if c.AllowedBytes([]byte{byte(b)}) {
						allowed = append(allowed, byte(b))
					}
				}
				if len(allowed) == 0 {
					if !c.CanEnd() {
						t.Fatalf("%s run %d: stuck after %q", schema, run, out)
					}
					break
				}
				b := allowed[rng.IntN(len(allowed))]
				if err := c.AcceptBytes([]byte{b}); err != nil {
					t.Fatal(err)
				}
				out = append(out, b)
			}
		}
	}
}

// Under a limit, strings without maxLength end in time: a walk that takes
// the letter a whenever it may writes strings until the limit closes
// them, and the output is complete at the last token.
func TestLimitEndsStrings(t *testing.T) {
	pieces := make([][]byte, 257)
	for i := range 256 {
		pieces[i] = []byte{byte(i)}
	}
	toks := NewTokens(pieces, []int32{256})
	for _, tc := range []struct {
		schema string
		limit  int
		want   string
	}{
		{`{"type":"string"}`, 6, `"aaaa"`},
		{`{"type":"array","items":{"type":"string"},"minItems":2}`, 12, `["aaaaa",""]`},
		{`{"type":"object","properties":{"x":{"type":"string"},"y":{"type":"string","pattern":"^a+$"}},"required":["x","y"]}`, 20, `{"x":"aaaa","y":"a"}`},
	} {
		c := New(mustSchema(t, tc.schema), toks)
		c.Limit(tc.limit)
		logits := make([]float32, 257) // a first, then what opens or closes, whitespace last
		for b, l := range map[byte]float32{'a': 10, '"': 5, '[': 4, '{': 4, ',': 3, ':': 3, ' ': -10, '\n': -10, '\t': -10} {
			logits[b] = l
		}
		var out []byte
		for range tc.limit {
			id, ok := c.Best(logits)
			if !ok {
				t.Fatalf("%s: nothing allowed after %q", tc.schema, out)
			}
			if err := c.Accept(id); err != nil {
				t.Fatal(err)
			}
			out = append(out, pieces[id]...)
		}
		if string(out) != tc.want || !c.CanEnd() {
			t.Errorf("%s under %d tokens: %q (complete %v), want %q", tc.schema, tc.limit, out, c.CanEnd(), tc.want)
		}
	}
}
