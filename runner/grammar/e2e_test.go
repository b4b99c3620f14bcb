package grammar

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
	"folio/models/tokenizer"
)

func openTokenizer(t testing.TB, name string) *tokenizer.Tokenizer {
	t.Helper()
	f, err := gguf.Open(fixtures.Model(t, name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := tokenizer.New(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// e2eSchemas are the formats generated end to end. Strings and arrays are
// bounded where random tokens would otherwise run long.
var e2eSchemas = []struct{ name, schema string }{
	{"json", `"json"`},
	{"person", `{"type":"object","properties":{
		"name":{"type":"string","minLength":1,"maxLength":12},
		"age":{"type":"integer"},
		"email":{"type":["string","null"],"maxLength":20},
		"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":4},
		"score":{"type":"number"},
		"ok":{"type":"boolean"}},
		"required":["name","age","ok"]}`},
	{"tree", `{"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
		"v":{"type":"integer"},
		"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},
		"required":["v"]}}}`},
	{"union", `{"type":"array","minItems":1,"maxItems":5,"items":{"anyOf":[
		{"type":"object","properties":{"k":{"const":"x"},"n":{"type":"number"}},"required":["k","n"]},
		{"type":"object","properties":{"k":{"const":"y"},"s":{"type":"string","maxLength":5}},"required":["k"]},
		{"type":"integer"},{"type":"null"}]}}`},
	{"scalar", `{"type":"string","maxLength":8}`},
	{"map", `{"type":"object","additionalProperties":{"type":"boolean"}}`},
}

// TestGenerateRandom samples from random logits under each format with a
// real vocabulary, 200 documents in all: every one must end with an end
// token within the budget, parse, and validate against its schema, and the
// end token must be allowed exactly when the text so far is complete.
func TestGenerateRandom(t *testing.T) {
	const budget = 3000
	for _, vocab := range []string{"ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-spm.gguf"} {
		tok := openTokenizer(t, vocab)
		toks := TokensOf(tok)
		eos := tok.Vocab().EOG[0]
		for si, sc := range e2eSchemas {
			g, err := Format(context.Background(), []byte(sc.schema))
			if err != nil {
				t.Fatal(err)
			}
			schema := []byte(sc.schema)
			if sc.name == "json" {
				schema = []byte(`{"type":"object"}`)
			}
			t.Run(vocab+"/"+sc.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(si), 7))
				base := make([]float32, toks.Size())
				for i := range base {
					base[i] = float32(rng.NormFloat64())
				}
				logits := make([]float32, len(base))
				// Tokens that close something get a lift, as a model's
				// would, so that free-form strings end within the budget.
				var closers []int32
				for id, p := range toks.pieces {
					if bytes.ContainsAny(p, `"]}`) {
						closers = append(closers, int32(id))
					}
				}
				maxLen := 0
				for run := range 200 / len(e2eSchemas) / 2 {
					c := New(g, toks)
					var out []byte
					steps := 0
					for ; steps < budget; steps++ {
						// random logits: the base vector rotated by a random offset
						off := rng.IntN(len(base))
						copy(logits, base[off:])
						copy(logits[len(base)-off:], base[:off])
						for _, id := range closers {
							logits[id] += 2
						}
						if c.Allowed(eos) {
							if err := validate(schema, out); err != nil || !json.Valid(out) {
								t.Fatalf("run %d: end allowed after %q: %v", run, out, err)
							}
						}
						var id int32
						if run%2 == 0 {
							var ok bool
							if id, ok = c.Best(logits); !ok {
								t.Fatalf("run %d: no token allowed after %q", run, out)
							}
						} else { // the engine's way: sample, check, mask and resample
							id = argmax(logits)
							if !c.Allowed(id) {
								masked, n := c.Masked(logits)
								if n == 0 {
									t.Fatalf("run %d: no token allowed after %q", run, out)
								}
								id = argmax(masked)
							}
						}
						if err := c.Accept(id); err != nil {
							t.Fatalf("run %d: %v after %q", run, err, out)
						}
						if id == eos {
							break
						}
						out = append(out, toks.pieces[id]...)
					}
					if steps == budget {
						t.Fatalf("run %d: no end within %d tokens: %.200q...", run, budget, out)
					}
					if err := validate(schema, out); err != nil {
						t.Fatalf("run %d: %v in %s", run, err, out)
					}
					maxLen = max(maxLen, steps)
					if run == 0 {
						t.Logf("%q", out)
					}
				}
				t.Logf("longest: %d tokens", maxLen)
			})
		}
	}
}

func argmax(logits []float32) int32 {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// The mask agrees with Allowed token by token, in states met on the way
// through a document.
func TestMaskMatchesAllowed(t *testing.T) {
	tok := openTokenizer(t, "ggml-vocab-gpt-2.gguf")
	toks := TokensOf(tok)
	g := mustSchema(t, e2eSchemas[1].schema)
	c := New(g, toks)
	text := `{"name": "Ada \u00e9😀", "age": 36, "email": null, "tags": ["a", "c"], "score": -1.5e3, "ok": true}`
	ids := tok.Encode(text, tokenizer.EncodeOptions{})
	logits := make([]float32, toks.Size()+7) // padded output rows
	for i, id := range ids {
		masked, n := c.Masked(logits)
		count := 0
		for j := range masked {
			allowed := j < toks.Size() && c.Allowed(int32(j))
			if allowed != (masked[j] == 0) {
				t.Fatalf("token %d of %q: mask %v, Allowed %v for %d %q", i, text, masked[j], allowed, j, toks.pieces[min(j, toks.Size()-1)])
			}
			if allowed {
				count++
			}
		}
		if count != n || !c.Allowed(id) {
			t.Fatalf("token %d: count %d, n %d, next allowed %v", i, count, n, c.Allowed(id))
		}
		if err := c.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !c.Done() || !c.Allowed(tok.Vocab().EOG[0]) {
		t.Fatalf("not done after %q", text)
	}
}
