package grammar

import (
	"bytes"
	"cmp"
	"slices"
	"unicode/utf8"

	"folio/models/tokenizer"
)

// Tokens is a vocabulary arranged for masking: each token's bytes, the
// end-of-generation tokens, and a trie of all token bytes laid out flat in
// preorder, so that computing a mask is one pass over a few arrays that
// skips a whole subtree (every token sharing a rejected prefix) in one jump.
// Build it once per model; it is immutable and safe to share.
type Tokens struct {
	pieces [][]byte // id -> the bytes it adds to the output; empty: never allowed
	eog    []uint64 // bitset over ids: tokens that end generation
	size   int      // the number of ids

	// The trie, one entry per node in preorder (the root is implicit);
	// 15 bytes a node: about 5 MB for a 150k vocabulary.
	label    []byte  // the byte on the edge into the node
	depth    []int32 // bytes from the root: 1 for the root's children
	end      []int32 // index past the node's subtree
	tokOff   []int32 // the ids of tokens whose bytes end at node i are ids[tokOff[i]:tokOff[i+1]]
	ids      []int32 // so the tokens of node i's subtree are ids[tokOff[i]:tokOff[end[i]]]
	maxDepth int
	// plain[i]: every token in node i's subtree is plain string text (whole
	// UTF-8 characters, no quote, backslash or control character), at most
	// runes[i] code points long (tokRunes by id). Inside a string, tokens of
	// a plain subtree are allowed if they fit, and most of a vocabulary is
	// plain: the walk settles such a subtree without stepping the matcher.
	plain    []bool
	runes    []uint8
	tokRunes []uint8
}

// NewTokens arranges a vocabulary given each token's bytes by id and the
// ids that end generation. End tokens are allowed only where the output may
// end, whatever their bytes; other tokens with no bytes (BOS, control
// tokens) are never allowed. pieces is kept, not copied.
func NewTokens(pieces [][]byte, eog []int32) *Tokens {
	t := &Tokens{pieces: pieces, size: len(pieces), eog: make([]uint64, (len(pieces)+63)/64)}
	for _, id := range eog {
		if id >= 0 && int(id) < len(pieces) {
			t.eog[id>>6] |= 1 << (id & 63)
		}
	}
	var order []int32
	for id, p := range pieces {
		if len(p) > 0 && !t.isEOG(int32(id)) {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Or(bytes.Compare(pieces[a], pieces[b]), cmp.Compare(a, b))
	})
	// In sorted order a token shares a prefix with the previous one and
	// extends the path there: close the deeper nodes, add the rest.
	var path []int32 // the open nodes, by depth-1
	var prev []byte
	for _, id := range order {
		p := pieces[id]
		l := 0
		for l < len(p) && l < len(prev) && p[l] == prev[l] {
			l++
		}
		for len(path) > l {
			t.end[path[len(path)-1]] = int32(len(t.label))
			path = path[:len(path)-1]
		}
		for k := l; k < len(p); k++ {
			path = append(path, int32(len(t.label)))
			t.label = append(t.label, p[k])
			t.depth = append(t.depth, int32(k+1))
			t.end = append(t.end, 0)
			t.tokOff = append(t.tokOff, int32(len(t.ids)))
		}
		t.ids = append(t.ids, id) // at the node just made, or the same bytes again
		t.maxDepth = max(t.maxDepth, len(p))
		prev = p
	}
	for _, n := range path {
		t.end[n] = int32(len(t.label))
	}
	t.tokOff = append(t.tokOff, int32(len(t.ids)))
	t.summarize()
	return t
}

// summarize fills plain and runes, children before parents. A token of
// 255 code points or more is left to the matcher: it is never plain.
func (t *Tokens) summarize() {
	t.plain, t.runes = make([]bool, len(t.label)), make([]uint8, len(t.label))
	t.tokRunes = make([]uint8, t.size)
	for id, p := range t.pieces {
		t.tokRunes[id] = uint8(min(utf8.RuneCount(p), 255))
	}
	for i := len(t.label) - 1; i >= 0; i-- {
		plain, runes := true, 0
		for _, id := range t.ids[t.tokOff[i]:t.tokOff[i+1]] {
			p := t.pieces[id]
			plain = plain && t.tokRunes[id] < 255 && utf8.Valid(p) &&
				!slices.ContainsFunc(p, func(b byte) bool { return b == '"' || b == '\\' || b < 0x20 })
			runes = max(runes, int(t.tokRunes[id]))
		}
		for j := i + 1; j < int(t.end[i]); j = int(t.end[j]) { // the children
			plain = plain && t.plain[j]
			runes = max(runes, int(t.runes[j]))
		}
		t.plain[i], t.runes[i] = plain, uint8(runes)
	}
}

