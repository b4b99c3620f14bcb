package paged

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// newManager makes a Manager of n blocks of bs tokens and fails the test
// if its invariants break when the test ends.
func newManager(t testing.TB, n, bs int) *Manager {
	t.Helper()
	m, err := New(Config{Blocks: n, BlockSize: bs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.verify(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func mustAppend(t testing.TB, m *Manager, s SeqID, n int) {
	t.Helper()
	if err := m.Append(s, n); err != nil {
		t.Fatal(err)
	}
	if err := m.verify(); err != nil {
		t.Fatal(err)
	}
}

// TestTables runs small scripts on a pool of 16 blocks of 4 tokens and
// checks the exact tables, copies and free count they leave.
func TestTables(t *testing.T) {
	type result struct {
		tables [][]BlockID
		copies []Copy
	}
	cases := []struct {
		name       string
		run        func(t *testing.T, m *Manager) result
		wantTables [][]BlockID
		wantCopies []Copy
		wantFree   int
	}{{
		name: "append takes a block only when the last is full",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 5) // blocks 0, 1
			mustAppend(t, m, a, 3) // fills block 1
			mustAppend(t, m, a, 1) // block 2
			return result{tables: [][]BlockID{m.Table(a)}}
		},
		wantTables: [][]BlockID{{0, 1, 2}},
		wantFree:   13,
	}, {
		name: "free returns blocks, reused last-freed first",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 12) // 0 1 2
			m.Free(a)
			b := m.NewSeq("")
			mustAppend(t, m, b, 5)
			return result{tables: [][]BlockID{m.Table(b)}}
		},
		wantTables: [][]BlockID{{0, 1}}, // freed from the tail: 0 on top
		wantFree:   14,
	}, {
		name: "fork shares every block; a write into the shared partial block copies it",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 6) // 0 [full], 1 [2 of 4]
			b := m.Fork(a)
			mustAppend(t, m, b, 1) // b writes into shared 1: copy 1 -> 2
			mustAppend(t, m, a, 1) // a now holds 1 alone: no copy
			mustAppend(t, m, a, 2) // a fills 1 and takes 3
			return result{tables: [][]BlockID{m.Table(a), m.Table(b)}, copies: m.DrainCopies(nil)}
		},
		wantTables: [][]BlockID{{0, 1, 3}, {0, 2}},
		wantCopies: []Copy{{Src: 1, Dst: 2}},
		wantFree:   12,
	}, {
		name: "fork at a block boundary copies nothing",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 8)
			b := m.Fork(a)
			mustAppend(t, m, a, 1)
			mustAppend(t, m, b, 1)
			return result{tables: [][]BlockID{m.Table(a), m.Table(b)}, copies: m.DrainCopies(nil)}
		},
		wantTables: [][]BlockID{{0, 1, 2}, {0, 1, 3}},
		wantFree:   12,
	}, {
		name: "three forks of one partial block: three copies, the last holder writes in place",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 3)
			b, c, d := m.Fork(a), m.Fork(a), m.Fork(a)
			var p Plan
			for _, s := range []SeqID{a, b, c, d} {
				if err := m.Reserve(&p, s, 1); err != nil {
					t.Fatal(err)
				}
			}
			if p.Blocks() != 3 || p.Copies() != 3 {
				t.Errorf("plan: %d blocks, %d copies; want 3, 3", p.Blocks(), p.Copies())
			}
			m.Commit(&p)
			return result{tables: [][]BlockID{m.Table(a), m.Table(b), m.Table(c), m.Table(d)}, copies: m.DrainCopies(nil)}
		},
		wantTables: [][]BlockID{{1}, {2}, {3}, {0}},
		wantCopies: []Copy{{0, 1, 0}, {0, 2, 0}, {0, 3, 0}},
		wantFree:   12,
	}, {
		name: "truncate releases the tail; rewriting a shared block copies it",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 10) // 0 1 2
			b := m.Fork(a)
			m.Truncate(a, 5) // a: 0 1, block 2 stays with b
			mustAppend(t, m, a, 1)
			return result{tables: [][]BlockID{m.Table(a), m.Table(b)}, copies: m.DrainCopies(nil)}
		},
		wantTables: [][]BlockID{{0, 3}, {0, 1, 2}},
		wantCopies: []Copy{{1, 3, 0}},
		wantFree:   12,
	}, {
		name: "truncate to a block boundary, then append: a fresh block",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 10) // 0 1 2
			m.Truncate(a, 4)        // frees 2 then 1
			mustAppend(t, m, a, 1)
			return result{tables: [][]BlockID{m.Table(a)}}
		},
		wantTables: [][]BlockID{{0, 1}},
		wantFree:   14,
	}, {
		name: "a pending copy keeps both blocks until drained",
		run: func(t *testing.T, m *Manager) result {
			a := m.NewSeq("")
			mustAppend(t, m, a, 2)
			b := m.Fork(a)
			mustAppend(t, m, b, 1) // copy 0 -> 1
			m.Free(a)
			m.Free(b)
			if m.FreeBlocks() != 14 || m.PendingCopies() != 1 {
				t.Errorf("before drain: %d free, %d pending; want 14, 1", m.FreeBlocks(), m.PendingCopies())
			}
			c := m.NewSeq("")
			mustAppend(t, m, c, 1) // not block 0 or 1
			return result{tables: [][]BlockID{m.Table(c)}, copies: m.DrainCopies(nil)}
		},
		wantTables: [][]BlockID{{2}},
		wantCopies: []Copy{{0, 1, 0}},
		wantFree:   15,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newManager(t, 16, 4)
			got := c.run(t, m)
			if fmt.Sprint(got.tables) != fmt.Sprint(c.wantTables) {
				t.Errorf("tables %v, want %v", got.tables, c.wantTables)
			}
			if !slices.Equal(got.copies, c.wantCopies) {
				t.Errorf("copies %v, want %v", got.copies, c.wantCopies)
			}
			if m.FreeBlocks() != c.wantFree {
				t.Errorf("%d blocks free, want %d", m.FreeBlocks(), c.wantFree)
			}
		})
	}
}

