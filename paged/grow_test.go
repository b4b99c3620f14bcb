package paged

import (
	"errors"
	"slices"
	"testing"
)

// TestGrow: growing a full pool keeps every table, cached prefix, lock and
// pending copy as it was, hands out the new blocks lowest first, and lets
// a plan made before the growth commit.
func TestGrow(t *testing.T) {
	m := newManager(t, 4, 4)
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	a := m.NewSeq("k")
	mustAppend(t, m, a, 8) // blocks 0, 1
	m.CachePrefix(a, prompt)
	b := m.Fork(a)
	mustAppend(t, m, b, 2) // block 2
	c := m.NewSeq("k")
	mustAppend(t, m, c, 3) // block 3: the pool is full
	d := m.NewSeq("k")
	if err := m.Append(d, 1); !errors.Is(err, ErrOutOfBlocks) {
		t.Fatalf("append to a full pool: %v, want ErrOutOfBlocks", err)
	}
	mustAppend(t, m, d, 0)
	var p Plan
	if err := m.Reserve(&p, c, 1); err != nil { // into block 3: no new block
		t.Fatal(err)
	}
	tables := [][]BlockID{slices.Clone(m.Table(a)), slices.Clone(m.Table(b)), slices.Clone(m.Table(c))}

	if err := m.Grow(3); err == nil {
		t.Error("shrinking to 3 blocks: no error")
	}
	if err := m.Grow(7); err != nil {
		t.Fatal(err)
	}
	if m.NumBlocks() != 7 || m.FreeBlocks() != 3 {
		t.Errorf("after growing to 7: %d blocks, %d free; want 7 and 3", m.NumBlocks(), m.FreeBlocks())
	}
	m.Commit(&p) // a plan made before the growth
	for i, s := range []SeqID{a, b, c} {
		if !slices.Equal(m.Table(s), tables[i]) {
			t.Errorf("sequence %d's table %v after growing, want %v", s, m.Table(s), tables[i])
		}
	}
	mustAppend(t, m, d, 9) // 3 new blocks
	if got, want := m.Table(d), []BlockID{4, 5, 6}; !slices.Equal(got, want) {
		t.Errorf("the new blocks went out as %v, want %v", got, want)
	}
	e := m.NewSeq("k")
	if n := m.AttachPrefix(e, append(slices.Clone(prompt), 9)); n != 8 || !slices.Equal(m.Table(e), []BlockID{0, 1}) {
		t.Errorf("the cached prefix after growing: %d tokens in %v, want 8 in [0 1]", n, m.Table(e))
	}
}
