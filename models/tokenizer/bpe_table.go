package tokenizer

import "math/bits"

// mergeTable maps a pair of symbols to its merge: open addressing with
// linear probing over a power-of-two slice, at most half full. Merge lookups
// are most of the encoding time, and this is about twice as fast as a Go map
// with uint64 keys. It is immutable after building.
type mergeTable struct {
	slots []mergeSlot
	shift uint // 64 - log2(len(slots))
}

type mergeSlot struct {
	key       uint64 // bpePairKey(left, right); emptyPair when free
	rank, sym int32
}

// emptyPair is no pair's key: symbols are non-negative int32s.
const emptyPair = ^uint64(0)

func newMergeTable(n int) *mergeTable {
	size := 16
	for size < 2*n {
		size *= 2
	}
	t := &mergeTable{slots: make([]mergeSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	for i := range t.slots {
		t.slots[i].key = emptyPair
	}
	return t
}

func (t *mergeTable) home(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> t.shift }

// add inserts a merge unless the pair has one already (the first rank wins),
// and reports whether it did. The table must have room: callers size it.
func (t *mergeTable) add(key uint64, mg bpeMerge) bool {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.key {
		case key:
			return false
		case emptyPair:
			*s = mergeSlot{key: key, rank: mg.rank, sym: mg.sym}
			return true
		}
	}
}

// get returns the merge of a pair: its rank and the symbol it makes, or
// noMerge.
func (t *mergeTable) get(key uint64) (rank, sym int32) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(key); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == key {
			return s.rank, s.sym
		}
		if s.key == emptyPair {
			return noMerge, -1
		}
	}
}
