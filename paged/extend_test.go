package paged

import (
	"slices"
	"testing"
)

// TestExtendPrefix: a sequence admitted while another computed the same
// prompt picks up the blocks cached since, by reference.
func TestExtendPrefix(t *testing.T) {
	m, err := New(Config{Blocks: 16, BlockSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	a, b := m.NewSeq("k"), m.NewSeq("k")
	if got := m.AttachPrefix(b, prompt[:12]); got != 0 {
		t.Fatalf("attached %d from an empty cache", got)
	}
	if err := m.Append(a, 8); err != nil {
		t.Fatal(err)
	}
	m.CachePrefix(a, prompt[:8])
	if got := m.ExtendPrefix(b, prompt[:12]); got != 8 {
		t.Fatalf("extended by %d, want 8", got)
	}
	if !slices.Equal(m.Table(b), m.Table(a)) || m.Len(b) != 8 {
		t.Errorf("b's table %v (len %d), want a's %v", m.Table(b), m.Len(b), m.Table(a))
	}
	for _, blk := range m.Table(a) {
		if m.Ref(blk) != 3 { // a, b and the tree
			t.Errorf("block %d has %d refs, want 3", blk, m.Ref(blk))
		}
	}
	if got := m.ExtendPrefix(b, prompt[:12]); got != 0 {
		t.Errorf("extended again by %d", got)
	}
	other := m.NewSeq("other key")
	if got := m.ExtendPrefix(other, prompt[:12]); got != 0 {
		t.Errorf("another key extended by %d", got)
	}
	if err := m.verify(); err != nil {
		t.Fatal(err)
	}
	m.Free(a)
	m.Free(b)
	m.Free(other)
	m.Radix().Evict(16)
	if m.FreeBlocks() != 16 {
		t.Errorf("free %d after freeing all, want 16", m.FreeBlocks())
	}
}
