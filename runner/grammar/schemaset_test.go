package grammar

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// schemaSet reads testdata/schemas: Pydantic- and Zod-shaped schemas
// using every keyword the grammar enforces, by file name.
func schemaSet(t testing.TB) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "schemas", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	set := map[string][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		set[strings.TrimSuffix(filepath.Base(f), ".json")] = data
	}
	if len(set) < 40 {
		t.Fatalf("%d schemas in testdata/schemas, want at least 40", len(set))
	}
	return set
}

// TestSchemaSetUnderLimit walks random allowed tokens of a BPE-shaped
// vocabulary through every schema of the set, under a token limit from
// the schema's shortest value up: every output must be complete and valid
// by the time the limit runs out, though the walk prefers tokens that do
// not close anything (so strings without maxLength run on until the limit
// makes them end).
func TestSchemaSetUnderLimit(t *testing.T) {
	toks := synthVocab(3000)
	eos := int32(toks.Size() - 1)
	for name, schema := range schemaSet(t) {
		g := mustSchema(t, string(schema))
		short := int(g.ml[g.doc])
		for _, limit := range []int{short, short + 3, short + 40, 300} {
			rng := rand.New(rand.NewPCG(uint64(limit), uint64(len(name))))
			for run := range 2 {
				c := New(g, toks)
				c.Limit(limit)
				var out []byte
				for step := 0; ; step++ {
					set := c.allowed()
					n := 0
					for _, w := range set {
						n += popcount(w)
					}
					if n == 0 {
						t.Fatalf("%s limit %d run %d: nothing allowed after %q", name, limit, run, out)
					}
					id := pick(set, rng.IntN(n))
					// prefer a token that neither closes nor ends, if one is allowed
					for try := 0; try < 8 && (id == eos || bytes.ContainsAny(toks.pieces[id], `"]}`)); try++ {
						id = pick(set, rng.IntN(n))
					}
					if !c.Allowed(id) {
						t.Fatalf("%s: token %d %q in the mask but not Allowed after %q", name, id, toks.pieces[id], out)
					}
					if err := c.Accept(id); err != nil {
						t.Fatal(err)
					}
					if id == eos {
						break
					}
					out = append(out, toks.pieces[id]...)
					if step+1 == limit {
						if !c.CanEnd() {
							t.Fatalf("%s limit %d run %d: %d tokens and not complete: %q", name, limit, run, limit, out)
						}
						break
					}
				}
				if err := validate(schema, out); err != nil {
					t.Fatalf("%s limit %d run %d: %v in %s", name, limit, run, err, out)
				}
			}
		}
	}
}

func popcount(w uint64) int {
	n := 0
	for ; w != 0; w &= w - 1 {
		n++
	}
	return n
}
