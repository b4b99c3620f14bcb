package paged

import (
	"fmt"
	"slices"
)

// verify checks every invariant of m and its pool and tree, returning the
// first one broken. It is the oracle of the tests and the fuzz target, and
// runs after every operation when built with -tags invariants. It costs
// time linear in the pool, the tables and the tree.
//
//   - The pool: a block is free exactly when its ref count is 0, and the
//     free list holds the free count's worth of distinct blocks.
//   - Every ref is accounted for: a block's ref count equals the tables
//     holding it, plus one if the tree holds it, plus one for each pending
//     copy naming it.
//   - A table has ceil(Len/B) entries in every group. In a sliding group
//     the entries before the window of position Len may be NoBlock, and
//     those that are form a leading run; every other entry is a block.
//   - A full-attention group's edges in the tree hold a block everywhere.
//   - The tree: edges are whole, non-empty runs of blocks; depths add up;
//     siblings differ in their first block and sit under its key; no
//     block appears twice; a node's lock count covers its children's and
//     the sequences that lock it; a sequence's node is in the tree.
//   - The LRU list: exactly the unlocked nodes of the tree (roots aside),
//     each once, linked both ways, in order of last use, each behind all
//     of its children.
func (m *Manager) verify() error {
	bs := m.bs
	holders := make([][]int32, len(m.pools))
	inTree := make([][]bool, len(m.pools))
	for g, pool := range m.pools {
		if err := pool.verify(); err != nil {
			return fmt.Errorf("layer group %d: %w", g, err)
		}
		holders[g] = make([]int32, len(pool.refs))
		inTree[g] = make([]bool, len(pool.refs))
	}
	live := 0
	for s := range m.seqs {
		q := &m.seqs[s]
		if !q.live {
			continue
		}
		live++
		if len(q.tables) != len(m.pools) {
			return fmt.Errorf("sequence %d has %d tables for %d layer groups", s, len(q.tables), len(m.pools))
		}
		for g, t := range q.tables {
			if want := ceilDiv(q.n, bs); len(t) != want {
				return fmt.Errorf("sequence %d holds %d tokens in %d blocks of group %d, want %d", s, q.n, len(t), g, want)
			}
			from := m.windowStart(g, q.n)
			for i, b := range t {
				if b == NoBlock && i < from && (i == 0 || t[i-1] == NoBlock) {
					continue
				}
				if b < 0 || int(b) >= len(holders[g]) {
					return fmt.Errorf("sequence %d holds out-of-range block %d at %d of group %d (window from %d)", s, b, i, g, from)
				}
				holders[g][b]++
			}
		}
	}
	if free := len(m.seqs) - live; len(m.freeIDs) != free {
		return fmt.Errorf("%d sequence slots are free, the free ID list has %d", free, len(m.freeIDs))
	}
	for _, s := range m.freeIDs {
		if m.seqs[s].live {
			return fmt.Errorf("live sequence %d is on the free ID list", s)
		}
	}
	for _, c := range m.copies {
		if c.Src == c.Dst {
			return fmt.Errorf("pending copy of block %d onto itself", c.Src)
		}
		holders[c.Group][c.Src]++
		holders[c.Group][c.Dst]++
	}

	// Locks the sequences need, per node, propagated to the root.
	need := map[*Node]int32{}
	for s := range m.seqs {
		q := &m.seqs[s]
		if !q.live || q.node == nil {
			continue
		}
		n := q.node
		for n.parent != nil {
			need[n]++
			n = n.parent
		}
		if m.radix.roots[n.key] != n {
			return fmt.Errorf("sequence %d locks radix node %d, which is not in the tree", s, q.node.id)
		}
	}
	var treeBlocks [MaxGroups]int
	var err error
	for key, root := range m.radix.roots {
		if root.parent != nil || root.key != key || root.blocks != nil || root.depth != 0 {
			return fmt.Errorf("radix root for key %q is malformed", key)
		}
		if len(root.children) == 0 {
			return fmt.Errorf("radix tree for key %q is empty but kept", key)
		}
		root.walk(func(n *Node) {
			if err != nil {
				return
			}
			var children int32
			for k, c := range n.children {
				for s := c; s != nil; s = s.next {
					switch {
					case s.parent != n:
						err = fmt.Errorf("radix node %d sits under node %d but names %v as parent", s.id, n.id, s.parent)
					case len(s.blocks) != len(m.pools):
						err = fmt.Errorf("radix node %d has blocks of %d groups, not %d", s.id, len(s.blocks), len(m.pools))
					case len(s.blocks[0]) == 0 || len(s.tokens) != len(s.blocks[0])*bs:
						err = fmt.Errorf("radix node %d has %d tokens for %d blocks of %d", s.id, len(s.tokens), len(s.blocks[0]), bs)
					case blockKey(s.tokens[:bs]) != k:
						err = fmt.Errorf("radix node %d is filed under the wrong key", s.id)
					case s.depth != n.depth+len(s.tokens):
						err = fmt.Errorf("radix node %d has depth %d, parent %d + edge %d", s.id, s.depth, n.depth, len(s.tokens))
					}
					for o := s.next; o != nil && err == nil; o = o.next {
						if slices.Equal(o.tokens[:bs], s.tokens[:bs]) {
							err = fmt.Errorf("radix nodes %d and %d start with the same block", s.id, o.id)
						}
					}
					children += s.lock
				}
			}
			if n.parent == nil || err != nil {
				return
			}
			if n.lock < children || n.lock < need[n] {
				err = fmt.Errorf("radix node %d has lock count %d; its children hold %d, sequences need %d", n.id, n.lock, children, need[n])
				return
			}
			for g, blocks := range n.blocks {
				if len(blocks) != len(n.blocks[0]) {
					err = fmt.Errorf("radix node %d has %d blocks in group %d and %d in group 0", n.id, len(blocks), g, len(n.blocks[0]))
					return
				}
				for _, b := range blocks {
					if b == NoBlock && m.windows[g] > 0 {
						continue
					}
					if b < 0 || int(b) >= len(holders[g]) || inTree[g][b] {
						err = fmt.Errorf("radix node %d holds block %d of group %d, out of range or held twice by the tree", n.id, b, g)
						return
					}
					inTree[g][b] = true
					holders[g][b]++
					treeBlocks[g]++
				}
			}
		})
		if err != nil {
			return err
		}
	}
	if err := m.radix.verifyLRU(); err != nil {
		return err
	}
	if treeBlocks != m.radix.nBlocks {
		return fmt.Errorf("radix tree holds %v blocks per group, its count says %v", treeBlocks, m.radix.nBlocks)
	}
	for g, hs := range holders {
		for b, h := range hs {
			if r := m.pools[g].refs[b]; r != h {
				return fmt.Errorf("block %d of group %d has ref count %d but %d holders (tables, tree, pending copies)", b, g, r, h)
			}
		}
	}
	return nil
}

