// Package paged decides where every token's K/V lives. It holds no tensors:
// it hands out block IDs, counts who holds each block, and says which
// blocks the backend must copy. The runner is its only caller.
//
// The KV pool is N physical blocks of B tokens (default 16) for all layers
// at once. A sequence's block table maps its logical blocks to physical
// ones; token i lives in slot Table[i/B]·B + i%B. Blocks are allocated on
// demand, so a sequence wastes at most its last, partly filled block.
//
//   - BlockPool: three flat slices (ref counts, a free list threaded
//     through block indices, its head); O(1) Alloc and Release; Release
//     reports when a count reaches zero and panics below it.
//     BlocksForBudget turns a byte budget into N.
//   - Manager: the pool, every sequence's table and the radix cache, with
//     their ref counts kept in step. NewSeq, Fork (the child shares every
//     block), Truncate, Free, Grow (more blocks, all else as it was). Growth is planned, then committed: Reserve
//     adds a sequence's next tokens to a Plan without changing anything and
//     fails with an *OutOfBlocksError (free and needed blocks) when the
//     plan does not fit; Commit allocates. Writing into a shared, partly
//     filled last block moves the writer to a fresh block and records a
//     Copy{Src, Dst}; the runner drains all pending copies (DrainCopies)
//     and hands them to the backend in one call before the forward pass.
//   - RadixCache: a tree per extra key (model digest, cache salt) over
//     token IDs whose edges are runs of full blocks. Match, Insert,
//     Lock/Unlock, Evict of the least recently used unlocked leaves, in
//     O(1) each off an intrusive LRU list of the unlocked nodes (last use
//     read from an injected clock). Cached and EvictSparing serve a
//     request still waiting for room without marking its prefix used.
//     The tree holds a ref on each cached block; a sequence that attaches
//     a cached prefix (Manager.AttachPrefix) takes its own refs and a
//     lock; an evicted block returns to the pool only when its last
//     holder lets go.
//   - BlockHash: the SHA-256 chain over full blocks (parent hash, extra
//     key, tokens) by which persisted blocks are named.
//
// Invariants are written next to the data and checked by one function
// (Manager.verify): every ref is accounted for by a table, the tree or a
// pending copy, free blocks have no refs, the free list is as long as the
// free count, the LRU list holds exactly the tree's unlocked nodes in
// order of last use. Built with -tags invariants, every operation runs it and
// panics on the first violation.
//
// Concurrency: nothing here locks. A Manager, its pool and its radix cache
// belong to the scheduler goroutine; other goroutines ask it.
package paged
