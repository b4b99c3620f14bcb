package paged

import (
	"slices"
	"testing"
)

// newSliding is a Manager of blocks of 4 tokens with a full-attention
// group of 64 blocks and a sliding group of 16 blocks and window w.
func newSliding(t *testing.T, w int) *Manager {
	t.Helper()
	m, err := New(Config{BlockSize: 4, Groups: []Group{{Blocks: 64}, {Blocks: 16, Window: w}}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func seqTokens(n int) []int32 {
	t := make([]int32, n)
	for i := range t {
		t[i] = int32(i % 7)
	}
	return t
}

// TestSlidingTable: a sliding group's table lets go of the blocks wholly
// before the window of the next row, at the commit that moves past them,
// and the pool hands them out again; the full group keeps every block.
func TestSlidingTable(t *testing.T) {
	m := newSliding(t, 6)
	s := m.NewSeq("")
	steps := []struct {
		add       int
		full, swa []BlockID
		freeSwa   int
	}{
		// 5 tokens: the next row (5) reads 0…5: nothing goes yet
		{5, []BlockID{0, 1}, []BlockID{0, 1}, 14},
		// commit from 5: row 5 reads 0…5, block 0 stays; 9 tokens, 3 blocks
		{4, []BlockID{0, 1, 2}, []BlockID{0, 1, 2}, 13},
		// commit from 9: row 9 reads 4…9, block 0 goes and is reused
		{4, []BlockID{0, 1, 2, 3}, []BlockID{NoBlock, 1, 2, 0}, 13},
		// commit from 13: row 13 reads 8…13, block 1 goes
		{1, []BlockID{0, 1, 2, 3}, []BlockID{NoBlock, NoBlock, 2, 0}, 14},
		// commit from 14 to 30: row 14 reads 9…14, block 2 stays
		{16, []BlockID{0, 1, 2, 3, 4, 5, 6, 7}, []BlockID{NoBlock, NoBlock, 2, 0, 1, 3, 4, 5}, 10},
	}
	for i, st := range steps {
		if err := m.Append(s, st.add); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := m.TableIn(s, 0); !slices.Equal(got, st.full) {
			t.Errorf("step %d: full table %v, want %v", i, got, st.full)
		}
		if got := m.TableIn(s, 1); !slices.Equal(got, st.swa) {
			t.Errorf("step %d: sliding table %v, want %v", i, got, st.swa)
		}
		if _, free := m.GroupBlocks(1); free != st.freeSwa {
			t.Errorf("step %d: %d sliding blocks free, want %d", i, free, st.freeSwa)
		}
		if err := m.verify(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if got := m.Table32In(s, 1); got[0] != -1 {
		t.Errorf("Table32In gives %d for a released entry, want -1", got[0])
	}
	m.Free(s)
	if _, free := m.GroupBlocks(1); free != 16 {
		t.Errorf("after Free: %d sliding blocks free, want 16", free)
	}
}

// TestSlidingLongContext: at 32k tokens, in chunks of 512 and then one at
// a time, a sliding group of window 512 holds at most the window plus a
// chunk, however long the sequence, in a pool of 80 blocks of 16. With
// gemma3-1b's layers (4 of 26 full, 22 sliding) the blocks held are at
// most a fifth of a full-attention cache's (every layer's 2048 blocks).
func TestSlidingLongContext(t *testing.T) {
	const bs, w, n = 16, 512, 32768
	m, err := New(Config{BlockSize: bs, Groups: []Group{{Blocks: n / bs}, {Blocks: 80, Window: w}}})
	if err != nil {
		t.Fatal(err)
	}
	s := m.NewSeq("")
	peak := 0
	for m.Len(s) < n {
		step := min(512, n-64-m.Len(s))
		if step <= 0 {
			step = 1
		}
		if err := m.Append(s, step); err != nil {
			t.Fatalf("at %d tokens: %v", m.Len(s), err)
		}
		peak = max(peak, m.HeldBlocks(s, 1))
	}
	if got, want := m.HeldBlocks(s, 0), n/bs; got != want {
		t.Errorf("full group holds %d blocks, want %d", got, want)
	}
	// the window of the last row, 32256…32767: blocks 2016…2047
	end := m.HeldBlocks(s, 1)
	if end != w/bs {
		t.Errorf("sliding group holds %d blocks at the end, want %d", end, w/bs)
	}
	if want := (w+512)/bs + 1; peak > want {
		t.Errorf("sliding group held %d blocks at the peak, want at most %d", peak, want)
	}
	const fullLayers, slidingLayers = 4, 22
	for _, held := range []int{end, peak} {
		ratio := float64(fullLayers*(n/bs)+slidingLayers*held) / float64((fullLayers+slidingLayers)*(n/bs))
		if ratio > 0.2 {
			t.Errorf("with %d sliding blocks the cache holds %.3f of a full-attention cache's K/V, want at most 0.2", held, ratio)
		}
	}
}

// TestSlidingPrefix: a prefix cached with CachePrefix alone cannot be
// resumed (its sliding blocks were never given to the cache) and is
// computed again; one cached with CacheResumable attaches with the
// window's blocks, the same ones, and the entries before it NoBlock. A
// longer prompt that leaves the cached path where the cache lacks the
// window is cut back to a point where it has it.
func TestSlidingPrefix(t *testing.T) {
	m := newSliding(t, 6)
	toks := seqTokens(24)
	a := m.NewSeq("")
	if err := m.Append(a, 24); err != nil {
		t.Fatal(err)
	}
	m.CachePrefix(a, toks)
	b := m.NewSeq("")
	if n := m.AttachPrefix(b, toks); n != 0 {
		t.Errorf("attach without the window: %d tokens, want 0", n)
	}
	if got := m.Radix().Cached("", toks); got != 0 {
		t.Errorf("Cached without the window: %d blocks, want 0", got)
	}
	m.Free(b)

	m.CacheResumable(a, toks[:20])
	c := m.NewSeq("")
	if n := m.AttachPrefix(c, toks); n != 20 {
		t.Fatalf("attach after CacheResumable of 20: %d tokens, want 20", n)
	}
	// row 20 reads 15…20: blocks 3 and 4
	wantSwa := []BlockID{NoBlock, NoBlock, NoBlock, m.TableIn(a, 1)[3], m.TableIn(a, 1)[4]}
	if got := m.TableIn(c, 1); !slices.Equal(got, wantSwa) {
		t.Errorf("attached sliding table %v, want %v", got, wantSwa)
	}
	if got, want := m.TableIn(c, 0), m.TableIn(a, 0)[:5]; !slices.Equal(got, want) {
		t.Errorf("attached full table %v, want %v", got, want)
	}
	m.Free(c)

	// a prompt that agrees up to 16 tokens: the window of 16 (blocks 2
	// and 3) is not all cached, so it attaches nothing
	other := slices.Concat(toks[:16], []int32{9, 9, 9, 9, 9})
	d := m.NewSeq("")
	if n := m.AttachPrefix(d, other); n != 0 {
		t.Errorf("attach of a prompt leaving the path at 16: %d tokens, want 0", n)
	}
	if err := m.verify(); err != nil {
		t.Fatal(err)
	}
}

// TestSlidingFork: forks share the sliding blocks too; writing into the
// shared last block copies it in each group, and the copy names its group.
// The writer lets go of its share of blocks 0 and 1 before the window;
// the parent keeps them, so the sliding copy goes to block 4.
func TestSlidingFork(t *testing.T) {
	m := newSliding(t, 6)
	s := m.NewSeq("")
	if err := m.Append(s, 14); err != nil {
		t.Fatal(err)
	}
	c := m.Fork(s)
	if err := m.Append(c, 1); err != nil {
		t.Fatal(err)
	}
	got := m.DrainCopies(nil)
	want := []Copy{{Src: 3, Dst: 4, Group: 0}, {Src: 3, Dst: 4, Group: 1}}
	if !slices.Equal(got, want) {
		t.Errorf("copies %v, want %v", got, want)
	}
	if got, want := m.TableIn(c, 1), []BlockID{NoBlock, NoBlock, 2, 4}; !slices.Equal(got, want) {
		t.Errorf("fork's sliding table %v, want %v", got, want)
	}
	if got, want := m.TableIn(s, 1), []BlockID{0, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("parent's sliding table %v, want %v", got, want)
	}
	if err := m.verify(); err != nil {
		t.Fatal(err)
	}
}

// TestSlidingTruncatePastWindow: truncating to a point whose window the
// sequence has let go of is a bug of the caller and panics, naming it.
func TestSlidingTruncatePastWindow(t *testing.T) {
	m := newSliding(t, 6)
	s := m.NewSeq("")
	for range 4 {
		if err := m.Append(s, 5); err != nil {
			t.Fatal(err)
		}
	}
	m.Truncate(s, 17) // row 17 reads 12…17: still held
	defer func() {
		if recover() == nil {
			t.Error("truncate to 4 tokens did not panic")
		}
	}()
	m.Truncate(s, 4)
}
