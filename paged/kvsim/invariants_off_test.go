//go:build !invariants

package kvsim

const invariantsTag = false
