package gotemplate

import (
	"context"
	"errors"
	"testing"
	"time"

	ollamatemplate "github.com/ollama/ollama/template"

	jinja "folio/models/template"
)

// FuzzRender: any text parses as a bounded Go template or is refused, and
// renders within its limits without panicking.
func FuzzRender(f *testing.F) {
	for _, s := range sameAsOllama {
		f.Add(s)
	}
	f.Add(exponential(3))
	f.Add(`{{ $s := "ab" }}{{ range 100000 }}{{ $s = printf "%s%[1]s%-9q" $s }}{{ end }}{{ .Messages }}`)
	f.Add(`{{ range $i, $m := .Messages }}{{ range $.Tools }}{{ js (html (urlquery $m)) }}{{ end }}{{ end }}`)
	lim := jinja.Limits{MaxSteps: 200_000, MaxOutput: 1 << 16, MaxDepth: 40, Timeout: 2 * time.Second}
	f.Fuzz(func(t *testing.T, src string) {
		tm, err := Parse(src)
		if err != nil {
			return
		}
		tm.Limits = lim
		for _, msgs := range conversations {
			out, err := tm.Execute(context.Background(), ollamatemplate.Values{Messages: clone(msgs), Tools: weatherTools})
			if len(out) > lim.MaxOutput {
				t.Fatalf("%d bytes of output, over the limit", len(out))
			}
			if errors.Is(err, jinja.ErrInternal) {
				t.Fatal(err)
			}
		}
	})
}
