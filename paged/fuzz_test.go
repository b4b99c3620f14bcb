package paged

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
)

// FuzzManager drives random sequences of appends, plans, forks,
// truncations, frees, prefix attaches and inserts, matches, locks,
// evictions and growths of the pool (some between a plan and its commit). The oracles are verify (every invariant) and a model of the
// K/V memory: each slot holds the token last written there, copies are
// carried out when drained, and every live sequence and every cached edge
// must read back its own tokens through its blocks. Half the inputs add a
// sliding-window layer group, whose sequences and edges must read back
// every token they still hold a block for, and a sequence must hold the
// window before its end.
func FuzzManager(f *testing.F) {
	f.Add([]byte{20, 1, 1, 0, 1, 9, 2, 0, 1, 0, 3, 1, 1, 5, 0, 1})
	f.Add([]byte{12, 3, 1, 0, 5, 6, 0, 4, 1, 1, 3, 2, 6, 1, 8, 9, 7, 0, 1, 8, 2})
	f.Add([]byte{8, 0, 1, 0, 40, 2, 0, 2, 0, 9, 3, 3, 0, 2, 4, 0, 8, 8, 10, 1, 11})
	f.Add([]byte{30, 2, 6, 0, 7, 5, 0, 3, 6, 1, 9, 7, 1, 12, 2, 10, 0, 4, 1, 8, 1, 11, 0})
	// with a sliding group (window 3, then 6)
	f.Add([]byte{20, 3, 5, 9, 0, 0, 1, 0, 8, 1, 2, 1, 11, 0, 1, 2, 5, 0, 1, 0, 9, 6, 1, 1, 2, 1, 0, 3})
	f.Add([]byte{12, 1, 11, 30, 0, 1, 1, 0, 8, 11, 0, 1, 0, 2, 0, 5, 0, 3, 1, 6, 0, 4, 3, 1, 0, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		fz := &fuzzer{data: data}
		n, bs := 4+int(fz.next())%60, 1+int(fz.next())%4
		cfg := Config{Blocks: n, BlockSize: bs}
		if w := fz.next(); w%2 == 1 {
			cfg.Groups = []Group{{Blocks: n}, {Blocks: 4 + int(fz.next())%60, Window: 1 + int(w/2)%12}}
		}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fz.m = m
		for g := range m.Groups() {
			total, _ := m.GroupBlocks(g)
			fz.mem = append(fz.mem, slices.Repeat([]int32{-1}, total*bs))
		}
		fz.toks = map[SeqID][]int32{}
		for step := 0; len(fz.data) > 0; step++ {
			op := fz.op()
			if err := m.verify(); err != nil {
				t.Fatalf("step %d, after %s: %v", step, op, err)
			}
			if err := fz.check(); err != nil {
				t.Fatalf("step %d, after %s: %v", step, op, err)
			}
		}
		for _, nd := range fz.locked {
			m.Radix().Unlock(nd)
		}
		for _, s := range fz.live() {
			m.Free(s)
		}
		fz.drain()
		m.Radix().Evict(m.NumBlocks())
		for g := range m.Groups() {
			if total, free := m.GroupBlocks(g); free != total || m.Radix().GroupBlocks(g) != 0 {
				t.Fatalf("after freeing everything: %d of %d free in group %d, %d cached", free, total, g, m.Radix().GroupBlocks(g))
			}
		}
		if err := m.verify(); err != nil {
			t.Fatal(err)
		}
	})
}

type fuzzer struct {
	data   []byte
	m      *Manager
	mem    [][]int32         // mem[g]: the token each slot of group g holds, -1 if never written
	toks   map[SeqID][]int32 // each live sequence's tokens
	locked []*Node           // nodes the fuzzer has locked
}

func (fz *fuzzer) next() byte {
	if len(fz.data) == 0 {
		return 0
	}
	b := fz.data[0]
	fz.data = fz.data[1:]
	return b
}

func (fz *fuzzer) live() []SeqID {
	ids := make([]SeqID, 0, len(fz.toks))
	for s := range fz.toks {
		ids = append(ids, s)
	}
	slices.Sort(ids)
	return ids
}

// pick chooses a live sequence, or reports there is none.
func (fz *fuzzer) pick() (SeqID, bool) {
	ids := fz.live()
	if len(ids) == 0 {
		return 0, false
	}
	return ids[int(fz.next())%len(ids)], true
}

