package template

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestHostile renders templates built to hang, exhaust memory or overflow
// the stack; each must stop with an error, quickly.
func TestHostile(t *testing.T) {
	deep := strings.Repeat("(", 5000) + "1" + strings.Repeat(")", 5000)
	nestedIfs := strings.Repeat("{% if true %}", 5000) + strings.Repeat("{% endif %}", 5000)
	cases := []struct {
		name, src string
		kind      error
		msg       string // a part of the message
	}{
		{"recursive macro", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, ErrLimit, "nest deeper than 100"},
		{"mutual recursion", `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`, ErrLimit, "nest deeper"},
		{"recursive loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`, ErrLimit, "nest deeper"},
		{"caller recursion", `{% macro m() %}{% call m() %}{% endcall %}{{ caller() }}{% endmacro %}{% call m() %}x{% endcall %}`, ErrLimit, "nest deeper"},
		{"long loop", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, ErrLimit, "steps"},
		{"huge range", `{{ range(1000000000)|length }}`, ErrLimit, "Range too big"},
		{"string doubling", `{% set ns = namespace(s="ab") %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, ErrLimit, "limit"},
		{"string repetition", `{{ "a" * 1000000000 }}`, ErrLimit, "limit"},
		{"list repetition", `{{ ([1] * 100000) * 100000 }}`, ErrLimit, "steps"},
		{"replace blowup", `{% set s = "a" * 100000 %}{{ s.replace("a", s) }}`, ErrLimit, "limit"},
		{"join blowup", `{{ range(100000)|join("x" * 100000) }}`, ErrLimit, "limit"},
		{"format width", `{{ "%999999999s" % "x" }}`, ErrLimit, "limit"},
		{"center width", `{{ "x".center(1000000000) }}`, ErrLimit, "limit"},
		{"indent width", `{{ "a\nb"|indent(1000000000) }}`, ErrLimit, "limit"},
		{"exponential print", `{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x }}`, ErrLimit, ""},
		{"exponential json", `{% set ns = namespace(x=[1]) %}{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x|tojson }}`, ErrLimit, ""},
		{"exponential compare", `{% set ns = namespace(x=[1], y=[1]) %}{% for i in range(40) %}{% set ns.x = [ns.x, ns.x] %}{% set ns.y = [ns.y, ns.y] %}{% endfor %}{{ ns.x == ns.y }}`, ErrLimit, ""},
		{"deep value", `{% set ns = namespace(x=1) %}{% for i in range(2000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}`, ErrLimit, "recursion depth"},
		{"deep expression", "{{ " + deep + " }}", ErrLimit, "too deeply"},
		{"deep blocks", nestedIfs, ErrLimit, "too deeply"},
		{"include", `{% include "/etc/passwd" %}`, ErrType, "no loader"},
		{"import", `{% import "x.j2" as x %}{{ x }}`, ErrType, "no loader"},
		{"raise", `{{ raise_exception("Only user and assistant roles are supported!") }}`, ErrRaised, "Only user and assistant roles are supported!"},
		{"mutation", `{% set l = [] %}{{ l.append(1) }}`, ErrUndefined, "access to attribute 'append' of 'list' object is unsafe."},
		{"int overflow", `{{ 2 ** 64 }}`, ErrLimit, "integer overflow"},
		{"syntax", `{% for x in %}`, ErrSyntax, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, err := Render(c.src, Context{})
			if err == nil {
				t.Fatalf("rendered %d bytes, want an error", len(out))
			}
			if !errors.Is(err, c.kind) {
				t.Errorf("error %q is not %v", err, c.kind)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if d := time.Since(start); d > 15*time.Second { // generous: CI runs packages in parallel
				t.Errorf("took %v", d)
			}
		})
	}
}

func TestOutputLimit(t *testing.T) {
	tm, err := Parse(`{% for i in range(100) %}0123456789{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	tm.Limits.MaxOutput = 500
	if _, err := tm.Render(Context{}); !errors.Is(err, ErrLimit) {
		t.Fatalf("error %v, want ErrLimit", err)
	}
	tm.Limits.MaxOutput = 1000
	out, err := tm.Render(Context{})
	if err != nil || len(out) != 1000 {
		t.Fatalf("got %d bytes, %v", len(out), err)
	}
}

func TestTimeout(t *testing.T) {
	tm, err := Parse(`{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}`)
	if err != nil {
		t.Fatal(err)
	}
	tm.Limits = Limits{MaxSteps: 1 << 62, MaxOutput: 1 << 40, MaxDepth: 100, Timeout: 50 * time.Millisecond}
	start := time.Now()
	if _, err := tm.Render(Context{}); !errors.Is(err, ErrLimit) {
		t.Fatalf("error %v, want ErrLimit", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tm.Limits.Timeout = 0
	if _, err := tm.Execute(ctx, Context{}); !errors.Is(err, ErrLimit) {
		t.Fatalf("cancelled: error %v, want ErrLimit", err)
	}
}