// TestParallelSampling pins what n=4 sampling of a 1,000-token prompt
// takes: the prompt's blocks once, plus each branch's own.
func TestParallelSampling(t *testing.T) {
	const prompt, out, n = 1000, 100, 4
	for _, bs := range []int{8, 16, 32} {
		t.Run(fmt.Sprint("B=", bs), func(t *testing.T) {
			m := newManager(t, 4096, bs)
			seqs := []SeqID{m.NewSeq("")}
			mustAppend(t, m, seqs[0], prompt)
			if got, want := m.NumBlocks()-m.FreeBlocks(), ceilDiv(prompt, bs); got != want {
				t.Fatalf("prompt takes %d blocks, want ceil(%d/%d) = %d", got, prompt, bs, want)
			}
			for range n - 1 {
				seqs = append(seqs, m.Fork(seqs[0]))
			}
			if m.NumBlocks()-m.FreeBlocks() != ceilDiv(prompt, bs) {
				t.Fatal("forks took blocks")
			}
			for range out {
				var p Plan
				for _, s := range seqs {
					if err := m.Reserve(&p, s, 1); err != nil {
						t.Fatal(err)
					}
				}
				m.Commit(&p)
			}
			copies := m.DrainCopies(nil)
			// The full prompt blocks are shared; a partial last one is
			// copied by all but one branch. Each branch then owns the
			// blocks from its first written one to its end.
			shared := prompt / bs
			own := ceilDiv(prompt+out, bs) - shared
			if got, want := m.NumBlocks()-m.FreeBlocks(), shared+n*own; got != want {
				t.Errorf("%d blocks in use, want %d shared + %d×%d own = %d", got, shared, n, own, want)
			}
			wantCopies := 0
			if prompt%bs != 0 {
				wantCopies = n - 1
			}
			if len(copies) != wantCopies {
				t.Errorf("%d copies %v, want %d", len(copies), copies, wantCopies)
			}
			for _, c := range copies {
				if c.Src != BlockID(prompt/bs) {
					t.Errorf("copy %v: source is not the partial prompt block %d", c, prompt/bs)
				}
			}
			unshared := n * ceilDiv(prompt+out, bs)
			t.Logf("B=%d: %d blocks shared vs %d for %d copies (%.0f%% saved)", bs, shared+n*own, unshared, n,
				100*(1-float64(shared+n*own)/float64(unshared)))
		})
	}
	// B=16 spelled out: 62 full prompt blocks + 4 × (69 - 62) = 90 blocks.
	m := newManager(t, 4096, 16)
	a := m.NewSeq("")
	mustAppend(t, m, a, prompt)
	seqs := []SeqID{a, m.Fork(a), m.Fork(a), m.Fork(a)}
	for _, s := range seqs { // a copies 62 to 63 and takes 64-68; b 70, 71-76; ...
		mustAppend(t, m, s, out)
	}
	if used := m.NumBlocks() - m.FreeBlocks(); used != 90 {
		t.Errorf("B=16: %d blocks, want 90 (4 independent copies: 276)", used)
	}
	if got := m.DrainCopies(nil); !slices.Equal(got, []Copy{{62, 63, 0}, {62, 70, 0}, {62, 77, 0}}) {
		t.Errorf("B=16 copies %v", got)
	}
}

