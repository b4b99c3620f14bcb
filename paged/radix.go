package paged

import (
	"container/heap"
	"fmt"
	"slices"
)

// RadixCache is the prefix cache: one tree per extra key (model digest,
// adapter, cache salt: prefixes under different keys are never shared),
// over token IDs, whose edges are runs of whole blocks. Only full blocks
// enter the tree, and a full block is never written again, so a cached
// block can back any number of sequences.
//
// The tree holds one ref on each of its blocks. A sequence that attaches a
// cached prefix takes its own refs and locks the node (and, through it,
// the path to the root); Evict removes only unlocked leaves, least
// recently used first, and a block goes back to the pool when its last
// holder lets go.
//
// A RadixCache belongs to its Manager and, like it, has no locks.
type RadixCache struct {
	m       *Manager
	roots   map[string]*Node
	clock   func() int64
	ticks   int64  // the default clock
	ids     uint64 // the last Node.id handed out
	nBlocks int    // blocks the tree holds
}

// Node is a node of a RadixCache: the edge from its parent, a run of full
// blocks and their tokens. A Node stays valid while it is locked; an
// unlocked one may be split or evicted by later calls.
type Node struct {
	parent *Node
	// children are keyed by blockKey of the child's first block; next
	// chains the rare children whose first blocks hash alike.
	children map[uint64]*Node
	next     *Node
	tokens   []int32   // the edge: len(blocks)·B token IDs
	blocks   []BlockID // the edge's blocks, in order
	depth    int       // tokens from the root to the end of this edge
	lock     int32     // sequences (or callers) using this node or a descendant
	lastUse  int64     // clock reading of the last Match or Insert through it
	id       uint64    // creation order, to break lastUse ties
	key      string    // the extra key; set on roots only
}

// Tokens is the length of the prefix that ends at n.
func (n *Node) Tokens() int { return n.depth }

func newRadixCache(m *Manager, clock func() int64) *RadixCache {
	r := &RadixCache{m: m, roots: map[string]*Node{}, clock: clock}
	if r.clock == nil {
		r.clock = func() int64 { r.ticks++; return r.ticks }
	}
	return r
}

// Blocks is the number of blocks the tree holds.
func (r *RadixCache) Blocks() int { return r.nBlocks }

// Match finds the longest prefix of tokens cached under extra, in whole
// blocks, and marks it used. It returns the prefix's blocks (a new slice)
// and the node where it ends, or nil and nil when not even the first block
// is cached. The caller that uses the blocks Retains them and Locks the
// node; Manager.AttachPrefix does both. A match that ends inside an edge
// splits it there, so the node ends exactly at the match.
func (r *RadixCache) Match(extra string, tokens []int32) ([]BlockID, *Node) {
	root := r.roots[extra]
	if root == nil {
		return nil, nil
	}
	bs := r.m.pool.blockSize
	now := r.clock()
	n, i := root, 0
	var blocks []BlockID
	for len(tokens)-i >= bs {
		c := n.child(tokens[i : i+bs])
		if c == nil {
			break
		}
		k := commonBlocks(c.tokens, tokens[i:], bs)
		if blocks == nil {
			blocks = make([]BlockID, 0, len(tokens)/bs)
		}
		blocks = append(blocks, c.blocks[:k]...)
		c.lastUse = now
		i += k * bs
		if k < len(c.blocks) {
			n = r.split(c, k)
			break
		}
		n = c
	}
	if n == root {
		return nil, nil
	}
	r.m.checkInvariants()
	return blocks, n
}