// TokensOf arranges the vocabulary of a tokenizer: each token's decoded
// bytes (control tokens have none) and its end-of-generation tokens.
func TokensOf(tok *tokenizer.Tokenizer) *Tokens {
	v := tok.Vocab()
	pieces := make([][]byte, v.Size())
	for id := range pieces {
		pieces[id] = tok.TokenBytes(int32(id), tokenizer.DecodeOptions{})
	}
	return NewTokens(pieces, v.EOG)
}

// Size is the number of token ids.
func (t *Tokens) Size() int { return t.size }

func (t *Tokens) isEOG(id int32) bool { return t.eog[id>>6]&(1<<(id&63)) != 0 }

// walk sets in set the tokens whose bytes the threads can consume and
// after which some thread's estimate is at most limit (limit < 0: any),
// and returns far, the largest such estimate a set token leaves (an upper
// bound). Scratch of maxDepth+1 entries per level d of the current trie
// path: levels[d] are the threads after its first d bytes and marks[d]
// the arena length when they were made, so that moving to a node at depth
// d drops what the abandoned deeper path pushed; runes[d] counts the
// path's characters and budget[d] is how long a plain token, counted from
// the root, may be for a string among levels[d] (-1: none is between
// characters of a string within the limit), whose estimates are at most
// farAt[d].
func (t *Tokens) walk(m *matcher, cur []thread, set []uint64, s *walkScratch, limit int32) (far int32) {
	base := len(m.arena)
	s.levels[0] = append(s.levels[0][:0], cur...)
	s.marks[0], s.runes[0] = base, 0
	s.budget[0], s.farAt[0] = m.stringRoom(cur, limit)
	for i := 0; i < len(t.label); {
		d := t.depth[i]
		if b := s.budget[d-1]; t.plain[i] && b >= 0 {
			// Every token below is plain text from the root, so it stays
			// in that string (its estimate does not grow): it fits if its
			// length does.
			all := b >= int32(t.runes[i])
			any := false
			for _, id := range t.ids[t.tokOff[i]:t.tokOff[t.end[i]]] {
				if all || int32(t.tokRunes[id]) <= b {
					set[id>>6] |= 1 << (id & 63)
					any = true
				}
			}
			if any {
				far = max(far, s.farAt[d-1])
			}
			i = int(t.end[i])
			continue
		}
		m.arena = m.arena[:s.marks[d-1]]
		next := m.advance(s.levels[d-1], t.label[i], s.levels[d][:0])
		s.levels[d] = next
		if len(next) == 0 {
			i = int(t.end[i]) // no token under this node can be consumed
			continue
		}
		s.marks[d], s.runes[d], s.budget[d] = len(m.arena), s.runes[d-1], -1
		if t.label[i]&0xC0 != 0x80 { // not a UTF-8 continuation byte
			s.runes[d]++
		}
		if room, f := m.stringRoom(next, limit); room >= 0 {
			s.budget[d], s.farAt[d] = room+s.runes[d], f
		}
		if ids := t.ids[t.tokOff[i]:t.tokOff[i+1]]; len(ids) > 0 {
			e := inf
			for _, th := range next {
				e = min(e, m.est(th))
			}
			if limit < 0 || e <= limit {
				far = max(far, e)
				for _, id := range ids {
					set[id>>6] |= 1 << (id & 63)
				}
			}
		}
		i++
	}
	m.arena = m.arena[:base]
	return far
}

// walkScratch is walk's per-level scratch, kept by a Constraint.
type walkScratch struct {
	levels               [][]thread
	marks                []int
	runes, budget, farAt []int32
}

func (s *walkScratch) ensure(depth int) {
	if len(s.levels) < depth+1 {
		n := depth + 1
		*s = walkScratch{make([][]thread, n), make([]int, n), make([]int32, n), make([]int32, n), make([]int32, n)}
	}
}