// tokens makes n tokens from a vocabulary of three, so prefixes repeat.
func (fz *fuzzer) tokens(n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(fz.next() % 3)
	}
	return t
}

func (fz *fuzzer) extra() string { return []string{"a", "b"}[fz.next()%2] }

func (fz *fuzzer) free(s SeqID) {
	fz.m.Free(s)
	delete(fz.toks, s)
}

func (fz *fuzzer) op() string {
	m := fz.m
	switch code := fz.next() % 12; code {
	case 0:
		s := m.NewSeq(fz.extra())
		fz.toks[s] = nil
		return "new"
	case 1:
		s, ok := fz.pick()
		if !ok {
			return "append to nothing"
		}
		fz.append(s, fz.tokens(int(fz.next()%9)))
		return "append"
	case 2:
		if s, ok := fz.pick(); ok {
			c := m.Fork(s)
			fz.toks[c] = slices.Clone(fz.toks[s])
		}
		return "fork"
	case 3:
		if s, ok := fz.pick(); ok {
			n := int(fz.next()) % (len(fz.toks[s]) + 1)
			if !fz.holdsWindow(s, n) {
				return "truncate past the window"
			}
			m.Truncate(s, n)
			fz.toks[s] = fz.toks[s][:n]
		}
		return "truncate"
	case 4:
		if s, ok := fz.pick(); ok {
			fz.free(s)
		}
		return "free"
	case 5:
		if s, ok := fz.pick(); ok {
			n := int(fz.next()) % (len(fz.toks[s]) + 1)
			if fz.next()%2 == 0 {
				m.CachePrefix(s, fz.toks[s][:n])
			} else {
				m.CacheResumable(s, fz.toks[s][:n])
			}
		}
		return "cache prefix"
	case 6:
		// A prompt that may share a prefix with a live sequence.
		var prompt []int32
		if s, ok := fz.pick(); ok {
			prompt = slices.Clone(fz.toks[s][:int(fz.next())%(len(fz.toks[s])+1)])
		}
		prompt = append(prompt, fz.tokens(int(fz.next()%6))...)
		s := m.NewSeq(fz.extra())
		n := m.AttachPrefix(s, prompt)
		fz.toks[s] = slices.Clone(prompt[:n])
		fz.append(s, prompt[n:])
		return "attach"
	case 7:
		var prompt []int32
		if s, ok := fz.pick(); ok {
			prompt = fz.toks[s]
		}
		_, nd := m.Radix().Match(fz.extra(), prompt)
		if nd != nil && fz.next()%2 == 0 {
			m.Radix().Lock(nd)
			fz.locked = append(fz.locked, nd)
		}
		return "match"
	case 8:
		if k := len(fz.locked); k > 0 {
			m.Radix().Unlock(fz.locked[k-1])
			fz.locked = fz.locked[:k-1]
		}
		return "unlock"
	case 9:
		n := int(fz.next() % 8)
		if n%2 == 0 {
			m.Radix().Evict(n)
			return "evict"
		}
		// as for a waiting request: what it would attach stays cached
		var prompt []int32
		if s, ok := fz.pick(); ok {
			prompt = fz.toks[s]
		}
		extra := fz.extra()
		before := m.Radix().Cached(extra, prompt)
		m.Radix().EvictSparing(n, extra, prompt)
		if after := m.Radix().Cached(extra, prompt); after != before {
			panic(fmt.Sprintf("EvictSparing evicted the spared prefix: %d cached blocks, then %d", before, after))
		}
		return "evict sparing"
	case 10:
		fz.grow()
		return "grow"
	default:
		return fz.step()
	}
}

// append writes tokens after sequence s through a plan of its own. When
// they do not fit it checks that nothing changed.
func (fz *fuzzer) append(s SeqID, tokens []int32) {
	free, n := fz.m.FreeBlocks(), fz.m.Len(s)
	if err := fz.m.Append(s, len(tokens)); err != nil {
		var oob *OutOfBlocksError
		if !errors.As(err, &oob) || oob.Need <= oob.Free || (oob.Group == 0 && oob.Free != free) {
			panic(fmt.Sprintf("Append: %v with %d free", err, free))
		}
		if fz.m.FreeBlocks() != free || fz.m.Len(s) != n {
			panic("a failed Append changed the manager")
		}
		return
	}
	fz.drain()
	fz.write(s, tokens)
}