// verifyLRU checks the LRU list against the tree.
func (r *RadixCache) verifyLRU() error {
	unlocked := map[*Node]bool{}
	for _, root := range r.roots {
		if root.older != nil || root.newer != nil {
			return fmt.Errorf("radix root for key %q is on the LRU list", root.key)
		}
		root.walk(func(n *Node) {
			if n.parent != nil && n.lock == 0 {
				unlocked[n] = true
			}
		})
	}
	seen := map[*Node]bool{}
	last := int64(0)
	for n := r.lru.newer; n != &r.lru; n = n.newer {
		switch {
		case n.newer == nil || n.newer.older != n:
			return fmt.Errorf("radix node %d is linked on the LRU list one way only", n.id)
		case seen[n]:
			return fmt.Errorf("radix node %d is on the LRU list twice", n.id)
		case !unlocked[n]:
			return fmt.Errorf("radix node %d is on the LRU list but is locked (%d) or not in the tree", n.id, n.lock)
		case len(seen) > 0 && n.lastUse < last:
			return fmt.Errorf("radix node %d, last used at %d, is on the LRU list behind a node used at %d", n.id, n.lastUse, last)
		}
		for _, c := range n.children {
			for ; c != nil; c = c.next {
				if !seen[c] {
					return fmt.Errorf("radix node %d is on the LRU list before its child %d", n.id, c.id)
				}
			}
		}
		seen[n], last = true, n.lastUse
	}
	if r.lru.newer.older != &r.lru {
		return fmt.Errorf("the LRU list's head is not linked back")
	}
	if len(seen) != len(unlocked) {
		for n := range unlocked {
			if !seen[n] {
				return fmt.Errorf("unlocked radix node %d is not on the LRU list", n.id)
			}
		}
	}
	return nil
}
