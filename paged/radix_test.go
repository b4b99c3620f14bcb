package paged

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// toks is the run of token IDs from lo up to hi-1.
func toks(lo, hi int32) []int32 {
	var t []int32
	for i := lo; i < hi; i++ {
		t = append(t, i)
	}
	return t
}

func cat(parts ...[]int32) []int32 { return slices.Concat(parts...) }

// cached runs a sequence over tokens, attaching what the cache has, and
// leaves its full blocks in the cache under extra. It returns the
// sequence's table.
func cached(t *testing.T, m *Manager, extra string, tokens []int32) []BlockID {
	t.Helper()
	s := m.NewSeq(extra)
	n := m.AttachPrefix(s, tokens)
	mustAppend(t, m, s, len(tokens)-n)
	m.CachePrefix(s, tokens)
	table := slices.Clone(m.Table(s))
	m.Free(s)
	return table
}

func TestRadixMatchInsertSplit(t *testing.T) {
	m := newManager(t, 32, 4)
	r := m.Radix()
	a := toks(1, 13) // 3 blocks
	if got := cached(t, m, "m", a); !slices.Equal(got, []BlockID{0, 1, 2}) {
		t.Fatalf("table %v", got)
	}
	if r.Blocks() != 3 || m.FreeBlocks() != 29 || m.Ref(0) != 1 {
		t.Fatalf("tree %d blocks, %d free, ref %d", r.Blocks(), m.FreeBlocks(), m.Ref(0))
	}
	b := cat(a[:8], toks(50, 58)) // shares 2 blocks with a, then 2 of its own
	for _, c := range []struct {
		name   string
		extra  string
		tokens []int32
		want   []BlockID
		depth  int
	}{
		{"whole prompt", "m", a, []BlockID{0, 1, 2}, 12},
		{"longer prompt", "m", cat(a, toks(90, 99)), []BlockID{0, 1, 2}, 12},
		{"partial block is not matched", "m", a[:11], []BlockID{0, 1}, 8},
		{"mismatch in the first block", "m", cat([]int32{1, 2, 3, 99}, a[4:]), nil, 0},
		{"other extra key", "other", a, nil, 0},
		{"shorter than a block", "m", a[:3], nil, 0},
		{"diverging prompt matches the shared blocks", "m", b, []BlockID{0, 1}, 8},
	} {
		blocks, node := r.Match(c.extra, c.tokens)
		depth := 0
		if node != nil {
			depth = node.Tokens()
		}
		if !slices.Equal(blocks, c.want) || depth != c.depth {
			t.Errorf("%s: %v at depth %d, want %v at %d", c.name, blocks, depth, c.want, c.depth)
		}
		if err := m.verify(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	// b attaches a's first two blocks and brings two of its own: the
	// tree splits a's edge after block 1.
	if got := cached(t, m, "m", b); !slices.Equal(got, []BlockID{0, 1, 3, 4}) {
		t.Fatalf("b's table %v", got)
	}
	if got := dump(r, "m"); got != "[1 2 3 4 5 6 7 8]{0 1} ( [9 10 11 12]{2} [50 51 52 53 54 55 56 57]{3 4} )" {
		t.Errorf("tree %s", got)
	}
	if blocks, _ := r.Match("m", b); !slices.Equal(blocks, []BlockID{0, 1, 3, 4}) {
		t.Errorf("match b: %v", blocks)
	}
	// The same tokens under another key get blocks of their own.
	if got := cached(t, m, "other", a); !slices.Equal(got, []BlockID{5, 6, 7}) {
		t.Errorf("other key: %v", got)
	}
}

// dump renders the tree under extra: each edge as [tokens]{blocks}, then
// its children in parentheses, ordered by first token.
func dump(r *RadixCache, extra string) string {
	var render func(n *Node) string
	render = func(n *Node) string {
		var kids []*Node
		for _, c := range n.children {
			for ; c != nil; c = c.next {
				kids = append(kids, c)
			}
		}
		slices.SortFunc(kids, func(a, b *Node) int { return int(a.tokens[0] - b.tokens[0]) })
		s := ""
		if n.parent != nil {
			s = fmt.Sprintf("%v{%s}", n.tokens, strings.Trim(fmt.Sprint(n.blocks[0]), "[]"))
		}
		if len(kids) > 0 {
			if s != "" {
				s += " "
			}
			s += "("
			for _, k := range kids {
				s += " " + render(k)
			}
			s += " )"
		}
		return s
	}
	root := r.roots[extra]
	if root == nil {
		return ""
	}
	out := render(root)
	return out[2 : len(out)-2] // drop the root's parentheses
}

func TestRadixEvictLRU(t *testing.T) {
	var now int64
	m, err := New(Config{Blocks: 32, BlockSize: 4, Clock: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Radix()
	shared := toks(1, 5)
	p1, p2, p3 := cat(shared, toks(10, 18)), cat(shared, toks(20, 28)), cat(shared, toks(30, 38))
	now = 1
	cached(t, m, "m", p1) // 0 1 2
	now = 2
	cached(t, m, "m", p2) // 0 3 4
	now = 3
	cached(t, m, "m", p3) // 0 5 6
	now = 4
	r.Match("m", p1) // p1 is now the most recently used
	steps := []struct {
		evict, freed int
		tree         string // what is left, by dump
	}{
		{1, 2, "[1 2 3 4]{0} ( [10 11 12 13 14 15 16 17]{1 2} [30 31 32 33 34 35 36 37]{5 6} )"}, // p2's leaf, the oldest, goes whole
		{1, 2, "[1 2 3 4]{0} ( [10 11 12 13 14 15 16 17]{1 2} )"},                                // then p3's
		{3, 3, ""}, // then p1's leaf, then the shared block, now a leaf
		{1, 0, ""}, // nothing left
	}
	for i, st := range steps {
		if got := r.Evict(st.evict); got != st.freed {
			t.Fatalf("step %d: Evict(%d) freed %d, want %d", i, st.evict, got, st.freed)
		}
		if got := dump(r, "m"); got != st.tree {
			t.Fatalf("step %d: tree %s, want %s", i, got, st.tree)
		}
		if err := m.verify(); err != nil {
			t.Fatal(err)
		}
	}
	if r.Blocks() != 0 || m.FreeBlocks() != 32 || len(r.roots) != 0 {
		t.Errorf("after evicting all: %d blocks cached, %d free, %d trees", r.Blocks(), m.FreeBlocks(), len(r.roots))
	}
	// Evicted tails go back tail first: p1's leaf 2 1, then 0, so the pool
	// hands out 0, 1, 2, then p3's 5 6 and p2's 3 4 in the order freed.
	s := m.NewSeq("")
	mustAppend(t, m, s, 7*4)
	if got := m.Table(s); !slices.Equal(got, []BlockID{0, 1, 2, 5, 6, 3, 4}) {
		t.Errorf("reallocation order %v", got)
	}
}

func TestRadixLocksAndRefs(t *testing.T) {
	m := newManager(t, 16, 4)
	r := m.Radix()
	p1, p2 := toks(1, 9), toks(20, 28)
	cached(t, m, "m", p1) // 0 1
	cached(t, m, "m", p2) // 2 3
	s := m.NewSeq("m")
	if n := m.AttachPrefix(s, p1); n != 8 || !slices.Equal(m.Table(s), []BlockID{0, 1}) || m.Ref(0) != 2 {
		t.Fatalf("attach: %d tokens, table %v, ref %d", n, m.Table(s), m.Ref(0))
	}
	if freed := r.Evict(16); freed != 2 {
		t.Fatalf("Evict freed %d blocks, want p2's 2 (p1 is locked)", freed)
	}
	if blocks, _ := r.Match("m", p1); len(blocks) != 2 {
		t.Fatal("the locked prefix was evicted")
	}
	// A write into a cached block (after a rollback) copies it first.
	m.Truncate(s, 6)
	mustAppend(t, m, s, 1)
	if got := m.DrainCopies(nil); !slices.Equal(got, []Copy{{1, 2, 0}}) {
		t.Errorf("copies %v", got)
	}
	m.Free(s)
	if freed := r.Evict(16); freed != 2 || m.FreeBlocks() != 16 {
		t.Fatalf("after Free: Evict freed %d, %d free", freed, m.FreeBlocks())
	}

	// Blocks the tree holds without a lock leave the tree on eviction but
	// stay with the sequence that holds them.
	s = m.NewSeq("")
	mustAppend(t, m, s, 8)
	r.Insert("m", p1, m.Table(s))
	if freed := r.Evict(1); freed != 0 || r.Blocks() != 0 || m.Ref(m.Table(s)[0]) != 1 {
		t.Errorf("evicting blocks a sequence holds: freed %d, tree %d", freed, r.Blocks())
	}
}

func TestCachePrefixKeepsItsOwnDuplicates(t *testing.T) {
	m := newManager(t, 16, 4)
	p := toks(1, 11) // 2 full blocks and 2 tokens
	a, b := m.NewSeq("m"), m.NewSeq("m")
	mustAppend(t, m, a, len(p)) // 0 1 2
	mustAppend(t, m, b, len(p)) // 3 4 5
	if n := m.CachePrefix(a, p); n != 0 {
		t.Errorf("a: %d blocks already cached", n)
	}
	if n := m.CachePrefix(b, p); n != 2 {
		t.Errorf("b: %d blocks already cached, want 2", n)
	}
	m.Free(a)
	m.Free(b)
	if blocks, _ := m.Radix().Match("m", p); !slices.Equal(blocks, []BlockID{0, 1}) || m.FreeBlocks() != 14 {
		t.Errorf("cached %v, %d free", blocks, m.FreeBlocks())
	}
}

func TestForkKeepsTheLock(t *testing.T) {
	m := newManager(t, 16, 4)
	p := toks(1, 9)
	cached(t, m, "m", p)
	a := m.NewSeq("m")
	m.AttachPrefix(a, p)
	b := m.Fork(a)
	m.Free(a)
	if freed := m.Radix().Evict(4); freed != 0 {
		t.Errorf("evicted a prefix the fork still uses (%d freed)", freed)
	}
	m.Truncate(b, 3) // covers less than the cached node: the lock moves up to the root
	if freed := m.Radix().Evict(4); freed != 1 {
		t.Errorf("after truncate: %d freed, want block 1 (block 0 stays with b)", freed)
	}
	m.Free(b)
}

func TestUnlockPanics(t *testing.T) {
	m := newManager(t, 16, 4)
	cached(t, m, "m", toks(1, 9))
	_, n := m.Radix().Match("m", toks(1, 9))
	defer func() {
		if r := recover(); r != "paged: unlock of radix node 2 (prefix of 8 tokens) with lock count 0" {
			t.Fatalf("panic %v", r)
		}
	}()
	m.Radix().Unlock(n)
}

// TestRadixEvictOrder: leaves go least recently used first, where a use
// is a Match or Insert through a node or the Unlock that leaves it
// unlocked (it was in use until then), and a parent goes after its
// children.
func TestRadixEvictOrder(t *testing.T) {
	var now int64
	m, err := New(Config{Blocks: 32, BlockSize: 4, Clock: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Radix()
	s, a, b, q := toks(1, 5), toks(10, 14), toks(20, 24), toks(30, 38)
	now = 1
	cached(t, m, "m", cat(s, a)) // blocks 0 1
	now = 2
	cached(t, m, "m", cat(s, b)) // 0 2: s splits off as a parent of a and b
	now = 3
	cached(t, m, "m", q) // 3 4
	now = 4
	held := m.NewSeq("m")
	m.AttachPrefix(held, cat(s, a)) // locks s and a
	now = 5
	r.Match("m", q)
	now = 6
	m.Free(held) // a and s were in use until now
	if err := m.verify(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"[1 2 3 4]{0} ( [10 11 12 13]{1} ) [30 31 32 33 34 35 36 37]{3 4}", // b, last used at 2
		"[1 2 3 4]{0} ( [10 11 12 13]{1} )",                                // q, at 5
		"[1 2 3 4]{0}",                                                     // a, unlocked at 6
		"",                                                                 // s, at 6 but behind its child
	} {
		if freed := r.Evict(1); freed == 0 {
			t.Fatalf("eviction %d freed nothing", i)
		}
		if got := dump(r, "m"); got != want {
			t.Fatalf("after eviction %d: tree %s, want %s", i, got, want)
		}
	}
}

// TestRadixCachedAndEvictSparing: Cached finds what Match would without
// marking it used, and EvictSparing keeps a waiting request's prefix
// while the rest goes in LRU order.
func TestRadixCachedAndEvictSparing(t *testing.T) {
	var now int64
	m, err := New(Config{Blocks: 32, BlockSize: 4, Clock: func() int64 { return now }})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Radix()
	p1, p2 := toks(1, 13), toks(20, 28) // 3 blocks, 2 blocks
	now = 1
	cached(t, m, "m", p1)
	now = 2
	cached(t, m, "m", p2)
	now = 3
	waiting := cat(p1[:8], toks(90, 95)) // shares p1's first 2 blocks
	if got := r.Cached("m", waiting); got != 2 {
		t.Fatalf("Cached: %d blocks, want 2", got)
	}
	if got := dump(r, "m"); got != "[1 2 3 4 5 6 7 8 9 10 11 12]{0 1 2} [20 21 22 23 24 25 26 27]{3 4}" {
		t.Fatalf("Cached changed the tree: %s", got)
	}
	// p1, the least recently used, is spared but for its last block,
	// which the waiting request would not attach; p2 goes next.
	if freed := r.EvictSparing(32, "m", waiting); freed != 3 {
		t.Fatalf("EvictSparing freed %d blocks, want 3", freed)
	}
	if got := dump(r, "m"); got != "[1 2 3 4 5 6 7 8]{0 1}" {
		t.Fatalf("after EvictSparing: %s", got)
	}
	if err := m.verify(); err != nil {
		t.Fatal(err)
	}
	// Without sparing, the oldest goes first: p1 before p2.
	now = 4
	cached(t, m, "m", p2)
	if freed := r.Evict(1); freed != 2 || r.Cached("m", p2) != 2 || r.Cached("m", p1) != 0 {
		t.Fatalf("Evict(1) freed %d; cached p1 %d, p2 %d blocks", freed, r.Cached("m", p1), r.Cached("m", p2))
	}
}
