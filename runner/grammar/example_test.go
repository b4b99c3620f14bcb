package grammar_test

import (
	"context"
	"fmt"

	"folio/gpu"
	"folio/runner/grammar"
)

// A request's format constrains one sequence as the engine does it
// (runner/sched.go's sample): sample first, and mask only when the format
// rejects the sampled token. The Grammar is compiled once per request, the
// Tokens once per model (runner/engine.go); a fork takes c.Clone().
func Example() {
	g, err := grammar.Format(context.Background(),
		[]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
	if err != nil { // wraps grammar.ErrFormat: a 400 naming the keyword or the limit
		fmt.Println(err)
		return
	}
	const eos = 0
	pieces := [][]byte{eos: nil, []byte("{"), []byte("}"), []byte(`"ok"`), []byte(":"), []byte("true"), []byte("hello")}
	c := grammar.New(g, grammar.NewTokens(pieces, []int32{eos}))
	c.Limit(16) // num_predict, or the room left in the context

	// A model that would rather say hello; the sampler is greedy.
	logits := []float32{eos: 0.5, 1, 2, 1.5, 1.4, 3, 5}
	var out []byte
	for !c.Done() {
		tok := int32(gpu.ArgMax(logits))
		if !c.Allowed(tok) {
			masked, n := c.Masked(logits) // a copy: forks share logits
			if n == 0 {
				fmt.Println("the format allows no token here")
				return
			}
			tok = int32(gpu.ArgMax(masked))
		}
		if err := c.Accept(tok); err != nil { // a bug: a masked token was sampled
			fmt.Println(err)
			return
		}
		out = append(out, pieces[tok]...)
	}
	// Done: the value is complete, so the sequence ends without sampling its end token.
	fmt.Printf("%s\n", out)
	// Output: {"ok":true}
}
