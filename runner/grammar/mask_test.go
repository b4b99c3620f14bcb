package grammar

import (
	"math/bits"
	"math/rand/v2"
	"testing"
)

// TestMaskEqualsAllowed walks random allowed tokens of a synthetic
// vocabulary through several grammars and checks, at every step, that the
// mask (the trie walk with its plain-text shortcut, and the cache) allows
// exactly the tokens Allowed does, one by one.
func TestMaskEqualsAllowed(t *testing.T) {
	toks := synthVocab(5_000)
	eos := int32(toks.Size() - 1)
	grammars := map[string]*Grammar{
		"json":    JSON(),
		"person":  mustSchema(t, e2eSchemas[1].schema),
		"union":   mustSchema(t, e2eSchemas[3].schema),
		"strings": mustSchema(t, `{"type":"array","items":{"anyOf":[{"type":"string","maxLength":3},{"type":"string","minLength":2,"maxLength":9}]}}`),
		"short":   mustSchema(t, `{"type":"string","maxLength":4}`),
	}
	logits := make([]float32, toks.Size())
	for name, g := range grammars {
		rng := rand.New(rand.NewPCG(3, uint64(len(name))))
		for run := range 3 {
			c := New(g, toks)
			for step := 0; step < 60; step++ {
				masked, n := c.Masked(logits)
				count := 0
				for id := range masked {
					allowed := c.Allowed(int32(id))
					if allowed != (masked[id] == 0) {
						t.Fatalf("%s run %d step %d: token %d %q: mask %v, Allowed %v", name, run, step, id, toks.pieces[id], masked[id], allowed)
					}
					if allowed {
						count++
					}
				}
				if count != n || n == 0 {
					t.Fatalf("%s run %d step %d: %d allowed, Masked says %d", name, run, step, count, n)
				}
				id := pick(c.allowed(), rng.IntN(n))
				if err := c.Accept(id); err != nil {
					t.Fatal(err)
				}
				if id == eos {
					break
				}
			}
		}
	}
}

// pick returns the k-th set bit of set.
func pick(set []uint64, k int) int32 {
	for w, word := range set {
		if c := bits.OnesCount64(word); k >= c {
			k -= c
			continue
		}
		for ; k > 0; k-- {
			word &= word - 1
		}
		return int32(w<<6 | bits.TrailingZeros64(word))
	}
	return -1
}

// After the end token nothing is allowed, though the state it ended in
// had a cached mask.
func TestNothingAfterEnd(t *testing.T) {
	toks := synthVocab(1000)
	eos := int32(toks.Size() - 1)
	c := New(mustSchema(t, `{"type":"integer"}`), toks)
	if err := c.AcceptBytes([]byte("7")); err != nil {
		t.Fatal(err)
	}
	logits := make([]float32, toks.Size())
	if _, n := c.Masked(logits); n < 2 || !c.Allowed(eos) {
		t.Fatalf("after 7: %d allowed, end allowed %v", n, c.Allowed(eos))
	}
	if err := c.Accept(eos); err != nil {
		t.Fatal(err)
	}
	if _, n := c.Masked(logits); n != 0 || c.Allowed(eos) || !c.Done() || c.Accept(eos) == nil {
		t.Fatalf("after the end: %d allowed, end allowed %v, done %v", n, c.Allowed(eos), c.Done())
	}
	if _, ok := c.Best(logits); ok {
		t.Fatal("Best found a token after the end")
	}
}
