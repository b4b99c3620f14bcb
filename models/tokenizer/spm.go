package tokenizer

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

// SentencePiece BPE ("llama" vocabularies), as llama.cpp's llm_tokenizer_spm
// runs it:
//
//  1. the run of plain text gets one leading space when it starts the input
//     or follows a special token (add_space_prefix), and every ' ' becomes
//     "▁" (U+2581);
//  2. the text is split into UTF-8 characters (a lead byte says how many
//     bytes follow, whether or not they are continuation bytes), the symbols
//     of a doubly linked list over one flat slice;
//  3. while some adjacent pair of symbols spells a vocabulary piece, the pair
//     whose piece has the highest score is merged (ties: the leftmost),
//     taken from a max-heap of candidate pairs; entries made stale by an
//     earlier merge are recognised by their size and skipped;
//  4. each final symbol becomes its piece's id, or, when it is a lone
//     character the vocabulary lacks, one <0xNN> token per byte (byte
//     fallback), else UNK per byte.
//
// llama.cpp's session also keeps a rev_merge map for a resegment step that
// splits final symbols along their merge history. Every key of that map is a
// vocabulary piece and resegment consults it only for a symbol that is not
// one, so the step never runs and is left out here. (SentencePiece's own
// resegment undoes merges into UNUSED pieces; llama.cpp does not, and neither
// does folio. No SentencePiece vocabulary folio tests has UNUSED pieces.)
//
// SentencePiece has no pre-tokenizer: in llama.cpp the whole run is one merge
// problem, so 1 MB of text without a special token is one heap of a million
// pairs, and every pop misses the cache. folio cuts the run into words that
// no merge can join and merges each word on its own: a cut goes before a "▁"
// whose left neighbour c is such that no piece contains c+"▁" (in Llama's
// vocabulary only "▁" itself, for runs of spaces). No pair across a cut is
// ever queued, and within a word the heap order is the same, so the ids are
// those of the single merge problem. A long word still costs O(n log n). The
// scratch slices are pooled across calls.

// spaceMark is SentencePiece's visible space, U+2581 "▁".
const spaceMark = "\u2581"

// spm implements model for SentencePiece BPE. It is immutable after newSPM;
// per-call scratch comes from sessions.
type spm struct {
	ids       map[string]int32 // piece -> id (Vocab.ids)
	scores    []float32        // id -> merge priority, higher first; nil: all 0
	maxPiece  int              // bytes in the longest piece: longer pairs cannot merge
	addPrefix bool             // Vocab.AddSpacePrefix

	// joinsSpace holds every 1-4 byte string c for which some piece contains
	// c+"▁": a "▁" after such a symbol may merge with it, so no cut goes
	// there. joinsSpaceASCII is the same for one-byte ASCII c.
	joinsSpace      map[string]struct{}
	joinsSpaceASCII [utf8.RuneSelf]bool

	// byteToken[b] is the token for byte b when its character has no piece:
	// "<0xNN>" (uppercase hex), else the one-byte piece, else UNK; NoToken
	// when the vocabulary has none of these (the byte is then dropped;
	// llama.cpp aborts).
	byteToken [256]int32

	// decoded holds the bytes of every normal and byte token back to back:
	// token id's are decoded[decodedEnd[id-1]:decodedEnd[id]] (from 0 for
	// id 0). Other types have none here: the core renders control,
	// user-defined, unknown and unused tokens itself, and an undefined one
	// decodes to nothing, as in llama.cpp.
	decoded    []byte
	decodedEnd []uint32

	sessions sync.Pool // *spmSession
}

var _ model = (*spm)(nil)