// step plans one token or more for several sequences at once, sometimes
// frees one before the copies are drained, then writes.
func (fz *fuzzer) step() string {
	var p Plan
	adds := map[SeqID][]int32{}
	for range 1 + fz.next()%4 {
		s, ok := fz.pick()
		if !ok {
			return "empty step"
		}
		t := fz.tokens(1 + int(fz.next()%3))
		if err := fz.m.Reserve(&p, s, len(t)); err != nil {
			if !errors.Is(err, ErrOutOfBlocks) {
				panic(err)
			}
			return "step out of blocks"
		}
		adds[s] = append(adds[s], t...)
	}
	if fz.next()%4 == 0 { // the pool grows between the plan and its commit
		fz.grow()
	}
	fz.m.Commit(&p)
	if fz.next()%4 == 0 {
		if s, ok := fz.pick(); ok { // preempted between commit and copy
			fz.free(s)
			delete(adds, s)
		}
	}
	fz.drain()
	for _, s := range slices.Sorted(maps.Keys(adds)) {
		fz.write(s, adds[s])
	}
	return "step"
}

// grow adds a few blocks to the pool, and their slots to the memory
// model, up to 256 blocks.
func (fz *fuzzer) grow() {
	g := int(fz.next()) % fz.m.Groups()
	total, _ := fz.m.GroupBlocks(g)
	n := min(total+1+int(fz.next()%8), 256)
	if err := fz.m.GrowGroup(g, n); err != nil {
		panic(err)
	}
	fz.mem[g] = append(fz.mem[g], slices.Repeat([]int32{-1}, n*fz.m.BlockSize()-len(fz.mem[g]))...)
}

// drain carries out the pending copies on the memory model.
func (fz *fuzzer) drain() {
	bs := fz.m.BlockSize()
	for _, c := range fz.m.DrainCopies(nil) {
		mem := fz.mem[c.Group]
		copy(mem[int(c.Dst)*bs:][:bs], mem[int(c.Src)*bs:][:bs])
	}
}

// write stores tokens, just appended to sequence s, in their slots of
// every group.
func (fz *fuzzer) write(s SeqID, tokens []int32) {
	start := len(fz.toks[s])
	fz.toks[s] = append(fz.toks[s], tokens...)
	bs := fz.m.BlockSize()
	for g := range fz.m.Groups() {
		t := fz.m.TableIn(s, g)
		for i, tk := range tokens {
			p := start + i
			fz.mem[g][int(t[p/bs])*bs+p%bs] = tk
		}
	}
}

// holdsWindow reports whether sequence s still holds, in every group, the
// blocks the window of position n reads.
func (fz *fuzzer) holdsWindow(s SeqID, n int) bool {
	for g := range fz.m.Groups() {
		from := fz.m.windowStart(g, n)
		if t := fz.m.TableIn(s, g); from < len(t) && from*fz.m.BlockSize() < n && t[from] == NoBlock {
			return false
		}
	}
	return true
}

// check reads every live sequence and every cached edge back through the
// memory model.
func (fz *fuzzer) check() error {
	m := fz.m
	bs := m.BlockSize()
	for s, want := range fz.toks {
		if m.Len(s) != len(want) {
			return fmt.Errorf("sequence %d holds %d tokens, want %d", s, m.Len(s), len(want))
		}
		for g := range m.Groups() {
			t := m.TableIn(s, g)
			from := m.windowStart(g, len(want))
			for i, tk := range want {
				b := t[i/bs]
				if b == NoBlock && i/bs < from {
					continue
				}
				if b == NoBlock {
					return fmt.Errorf("sequence %d of %d tokens has let go of token %d of group %d, in its window", s, len(want), i, g)
				}
				if got := fz.mem[g][int(b)*bs+i%bs]; got != tk {
					return fmt.Errorf("sequence %d token %d of group %d reads %d, want %d", s, i, g, got, tk)
				}
			}
		}
	}
	var err error
	for _, root := range m.Radix().roots {
		root.walk(func(n *Node) {
			for g, blocks := range n.blocks {
				for i, tk := range n.tokens {
					b := blocks[i/bs]
					if b == NoBlock {
						continue
					}
					if got := fz.mem[g][int(b)*bs+i%bs]; got != tk && err == nil {
						err = fmt.Errorf("cached node %d token %d of group %d reads %d, want %d", n.id, i, g, got, tk)
					}
				}
			}
		})
	}
	return err
}
