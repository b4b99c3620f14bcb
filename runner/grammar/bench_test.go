package grammar

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// synthVocab makes a vocabulary of n tokens shaped like a large BPE one:
// the 256 single bytes, then words and word pieces (most with a leading
// space), numbers, punctuation runs and JSON-ish glue, and some non-ASCII.
// The end token is the last id, with no bytes.
func synthVocab(n int) *Tokens {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := make([][]byte, n)
	for i := range 256 {
		pieces[i] = []byte{byte(i)}
	}
	const letters = "etaoinshrdlcumwfgypbvkjxqz"
	glue := []string{`"`, `",`, `":`, `{"`, `"}`, `["`, `"]`, `":"`, `","`, `},`, `}}`, `]}`, `, "`, `": "`, "\n", "\n  ", " ", `\n`, `\"`, `\u`}
	for i := 256; i < n-1; i++ {
		var p []byte
		switch r := rng.IntN(100); {
		case r < 70: // a word or word piece
			if rng.IntN(3) > 0 {
				p = append(p, ' ')
			}
			if rng.IntN(8) == 0 {
				p = append(p, letters[rng.IntN(8)]-32)
			}
			for k := 1 + rng.IntN(9); k > 0; k-- {
				p = append(p, letters[min(rng.IntN(26), rng.IntN(26))])
			}
		case r < 78: // digits
			for k := 1 + rng.IntN(3); k > 0; k-- {
				p = append(p, byte('0'+rng.IntN(10)))
			}
		case r < 88: // punctuation and JSON glue
			for k := 1 + rng.IntN(3); k > 0; k-- {
				p = append(p, glue[rng.IntN(len(glue))]...)
			}
		default: // non-ASCII text
			for k := 1 + rng.IntN(3); k > 0; k-- {
				p = utf8.AppendRune(p, rune(0x400+rng.IntN(0x5000)))
			}
		}
		pieces[i] = p
	}
	return NewTokens(pieces, []int32{int32(n - 1)})
}

// benchStates are prefixes that leave the matcher in states worth timing:
// inside a string almost every token is allowed and the walk visits most
// of the trie; between values almost none is.
var benchStates = []struct{ name, prefix string }{
	{"in-string", `{"name": "Ada`},
	{"in-long-string", `{"name": "A", "age": 3, "email": "a`},
	{"in-free-string", `{"free": "Ada`},
	{"after-value", `{"name": "Ada", "age": 3`},
	{"object-start", `{`},
	{"enum", `{"name": "Ada", "age": 3, "tags": [`},
}

func benchConstraint(b *testing.B, toks *Tokens, prefix string) *Constraint {
	g := mustSchema(b, e2eSchemas[1].schema)
	if strings.Contains(prefix, "free") {
		g = JSON()
	}
	c := New(g, toks)
	if err := c.AcceptBytes([]byte(prefix)); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkMask times one full mask of a 150k-token vocabulary: the trie
// walk (uncached) and a repeat of the same state (cached).
func BenchmarkMask(b *testing.B) {
	toks := synthVocab(150_000)
	logits := make([]float32, toks.Size())
	for _, st := range benchStates {
		b.Run(st.name+"/walk", func(b *testing.B) {
			c := benchConstraint(b, toks, st.prefix)
			n := 0
			for b.Loop() {
				c.cache = nil
				_, n = c.Masked(logits)
			}
			b.ReportMetric(float64(n), "allowed")
		})
		b.Run(st.name+"/cached", func(b *testing.B) {
			c := benchConstraint(b, toks, st.prefix)
			for b.Loop() {
				c.Masked(logits)
			}
		})
	}
}

// BenchmarkAllowed times the lazy path's check of one sampled token.
func BenchmarkAllowed(b *testing.B) {
	toks := synthVocab(150_000)
	for _, st := range benchStates {
		b.Run(st.name, func(b *testing.B) {
			c := benchConstraint(b, toks, st.prefix)
			id := int32(300)
			for b.Loop() {
				c.Allowed(id)
				if id++; int(id) == toks.Size() {
					id = 300
				}
			}
		})
	}
}

// BenchmarkTokens times building the trie of a 150k vocabulary, once per
// model.
func BenchmarkTokens(b *testing.B) {
	pieces := synthVocab(150_000).pieces
	for b.Loop() {
		NewTokens(pieces, nil)
	}
}