func newSPM(v *Vocab) (model, error) {
	if v.Scores != nil && len(v.Scores) != len(v.Tokens) {
		return nil, fmt.Errorf("%w: %d scores for %d tokens", ErrVocab, len(v.Scores), len(v.Tokens))
	}
	m := &spm{ids: v.ids, scores: v.Scores, addPrefix: v.AddSpacePrefix}
	m.joinsSpace = map[string]struct{}{}
	for _, t := range v.Tokens {
		m.maxPiece = max(m.maxPiece, len(t))
		for k := 1; k < len(t); k++ {
			if !strings.HasPrefix(t[k:], spaceMark) {
				continue
			}
			for j := 1; j <= min(utf8.UTFMax, k); j++ {
				c := t[k-j : k]
				m.joinsSpace[c] = struct{}{}
				if j == 1 && c[0] < utf8.RuneSelf {
					m.joinsSpaceASCII[c[0]] = true
				}
			}
		}
	}
	for b := range 256 {
		m.byteToken[b] = v.UNK
		if id, ok := v.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteToken[b] = id
		} else if id, ok := v.ids[string([]byte{byte(b)})]; ok {
			m.byteToken[b] = id
		}
	}
	m.decodedEnd = make([]uint32, len(v.Tokens))
	for id, piece := range v.Tokens {
		m.decoded = appendPieceBytes(m.decoded, piece, v.Types[id])
		if uint64(len(m.decoded)) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: %d bytes of token text is more than folio supports", ErrVocab, len(m.decoded))
		}
		m.decodedEnd[id] = uint32(len(m.decoded))
	}
	m.sessions.New = func() any { return new(spmSession) }
	return m, nil
}

// appendPieceBytes appends what a SentencePiece piece of type typ stands
// for in decoded text, as llama.cpp's token_to_piece renders it: a normal
// piece with each "▁" back to a space, a byte piece <0xNN> as its byte; the
// other types nothing (the core renders them).
func appendPieceBytes(dst []byte, piece string, typ TokenType) []byte {
	switch typ {
	case TypeNormal:
		return append(dst, strings.ReplaceAll(piece, spaceMark, " ")...)
	case TypeByte:
		if b, ok := parseByteToken(piece); ok {
			return append(dst, b)
		}
		return append(dst, piece...) // not <0xNN>: llama.cpp would read garbage; show the piece
	}
	return dst
}

// parseByteToken reads the byte of a "<0xNN>" piece.
func parseByteToken(piece string) (byte, bool) {
	if len(piece) != 6 || piece[:3] != "<0x" || piece[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(piece[3:5]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			return 0, false
		}
		b = b<<4 | c
	}
	return b, true
}

// tokenBytes returns the decoded bytes of a normal or byte token; the slice
// is shared and must not be modified (its capacity ends with it, so appending
// to it copies).
func (m *spm) tokenBytes(id int32) []byte {
	if id < 0 || int(id) >= len(m.decodedEnd) {
		return nil
	}
	var start uint32
	if id > 0 {
		start = m.decodedEnd[id-1]
	}
	end := m.decodedEnd[id]
	return m.decoded[start:end:end]
}

func (m *spm) appendText(ids []int32, text string, afterSpecial bool) []int32 {
	if text == "" {
		return ids
	}
	s := m.sessions.Get().(*spmSession)
	defer m.sessions.Put(s)
	s.text = escapeSpaces(s.text[:0], text, m.addPrefix && afterSpecial)
	if len(s.text) > math.MaxInt32 {
		panic(fmt.Sprintf("tokenizer: a run of %d bytes of plain text is more than SentencePiece's 2 GiB limit", len(s.text)))
	}
	return s.encode(m, ids)
}

// escapeSpaces appends text to dst with every ' ' written as "▁", after one
// "▁" when prefix is set.
func escapeSpaces(dst []byte, text string, prefix bool) []byte {
	if prefix {
		dst = append(dst, spaceMark...)
	}
	for {
		i := strings.IndexByte(text, ' ')
		if i < 0 {
			return append(dst, text...)
		}
		dst = append(dst, text[:i]...)
		dst = append(dst, spaceMark...)
		text = text[i+1:]
	}
}

// spmSymbol is a run of bytes of the escaped text, a node of the symbol list.
type spmSymbol struct {
	start, n   int32 // text[start:start+n]; n is 0 once merged into its left neighbour
	prev, next int32 // neighbours in the list, -1 at either end
}

// spmBigram is a candidate merge of symbol left with its right neighbour.
type spmBigram struct {
	left, right int32
	score       float32 // the score of the merged piece
	size        int32   // bytes of the merged piece: stale when the pair's sizes no longer add up to it
}

// before orders the heap: higher score first, then the leftmost pair, as
// llama.cpp's llm_bigram_spm comparator. Only stale entries can share both
// (each symbol has at most one live pair to its right), so the order of
// equal keys does not matter.
func (a *spmBigram) before(b *spmBigram) bool {
	return a.score > b.score || (a.score == b.score && a.left < b.left)
}

