// Package grammar constrains generation to JSON: Ollama's format ("json" or
// a JSON Schema) and OpenAI's response_format. A Grammar is the compiled
// format (shared, immutable); Tokens is a model's vocabulary arranged for
// masking (built once per model); a Constraint is one sequence's progress,
// asked before each sampled token and advanced after it.
//
// The matcher works on bytes, so a token may split a key, an escape or a
// UTF-8 character anywhere; it is a pushdown automaton whose stacks share
// their frames in an arena (see match.go). Checking one token costs a step
// per byte. A full mask walks a trie of the vocabulary once, skipping every
// token under a rejected prefix, and is cached per state. As in llama.cpp
// and Ollama, the engine samples first and masks only when the sampled token
// is rejected (then resamples from the masked logits): most steps cost one
// Allowed. At temperature 0 that is exactly the best allowed token (Best
// computes it without a Sampler); above it, a sampled token that happens to
// be allowed is kept, so the draw is not quite from the masked
// distribution: the trade llama.cpp and Ollama make.
//
// A schema compiles in time linear in its size: each subschema once,
// however many $refs reach it. Compiling is bounded (100,000 steps, 512
// levels of nesting or $ref hops; patterns of 2,000 bytes and automata of
// 20,000 states, 10,000 determinized; past any the error names the limit)
// and stops when its context ends. Patterns and formats become automata
// over a string's decoded bytes (regex.go, dfa.go); number bounds a digit
// automaton (bounds.go).
//
// Every node knows its shortest value and every thread an estimate of the
// bytes that end the document (est.go): a thread that cannot end is
// dropped, so no branch of a schema is a dead end, and Limit (the tokens a
// sequence may still take) allows only tokens that leave a complete value
// within them, so strings without maxLength close in time.
//
// The output is the value alone: bounded whitespace before it and between
// its tokens (one space, or a newline and up to 32 spaces or tabs), none
// after it, then an end token. "json" is an object at the top level, as in
// Ollama. Numbers have at most 16 integer, 16 fraction and 3 exponent
// digits. Strings are valid UTF-8 without raw control characters; keys of
// free-form objects and strings under a pattern or format escape only what
// JSON must (keys.go: the keys of one object are distinct).
//
// The intended engine integration (checked against the engine as of this
// package's first commit):
//
//	// Request gets a Format *grammar.Grammar, which the server fills from
//	// grammar.Format(ctx, req.Format) once the model is found; an error
//	// wraps ErrFormat, names the keyword or the limit, and is a 400.
//
//	// Engine.enqueue; Engine.toks is built once per model (50 ms for 150k
//	// tokens, about 5 MB):
//	if r.Format != nil {
//		if e.toks == nil {
//			e.toks = grammar.TokensOf(e.m.Tok)
//		}
//		s.grammar = grammar.New(r.Format, e.toks)
//		s.grammar.Limit(min(r.NumPredict, r.NumCtx-len(r.Prompt))) // when NumPredict > 0
//	}
//
//	// Engine.fork, for each child c of s:
//	if s.grammar != nil {
//		c.grammar = s.grammar.Clone()
//	}
//
//	// Engine.sample, in place of the plain Sample call:
//	tok := s.sampler.Sample(logits, s.tokens)
//	if c := s.grammar; c != nil {
//		if !c.Allowed(tok) {
//			masked, n := c.Masked(logits) // a copy: forks share logits
//			if n == 0 {
//				e.finish(s, "", errors.New("runner: the format allows no token"))
//				return
//			}
//			tok = s.sampler.Sample(masked, s.tokens)
//		}
//		if err := c.Accept(tok); err != nil { // a bug: a masked token was sampled
//			e.finish(s, "", err)
//			return
//		}
//	}
//
// Optionally, after emit, a sequence whose s.grammar.Done() can finish with
// "stop" without one more forward pass for its end token.
//
// Costs, 150k-token vocabulary on one core: Allowed 60–200 ns; a mask
// computed 0.1–1 ms (inside a string, where nearly every token is allowed,
// the plain-text summary of the trie settles most of it at once), repeated
// states served from a per-constraint cache; applying a mask to the logits
// about 0.1 ms.
//
// A Grammar and Tokens are safe for concurrent use; a Constraint belongs to
// the goroutine that samples its sequence.
package grammar
