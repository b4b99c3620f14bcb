// Package paged decides where every token's K/V lives: the block pool with
// ref counts, per-sequence block tables with copy-on-write forks, and the
// radix prefix cache. It holds no tensors and no locks; it belongs to the
// scheduler goroutine. Arrives with the paged/ issue.
package paged