// spmSession is the scratch of one appendText call.
type spmSession struct {
	text    []byte      // the escaped run
	symbols []spmSymbol // the current word's symbols, merged ones included (n == 0)
	heap    []spmBigram // max-heap by before
}

// encode appends the ids of s.text, word by word.
func (s *spmSession) encode(m *spm, ids []int32) []int32 {
	text := s.text
	s.symbols = s.symbols[:0]
	for off := 0; off < len(text); {
		n := min(utf8SeqLen(text[off]), len(text)-off)
		if len(s.symbols) > 0 && m.cutsBefore(text, s.symbols[len(s.symbols)-1], off, n) {
			ids = s.mergeWord(m, ids)
			s.symbols = s.symbols[:0]
		}
		i := int32(len(s.symbols))
		s.symbols = append(s.symbols, spmSymbol{start: int32(off), n: int32(n), prev: i - 1, next: i + 1})
		off += n
	}
	return s.mergeWord(m, ids)
}

// cutsBefore reports whether no merge can join the symbol text[off:off+n]
// with prev, the symbol before it.
func (m *spm) cutsBefore(text []byte, prev spmSymbol, off, n int) bool {
	if n != len(spaceMark) || string(text[off:off+n]) != spaceMark {
		return false
	}
	c := text[prev.start : prev.start+prev.n]
	if len(c) == 1 && c[0] < utf8.RuneSelf {
		return !m.joinsSpaceASCII[c[0]]
	}
	_, joins := m.joinsSpace[string(c)]
	return !joins
}

// mergeWord runs the merges over s.symbols, a word of at least one symbol,
// and appends its ids.
func (s *spmSession) mergeWord(m *spm, ids []int32) []int32 {
	syms := s.symbols
	syms[len(syms)-1].next = -1

	// Seed with every adjacent pair, then heapify once: O(n), and the same
	// pops as n pushes since the order of live entries is total.
	s.heap = s.heap[:0]
	for i := int32(1); i < int32(len(syms)); i++ {
		s.addPair(m, i-1, i)
	}
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		s.down(i)
	}

	for len(s.heap) > 0 {
		b := s.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // one side changed since this pair was queued
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		if l.prev >= 0 {
			s.push(m, l.prev, b.left)
		}
		if l.next >= 0 {
			s.push(m, b.left, l.next)
		}
	}

	for i := int32(0); i != -1; i = syms[i].next {
		piece := s.text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := m.ids[string(piece)]; ok {
			ids = append(ids, id)
			continue
		}
		for _, c := range piece { // byte fallback
			if t := m.byteToken[c]; t != NoToken {
				ids = append(ids, t)
			}
		}
	}
	return ids
}

// utf8SeqLen is the length of the UTF-8 sequence byte c starts, judged by its
// high bits alone as llama.cpp's unicode_len_utf8 does (a stray continuation
// byte counts as 1).
func utf8SeqLen(c byte) int {
	return int(utf8SeqLens[c>>4])
}

var utf8SeqLens = [16]uint8{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}

// addPair appends the pair (left, right) to the heap slice, without sifting,
// when their concatenation is a piece.
func (s *spmSession) addPair(m *spm, left, right int32) bool {
	l, r := &s.symbols[left], &s.symbols[right]
	size := l.n + r.n
	if int(size) > m.maxPiece {
		return false
	}
	id, ok := m.ids[string(s.text[l.start:l.start+size])]
	if !ok {
		return false
	}
	var score float32
	if m.scores != nil {
		score = m.scores[id]
	}
	s.heap = append(s.heap, spmBigram{left: left, right: right, score: score, size: size})
	return true
}

// push queues the pair (left, right) when it spells a piece.
func (s *spmSession) push(m *spm, left, right int32) {
	if !s.addPair(m, left, right) {
		return
	}
	h := s.heap
	i := len(h) - 1
	for i > 0 {
		parent := (i - 1) / 2
		if !h[i].before(&h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

// pop removes and returns the first pair.
func (s *spmSession) pop() spmBigram {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	s.heap = h[:last]
	s.down(0)
	return top
}

// down sifts entry i of the heap towards the leaves.
func (s *spmSession) down(i int) {
	h := s.heap
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1].before(&h[c]) {
			c++
		}
		if !h[c].before(&h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
