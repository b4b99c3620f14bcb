//go:build invariants

package kvsim

// invariantsTag: paged checks its whole state after every operation, which
// makes replaying the built-in traces take minutes.
const invariantsTag = true
