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
	ticks   int64          // the default clock
	ids     uint64         // the last Node.id handed out
	nBlocks [MaxGroups]int // blocks the tree holds, per group
	// lru is the sentinel of the LRU list, a ring through Node.older and
	// Node.newer: lru.newer is the least recently used node.
	lru Node
}

// Node is a node of a RadixCache: the edge from its parent, a run of full
// blocks and their tokens. A Node stays valid while it is locked; an
// unlocked one may be split or evicted by later calls.
//
// With several layer groups the edge has a run of blocks in each. In a
// sliding group an entry may be NoBlock: the tree was not given that
// block (CachePrefix offers a sliding group's blocks only as the window
// before a resume point, CacheResumable), and a prefix is attached only
// up to a point whose window it holds.
type Node struct {
	parent *Node
	// children are keyed by blockKey of the child's first block; next
	// chains the rare children whose first blocks hash alike.
	children map[uint64]*Node
	next     *Node
	tokens   []int32     // the edge: len(blocks[g])·B token IDs
	blocks   [][]BlockID // blocks[g]: the edge's blocks of group g, in order
	depth    int         // tokens from the root to the end of this edge
	lock     int32       // sequences (or callers) using this node or a descendant
	lastUse  int64       // clock reading of its last use: a Match or Insert through it, or the Unlock that left it unlocked
	id       uint64      // creation order, for messages
	key      string      // the extra key; set on roots only
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

// Blocks is the number of blocks the tree holds in the first group.
func (r *RadixCache) Blocks() int { return r.nBlocks[0] }

// GroupBlocks is the number of blocks the tree holds in group g.
func (r *RadixCache) GroupBlocks(g int) int { return r.nBlocks[g] }

// Match finds the longest prefix of tokens cached under extra, in whole
// blocks, and marks it used. It returns the prefix's blocks in the first
// group (a new slice) and the node where it ends, or nil and nil when not
// even the first block is cached. The caller that uses the blocks Retains
// them and Locks the node; Manager.AttachPrefix does both, for every
// group. A match that ends inside an edge splits it there, so the node
// ends exactly at the match.
func (r *RadixCache) Match(extra string, tokens []int32) ([]BlockID, *Node) {
	n, nb := r.descend(extra, tokens, true)
	if n == nil {
		return nil, nil
	}
	r.use(n, r.clock())
	blocks := r.appendPath(make([]BlockID, 0, nb), n, 0, 0, nb)
	r.m.checkInvariants()
	return blocks, n
}

// matchResumable is Match for every group: the longest prefix of tokens
// cached under extra, of more than have blocks, that a sequence can
// resume from, in that every sliding group holds the window before its
// end. It returns the node where it ends (split there) and its length in
// blocks, marked used, or nil and 0.
func (r *RadixCache) matchResumable(extra string, tokens []int32, have int) (*Node, int) {
	n, nb := r.descend(extra, tokens, !r.m.sliding)
	if n == nil {
		return nil, 0
	}
	if r.m.sliding {
		if nb = r.resumable(n, nb); nb <= have {
			return nil, 0
		}
		n, nb = r.descend(extra, tokens[:nb*r.m.bs], true)
	}
	r.use(n, r.clock()) // a match marks its path used, as Match does
	if nb <= have {
		return nil, 0
	}
	return n, nb
}

// Cached is the number of leading full blocks of tokens that the cache
// holds under extra and a sequence can resume from, as AttachPrefix would
// find them, but it changes nothing: no edge is split and nothing is
// marked used. A request still waiting for room asks this, so that
// waiting does not keep its prefix fresh.
func (r *RadixCache) Cached(extra string, tokens []int32) int {
	n, nb := r.descend(extra, tokens, false)
	if n == nil {
		return 0
	}
	return r.resumable(n, nb)
}

// resumable is the longest prefix, of the nb blocks of the path through
// n, at whose end every sliding group holds the window: each entry from
// windowStart to the end is a block. Without sliding groups it is nb.
func (r *RadixCache) resumable(n *Node, nb int) int {
	m := r.m
	for g, w := range m.windows {
		if w == 0 || nb == 0 {
			continue
		}
		// hole[i]: one past the last NoBlock among the first i entries
		path := r.appendPath(make([]BlockID, 0, nb), n, g, 0, nb)
		hole := make([]int, nb+1)
		for i, b := range path {
			hole[i+1] = hole[i]
			if b == NoBlock {
				hole[i+1] = i + 1
			}
		}
		for nb > 0 && hole[nb] > m.windowStart(g, nb*m.bs) {
			nb--
		}
	}
	return nb
}

// appendPath appends to dst group g's entries from..to-1 of the path from
// the root through n, which covers at least to blocks; n's edge may go on
// past to (a match that did not split it).
func (r *RadixCache) appendPath(dst []BlockID, n *Node, g, from, to int) []BlockID {
	var edges [64]*Node
	path := edges[:0]
	for c := n; c.parent != nil; c = c.parent {
		path = append(path, c)
	}
	start := 0
	for i := len(path) - 1; i >= 0 && start < to; i-- {
		e := path[i].blocks[g]
		lo, hi := max(from-start, 0), min(len(e), to-start)
		if lo < hi {
			dst = append(dst, e[lo:hi]...)
		}
		start += len(e)
	}
	return dst
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
	bs := r.m.bs
	n, i := root, 0
	for len(tokens)-i >= bs {
		c := n.child(tokens[i : i+bs])
		if c == nil {
			break
		}
		k := commonBlocks(c.tokens, tokens[i:], bs)
		i += k * bs
		if k < len(c.blocks[0]) {
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
// and the number of leading blocks that were cached already. It is for a
// Manager of one layer group; Manager.CachePrefix serves any.
func (r *RadixCache) Insert(extra string, tokens []int32, blocks []BlockID) (*Node, int) {
	if len(r.m.pools) != 1 {
		panic(fmt.Sprintf("paged: Insert of one group's blocks into a cache of %d groups (use Manager.CachePrefix)", len(r.m.pools)))
	}
	return r.insert(extra, tokens, [][]BlockID{blocks})
}

// insert is Insert of every group's blocks: tables[g][i] is group g's
// block of tokens[i·B:(i+1)·B], NoBlock where a sliding group offers
// none. Where the tree has a prefix already it keeps its own blocks, and
// fills the entries it lacks from tables.
func (r *RadixCache) insert(extra string, tokens []int32, tables [][]BlockID) (*Node, int) {
	bs := r.m.bs
	nb := len(tokens) / bs
	for _, blocks := range tables {
		if len(blocks) < nb {
			panic(fmt.Sprintf("paged: insert %d full blocks of tokens with %d block IDs", nb, len(blocks)))
		}
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
			n = r.addLeaf(n, tokens[i*bs:nb*bs], tables, i, nb)
			break
		}
		k := commonBlocks(c.tokens, tokens[i*bs:nb*bs], bs)
		existing += k
		if k < len(c.blocks[0]) {
			c = r.split(c, k)
		}
		r.fill(c, tables, i)
		i += k
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

// EvictIn evicts as Evict does until nBlocks blocks of group g have gone
// back to its pool (the other groups' blocks of the evicted leaves go
// too), and returns the number of group g's blocks freed.
func (r *RadixCache) EvictIn(g, nBlocks int) int {
	return r.evictIn(g, nBlocks, nil)
}

// evict walks the LRU list from its oldest end. Without keep every node
// it meets is a leaf (children come first); with keep it passes over keep
// and, since they have it below them, keep's ancestors.
func (r *RadixCache) evict(nBlocks int, keep *Node) int {
	return r.evictIn(0, nBlocks, keep)
}

func (r *RadixCache) evictIn(g, nBlocks int, keep *Node) int {
	if nBlocks <= 0 {
		return 0
	}
	freed := 0
	for n := r.lru.newer; freed < nBlocks && n != &r.lru; {
		next := n.newer
		if n != keep && len(n.children) == 0 {
			p := n.parent
			freed += r.drop(n, g)
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
// group g's blocks that went back to their pool.
func (r *RadixCache) drop(n *Node, g int) int {
	freed := 0
	for h, blocks := range n.blocks {
		for i := len(blocks) - 1; i >= 0; i-- {
			b := blocks[i]
			if b == NoBlock {
				continue
			}
			r.nBlocks[h]--
			if r.m.pools[h].Release(b) && h == g {
				freed++
			}
		}
	}
	if n.newer != nil {
		unlink(n)
	}
	n.parent.removeChild(n, r.m.bs)
	n.parent = nil
	return freed
}

// addLeaf hangs a new leaf under n for tokens and the entries from..to-1
// of each group's table (copied), taking a ref on each block. The caller
// marks it used, which lists it.
func (r *RadixCache) addLeaf(n *Node, tokens []int32, tables [][]BlockID, from, to int) *Node {
	r.ids++
	leaf := &Node{
		parent: n,
		tokens: slices.Clone(tokens),
		blocks: make([][]BlockID, len(tables)),
		depth:  n.depth + len(tokens),
		id:     r.ids,
	}
	for g, t := range tables {
		leaf.blocks[g] = slices.Clone(t[from:to])
		for _, b := range leaf.blocks[g] {
			if b != NoBlock {
				r.m.pools[g].Retain(b)
				r.nBlocks[g]++
			}
		}
	}
	n.addChild(leaf, r.m.bs)
	return leaf
}

// fill gives c's edge, which starts at block from of tables, the blocks
// it lacks (NoBlock entries of a sliding group) that tables has, taking a
// ref on each.
func (r *RadixCache) fill(c *Node, tables [][]BlockID, from int) {
	for g, t := range tables {
		if r.m.windows[g] == 0 {
			continue // full-attention edges lack nothing
		}
		for i, b := range c.blocks[g] {
			if b == NoBlock && t[from+i] != NoBlock {
				c.blocks[g][i] = t[from+i]
				r.m.pools[g].Retain(t[from+i])
				r.nBlocks[g]++
			}
		}
	}
}

// split cuts c's edge after k blocks (0 < k < len(c.blocks[0])). A new node
// takes the first k blocks and c's place under its parent; c keeps the
// rest, and its identity, so locks and handles on c stay valid. The new
// node inherits c's lock count, since every path through c runs through
// it, and its last use; unlocked, it goes on the LRU list just behind c.
func (r *RadixCache) split(c *Node, k int) *Node {
	bs := r.m.bs
	p := c.parent
	p.removeChild(c, bs)
	r.ids++
	up := &Node{
		parent:  p,
		tokens:  c.tokens[: k*bs : k*bs],
		blocks:  make([][]BlockID, len(c.blocks)),
		depth:   c.depth - len(c.tokens) + k*bs,
		lock:    c.lock,
		lastUse: c.lastUse,
		id:      r.ids,
	}
	for g, b := range c.blocks {
		up.blocks[g], c.blocks[g] = b[:k:k], b[k:]
	}
	c.tokens, c.parent, c.next = c.tokens[k*bs:], up, nil
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