func TestReserveChangesNothing(t *testing.T) {
	m := newManager(t, 4, 4)
	a, b := m.NewSeq(""), m.NewSeq("")
	mustAppend(t, m, a, 10) // 3 blocks, 1 free
	var p Plan
	if err := m.Reserve(&p, a, 2); err != nil { // fills block 2: no block
		t.Fatal(err)
	}
	if err := m.Reserve(&p, b, 3); err != nil { // 1 block
		t.Fatal(err)
	}
	err := m.Reserve(&p, a, 1) // a would need block 4 of 4: 2 in all
	var oob *OutOfBlocksError
	if !errors.As(err, &oob) || !errors.Is(err, ErrOutOfBlocks) ||
		err.Error() != "paged: out of KV blocks (free 1, need 2)" {
		t.Fatalf("Reserve past the pool: %v", err)
	}
	if p.Blocks() != 1 || m.FreeBlocks() != 1 || m.Len(a) != 10 || m.Len(b) != 0 {
		t.Fatalf("after a failed Reserve: plan %d blocks, %d free, lens %d %d", p.Blocks(), m.FreeBlocks(), m.Len(a), m.Len(b))
	}
	m.Commit(&p)
	if m.Len(a) != 12 || m.Len(b) != 3 || !slices.Equal(m.Table(b), []BlockID{3}) || m.FreeBlocks() != 0 {
		t.Fatalf("after Commit: lens %d %d, b %v, %d free", m.Len(a), m.Len(b), m.Table(b), m.FreeBlocks())
	}
	if err := m.Append(b, 1); err != nil { // fits in block 3
		t.Fatal(err)
	}
}

func TestCommitStalePlanPanics(t *testing.T) {
	m := newManager(t, 8, 4)
	a := m.NewSeq("")
	var p Plan
	if err := m.Reserve(&p, a, 3); err != nil {
		t.Fatal(err)
	}
	m.Free(m.Fork(a))
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("Commit of a stale plan did not panic")
		}
	}()
	m.Commit(&p)
}

func TestSlotsAndTable32(t *testing.T) {
	m := newManager(t, 8, 4)
	a, b := m.NewSeq(""), m.NewSeq("")
	mustAppend(t, m, a, 2) // block 0
	mustAppend(t, m, b, 5) // blocks 1, 2
	mustAppend(t, m, a, 3) // block 0 full, block 3
	var slots []int32
	for i := range m.Len(a) {
		slots = append(slots, m.Slot(a, i))
	}
	if want := []int32{0, 1, 2, 3, 12}; !slices.Equal(slots, want) {
		t.Errorf("slots %v, want %v", slots, want)
	}
	if got := m.Table32(b); !slices.Equal(got, []int32{1, 2}) {
		t.Errorf("Table32 %v", got)
	}
}

func TestFreedSequencePanics(t *testing.T) {
	m := newManager(t, 8, 4)
	a := m.NewSeq("")
	m.Free(a)
	defer func() {
		if r := recover(); r != "paged: sequence 0 is not live" {
			t.Fatalf("panic %v", r)
		}
	}()
	m.Len(a)
}