// Insert caches the full blocks of tokens under extra: blocks[i] holds
// tokens[i·B:(i+1)·B] (a partial last block of tokens is ignored, and
// blocks may be longer). Where the tree already has a prefix it keeps its
// own blocks; it takes a ref on each block it adopts. Insert returns the
// node where the inserted prefix ends (nil when tokens has no full block)
// and the number of leading blocks that were cached already.
func (r *RadixCache) Insert(extra string, tokens []int32, blocks []BlockID) (*Node, int) {
	bs := r.m.pool.blockSize
	nb := len(tokens) / bs
	if len(blocks) < nb {
		panic(fmt.Sprintf("paged: insert %d full blocks of tokens with %d block IDs", nb, len(blocks)))
	}
	if nb == 0 {
		return nil, 0
	}
	root := r.roots[extra]
	if root == nil {
		r.ids++
		root = &Node{id: r.ids, key: extra}
		r.roots[extra] = root
	}
	now := r.clock()
	n, i, existing := root, 0, 0
	for i < nb {
		c := n.child(tokens[i*bs : (i+1)*bs])
		if c == nil {
			n = r.addLeaf(n, tokens[i*bs:nb*bs], blocks[i:nb], now)
			break
		}
		k := commonBlocks(c.tokens, tokens[i*bs:nb*bs], bs)
		c.lastUse = now
		existing += k
		i += k
		if k < len(c.blocks) {
			n = r.split(c, k)
			continue
		}
		n = c
	}
	r.m.version++
	r.m.checkInvariants()
	return n, existing
}

// Lock keeps n and the path above it from eviction until a matching
// Unlock. A nil node is ignored.
func (r *RadixCache) Lock(n *Node) {
	r.lock(n)
	r.m.checkInvariants()
}

// Unlock undoes one Lock of n. Unlocking more often than locking is a
// broken invariant and panics.
func (r *RadixCache) Unlock(n *Node) {
	r.unlock(n)
	r.m.checkInvariants()
}

func (r *RadixCache) lock(n *Node) {
	for ; n != nil && n.parent != nil; n = n.parent {
		n.lock++
	}
}

func (r *RadixCache) unlock(n *Node) {
	for ; n != nil && n.parent != nil; n = n.parent {
		if n.lock <= 0 {
			panic(fmt.Sprintf("paged: unlock of radix node %d (prefix of %d tokens) with lock count %d", n.id, n.depth, n.lock))
		}
		n.lock--
	}
}

// Evict removes unlocked leaves, least recently used first (ties: the
// older node first), releasing the tree's refs on their blocks, until
// nBlocks blocks have gone back to the pool or nothing is left to evict.
// A leaf goes as a whole. Blocks a sequence still holds leave the tree
// but not the pool. It returns the number of blocks freed. The cost is a
// walk over the whole tree: evict in batches.
func (r *RadixCache) Evict(nBlocks int) int {
	if nBlocks <= 0 {
		return 0
	}
	var h lruHeap
	for _, root := range r.roots {
		root.walk(func(n *Node) {
			if n.parent != nil && len(n.children) == 0 && n.lock == 0 {
				h = append(h, n)
			}
		})
	}
	heap.Init(&h)
	freed := 0
	for freed < nBlocks && len(h) > 0 {
		n := heap.Pop(&h).(*Node)
		p := n.parent
		freed += r.drop(n)
		switch {
		case p.parent == nil && len(p.children) == 0:
			delete(r.roots, p.key)
		case p.parent != nil && len(p.children) == 0 && p.lock == 0:
			heap.Push(&h, p)
		}
	}
	r.m.version++
	r.m.checkInvariants()
	return freed
}

// drop removes the leaf n from the tree and releases the tree's refs on
// its blocks, tail first as Manager.Free does. It returns the number of
// blocks that went back to the pool.
func (r *RadixCache) drop(n *Node) int {
	freed := 0
	for i := len(n.blocks) - 1; i >= 0; i-- {
		if r.m.pool.Release(n.blocks[i]) {
			freed++
		}
	}
	r.nBlocks -= len(n.blocks)
	n.parent.removeChild(n, r.m.pool.blockSize)
	n.parent = nil
	return freed
}

