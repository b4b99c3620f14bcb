package template

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"folio/internal/fixtures"
)

// goldenCase is one rendering of ../shared/templates: a template, a case of
// conversations.json, and the reference output (or error) in expected/.
type goldenCase struct {
	template, name string
	src            string
	ctx            Context
	want           string
	wantErr        bool
}

// fixedNow is the date render_reference.py pins strftime_now to.
var fixedNow = time.Date(2024, 7, 26, 0, 0, 0, 0, time.UTC)

// loadGolden reads ../shared/templates in place.
func loadGolden(t testing.TB) []goldenCase {
	t.Helper()
	dir := filepath.Join(fixtures.Shared(t), "templates")
	data, err := os.ReadFile(filepath.Join(dir, "conversations.json"))
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	v, err := DecodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	spec := v.(Object)
	templates, _ := spec.Get("templates")
	cases, _ := spec.Get("cases")
	var out []goldenCase
	for _, tm := range templates.(Object) {
		tokens := tm.Value.(Object)
		src, err := os.ReadFile(filepath.Join(dir, tm.Key+".jinja"))
		if err != nil {
			t.Fatal(err)
		}
		withTools, _ := tokens.Get("tools")
		for _, c := range cases.([]any) {
			co := c.(Object)
			name, _ := co.Get("name")
			if name == "tools" && withTools != true {
				continue
			}
			// The case plus the template's tokens, as render_reference.py passes them.
			full := append(Object{}, co...)
			for _, k := range []string{"bos_token", "eos_token"} {
				tok, _ := tokens.Get(k)
				full = append(full, Member{k, tok})
			}
			ctx, err := CaseContext(full)
			if err != nil {
				t.Fatalf("%s/%s: %v", tm.Key, name, err)
			}
			ctx.Now = fixedNow
			want, err := os.ReadFile(filepath.Join(dir, "expected", tm.Key+"__"+name.(string)+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			g := goldenCase{template: tm.Key, name: name.(string), src: string(src), ctx: ctx, want: string(want)}
			if msg, ok := strings.CutPrefix(g.want, "ERROR: "); ok {
				g.want, g.wantErr = msg, true
			}
			out = append(out, g)
		}
	}
	if len(out) != 92 {
		t.Fatalf("golden: %d cases, want 92", len(out))
	}
	return out
}

// TestGolden renders every real template over every case and compares with
// the reference renderings byte for byte; where the reference raised, the
// error message must be the same.
func TestGolden(t *testing.T) {
	for _, g := range loadGolden(t) {
		t.Run(g.template+"/"+g.name, func(t *testing.T) {
			got, err := Render(g.src, g.ctx)
			if g.wantErr {
				if err == nil {
					t.Fatalf("rendered %q, want error %q", got, g.want)
				}
				if err.Error() != g.want {
					t.Fatalf("error %q, want %q", err, g.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != g.want {
				t.Fatalf("differs\n got: %q\nwant: %q", got, g.want)
			}
		})
	}
}

// TestGoldenTypedMessages renders the same cases from typed Messages (the
// way the server builds them) instead of the raw JSON objects.
func TestGoldenTypedMessages(t *testing.T) {
	for _, g := range loadGolden(t) {
		ctx := g.ctx
		ctx.Messages = nil
		for _, m := range g.ctx.Messages {
			ctx.Messages = append(ctx.Messages, typedMessage(t, m.Raw))
		}
		got, err := Render(g.src, ctx)
		if g.wantErr {
			if err == nil || err.Error() != g.want {
				t.Errorf("%s/%s: got %q, %v; want error %q", g.template, g.name, got, err, g.want)
			}
			continue
		}
		if err != nil || got != g.want {
			t.Errorf("%s/%s: got %q, %v\nwant %q", g.template, g.name, got, err, g.want)
		}
	}
}

func typedMessage(t *testing.T, o Object) Message {
	var m Message
	for _, kv := range o {
		switch kv.Key {
		case "role":
			m.Role = kv.Value.(string)
		case "content":
			m.Content = kv.Value
		case "tool_call_id":
			m.ToolCallID = kv.Value.(string)
		case "name":
			m.ToolName = kv.Value.(string)
		case "tool_calls":
			for _, c := range kv.Value.([]any) {
				co := c.(Object)
				fn, _ := co.Get("function")
				id, _ := co.Get("id")
				name, _ := fn.(Object).Get("name")
				args, _ := fn.(Object).Get("arguments")
				m.ToolCalls = append(m.ToolCalls, ToolCall{ID: id.(string), Name: name.(string), Arguments: args})
			}
		default:
			t.Fatalf("unexpected message key %q", kv.Key)
		}
	}
	return m
}

func TestGoldenErrorKinds(t *testing.T) {
	for _, g := range loadGolden(t) {
		if !g.wantErr {
			continue
		}
		_, err := Render(g.src, g.ctx)
		want := ErrType
		if strings.Contains(g.want, "not supported") {
			want = ErrRaised
		}
		if !errors.Is(err, want) {
			t.Errorf("%s/%s: error %v is not %v", g.template, g.name, err, want)
		}
	}
}

// TestConcurrentRender renders one parsed Template from many goroutines, as
// the server does (run with -race).
func TestConcurrentRender(t *testing.T) {
	cases := loadGolden(t)
	parsed := map[string]*Template{}
	for _, g := range cases {
		if parsed[g.template] == nil {
			tm, err := Parse(g.src)
			if err != nil {
				t.Fatal(err)
			}
			parsed[g.template] = tm
		}
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(cases))
	for range 8 {
		wg.Go(func() {
			for _, g := range cases {
				got, err := parsed[g.template].Render(g.ctx)
				if (err != nil) != g.wantErr || (err == nil && got != g.want) {
					errs <- g.template + "/" + g.name
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s differs when rendered concurrently", e)
	}
}
