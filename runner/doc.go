// Package runner is the serving engine: the request queue, the scheduler
// (continuous batching over the paged KV cache, chunked prefill, preemption),
// sequences and sampling. It is the only caller of package paged.
package runner
