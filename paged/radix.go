package paged

import (
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
// Every unlocked node but the roots is on an intrusive LRU list, least
// recently used first and each node behind all of its children (a node is
// used whenever a child is, and locked whenever a child is). The head is
// then always an unlocked leaf, the one to evict, and a parent whose last
// child is evicted is already in its place: Evict costs O(1) per node it
// removes, and Lock, Unlock, Match and Insert keep the list in step at no
// cost beyond the path they walk. A node is in use while it is locked, so
// the Unlock that leaves it unlocked counts as a use.
//
// A RadixCache belongs to its Manager and, like it, has no locks.
type RadixCache struct {
	m       *Manager
	roots   map[string]*Node
	clock   func() int64
	ticks   int64  // the default clock
	ids     uint64 // the last Node.id handed out
	nBlocks int    // blocks the tree holds
	// lru is the sentinel of the LRU list, a ring through Node.older and
	// Node.newer: lru.newer is the least recently used node.
	lru Node
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
	lastUse  int64     // clock reading of its last use: a Match or Insert through it, or the Unlock that left it unlocked
	id       uint64    // creation order, for messages
	key      string    // the extra key; set on roots only
	// older and newer are its neighbours on the LRU list while it is
	// unlocked, nil while it is locked (and on roots).
	older, newer *Node
}

// Tokens is the length of the prefix that ends at n.
func (n *Node) Tokens() int { return n.depth }

func newRadixCache(m *Manager, clock func() int64) *RadixCache {
	r := &RadixCache{m: m, roots: map[string]*Node{}, clock: clock}
	r.lru.older, r.lru.newer = &r.lru, &r.lru
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
	n, nb := r.descend(extra, tokens, true)
	if n == nil {
		return nil, nil
	}
	r.use(n, r.clock())
	blocks := make([]BlockID, nb)
	for c := n; c.parent != nil; c = c.parent {
		nb -= len(c.blocks)
		copy(blocks[nb:], c.blocks)
	}
	r.m.checkInvariants()
	return blocks, n
}

// Cached is the number of leading full blocks of tokens that the cache
// holds under extra, as Match would find them, but it changes nothing:
// no edge is split and nothing is marked used. A request still waiting
// for room asks this, so that waiting does not keep its prefix fresh.
func (r *RadixCache) Cached(extra string, tokens []int32) int {
	_, nb := r.descend(extra, tokens, false)
	return nb
}

// descend follows tokens down the tree under extra for as many whole
// blocks as it holds, and returns the node where the match ends and the
// number of blocks matched (nil and 0 when not even the first block is
// cached). A match that ends inside an edge splits it there with split;
// without, the node returned is the one whose edge goes on past it.
func (r *RadixCache) descend(extra string, tokens []int32, split bool) (*Node, int) {
	root := r.roots[extra]
	if root == nil {
		return nil, 0
	}
	bs := r.m.pool.blockSize
	n, i := root, 0
	for len(tokens)-i >= bs {
		c := n.child(tokens[i : i+bs])
		if c == nil {
			break
		}
		k := commonBlocks(c.tokens, tokens[i:], bs)
		i += k * bs
		if k < len(c.blocks) {
			if split {
				c = r.split(c, k)
			}
			n = c
			break
		}
		n = c
	}
	if n == root {
		return nil, 0
	}
	return n, i / bs
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
	n, i, existing := root, 0, 0
	for i < nb {
		c := n.child(tokens[i*bs : (i+1)*bs])
		if c == nil {
			n = r.addLeaf(n, tokens[i*bs:nb*bs], blocks[i:nb])
			break
		}
		k := commonBlocks(c.tokens, tokens[i*bs:nb*bs], bs)
		existing += k
		i += k
		if k < len(c.blocks) {
			n = r.split(c, k)
			continue
		}
		n = c
	}
	r.use(n, r.clock())
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

// lock takes n and the path above it off the LRU list as their counts
// leave zero.
func (r *RadixCache) lock(n *Node) {
	for ; n != nil && n.parent != nil; n = n.parent {
		if n.lock == 0 {
			unlink(n)
		}
		n.lock++
	}
}

// unlock puts the nodes whose counts reach zero at the newest end of the
// LRU list, n first: they were in use until now. Counts do not grow
// towards the leaves, so those nodes are n and the first few above it.
func (r *RadixCache) unlock(n *Node) {
	now, read := int64(0), false
	for ; n != nil && n.parent != nil; n = n.parent {
		if n.lock <= 0 {
			panic(fmt.Sprintf("paged: unlock of radix node %d (prefix of %d tokens) with lock count %d", n.id, n.depth, n.lock))
		}
		n.lock--
		if n.lock == 0 {
			if !read {
				now, read = r.clock(), true
			}
			n.lastUse = now
			r.pushNewest(n)
		}
	}
}

// use marks n and the path above it used at now. Unlocked ones move to the
// newest end of the LRU list, n first, so each stays behind its children;
// above the first locked node all are locked.
func (r *RadixCache) use(n *Node, now int64) {
	for ; n != nil && n.parent != nil; n = n.parent {
		n.lastUse = now
		if n.lock == 0 {
			r.pushNewest(n)
		}
	}
}

// pushNewest moves n, listed or not, to the newest end of the LRU list.
func (r *RadixCache) pushNewest(n *Node) {
	if n.newer != nil {
		unlink(n)
	}
	linkAfter(r.lru.older, n)
}

// linkAfter puts n on the LRU list just after (newer than) at.
func linkAfter(at, n *Node) {
	n.older, n.newer = at, at.newer
	at.newer.older = n
	at.newer = n
}

// unlink takes n off the LRU list.
func unlink(n *Node) {
	n.older.newer, n.newer.older = n.newer, n.older
	n.older, n.newer = nil, nil
}

// Evict removes unlocked leaves, least recently used first (among leaves
// used at the same moment, the one used first; of one path, the deepest),
// releasing the tree's refs on their blocks, until nBlocks blocks have
// gone back to the pool or nothing is left to evict. A leaf goes as a
// whole. Blocks a sequence still holds leave the tree but not the pool.
// It returns the number of blocks freed. The cost is O(1) per node
// removed, whatever the size of the tree.
func (r *RadixCache) Evict(nBlocks int) int {
	return r.evict(nBlocks, nil)
}

// EvictSparing evicts as Evict does but keeps the cached prefix of tokens
// under extra: the blocks a request waiting for room is about to attach,
// which evicting would only make it compute again. Like Cached it marks
// nothing used; it splits the edge where the prefix ends, as Match does.
func (r *RadixCache) EvictSparing(nBlocks int, extra string, tokens []int32) int {
	keep, _ := r.descend(extra, tokens, true)
	return r.evict(nBlocks, keep)
}

// evict walks the LRU list from its oldest end. Without keep every node
// it meets is a leaf (children come first); with keep it passes over keep
// and, since they have it below them, keep's ancestors.
func (r *RadixCache) evict(nBlocks int, keep *Node) int {
	if nBlocks <= 0 {
		return 0
	}
	freed := 0
	for n := r.lru.newer; freed < nBlocks && n != &r.lru; {
		next := n.newer
		if n != keep && len(n.children) == 0 {
			p := n.parent
			freed += r.drop(n)
			if p.parent == nil && len(p.children) == 0 {
				delete(r.roots, p.key)
			}
		}
		n = next
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
	if n.newer != nil {
		unlink(n)
	}
	n.parent.removeChild(n, r.m.pool.blockSize)
	n.parent = nil
	return freed
}

// addLeaf hangs a new leaf under n for tokens and blocks (copied), taking
// a ref on each block. The caller marks it used, which lists it.
func (r *RadixCache) addLeaf(n *Node, tokens []int32, blocks []BlockID) *Node {
	r.ids++
	leaf := &Node{
		parent: n,
		tokens: slices.Clone(tokens),
		blocks: slices.Clone(blocks),
		depth:  n.depth + len(tokens),
		id:     r.ids,
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
// it, and its last use; unlocked, it goes on the LRU list just behind c.
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
	if c.newer != nil {
		linkAfter(c, up)
	}
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
