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
// The engine (runner/engine.go, runner/sched.go) compiles a request's
// format once, builds a model's Tokens on first use, gives each sequence a
// Constraint (a fork a Clone) limited to the tokens it may still take,
// samples first and masks only a rejected token, and ends a sequence once
// Done; Example shows the loop.
//
// Allowed costs a step per byte of one token; a mask walks the trie
// (inside a string, where nearly every token is allowed, the plain-text
// summary of the trie settles most of it at once), and repeated states are
// served from a per-constraint cache. Measured costs:
// bench/results/2026-12-02-comment-numbers.md.
//
// A Grammar and Tokens are safe for concurrent use; a Constraint belongs to
// the goroutine that samples its sequence.
package grammar