// addLeaf hangs a new leaf under n for tokens and blocks (copied), taking
// a ref on each block.
func (r *RadixCache) addLeaf(n *Node, tokens []int32, blocks []BlockID, now int64) *Node {
	r.ids++
	leaf := &Node{
		parent:  n,
		tokens:  slices.Clone(tokens),
		blocks:  slices.Clone(blocks),
		depth:   n.depth + len(tokens),
		lastUse: now,
		id:      r.ids,
	}
	for _, b := range leaf.blocks {
		r.m.pool.Retain(b)
	}
	r.nBlocks += len(blocks)
	n.addChild(leaf, r.m.pool.blockSize)
	return leaf
}

// split cuts c's edge after k blocks (0 < k < len(c.blocks)). A new node
// takes the first k blocks and c's place under its parent; c keeps the
// rest, and its identity, so locks and handles on c stay valid. The new
// node inherits c's lock count, since every path through c runs through
// it.
func (r *RadixCache) split(c *Node, k int) *Node {
	bs := r.m.pool.blockSize
	p := c.parent
	p.removeChild(c, bs)
	r.ids++
	up := &Node{
		parent:  p,
		tokens:  c.tokens[: k*bs : k*bs],
		blocks:  c.blocks[:k:k],
		depth:   c.depth - len(c.tokens) + k*bs,
		lock:    c.lock,
		lastUse: c.lastUse,
		id:      r.ids,
	}
	c.tokens, c.blocks, c.parent, c.next = c.tokens[k*bs:], c.blocks[k:], up, nil
	up.addChild(c, bs)
	p.addChild(up, bs)
	return up
}

func (n *Node) child(first []int32) *Node {
	for c := n.children[blockKey(first)]; c != nil; c = c.next {
		if slices.Equal(c.tokens[:len(first)], first) {
			return c
		}
	}
	return nil
}

func (n *Node) addChild(c *Node, bs int) {
	if n.children == nil {
		n.children = map[uint64]*Node{}
	}
	k := blockKey(c.tokens[:bs])
	c.next = n.children[k]
	n.children[k] = c
}

func (n *Node) removeChild(c *Node, bs int) {
	k := blockKey(c.tokens[:bs])
	if n.children[k] == c {
		if c.next == nil {
			delete(n.children, k)
		} else {
			n.children[k] = c.next
		}
		c.next = nil
		return
	}
	for s := n.children[k]; s != nil; s = s.next {
		if s.next == c {
			s.next, c.next = c.next, nil
			return
		}
	}
	panic(fmt.Sprintf("paged: radix node %d is not a child of node %d", c.id, n.id))
}

func (n *Node) walk(f func(*Node)) {
	f(n)
	for _, c := range n.children {
		for ; c != nil; c = c.next {
			c.walk(f)
		}
	}
}

// commonBlocks is the number of whole blocks of bs tokens at the start of
// edge that tokens repeats.
func commonBlocks(edge, tokens []int32, bs int) int {
	n := min(len(edge), len(tokens)/bs*bs)
	i := 0
	for i < n && edge[i] == tokens[i] {
		i++
	}
	return i / bs
}

// blockKey hashes a block of token IDs for the children maps (FNV-1a over
// 32-bit words); equal keys are confirmed by comparing tokens.
func blockKey(tokens []int32) uint64 {
	h := uint64(14695981039346656037)
	for _, t := range tokens {
		h ^= uint64(uint32(t))
		h *= 1099511628211
	}
	return h
}

// lruHeap orders evictable leaves by last use, then age.
type lruHeap []*Node

func (h lruHeap) Len() int { return len(h) }
func (h lruHeap) Less(i, j int) bool {
	if h[i].lastUse != h[j].lastUse {
		return h[i].lastUse < h[j].lastUse
	}
	return h[i].id < h[j].id
}
func (h lruHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *lruHeap) Push(x any)   { *h = append(*h, x.(*Node)) }
func (h *lruHeap) Pop() any {
	old := *h
	n := old[len(old)-1]
	*h = old[:len(old)-1]
	return n
}
