package tokenizer

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Byte-level BPE (tokenizer.ggml.model "gpt2"), as Hugging Face tokenizers
// and llama.cpp's llm_tokenizer_bpe do it:
//
//  1. the pre-tokenizer (pretokenize.go) cuts the text into words;
//  2. each byte of a word becomes one symbol: the token of the character
//     GPT-2's bytes_to_unicode maps it to;
//  3. the adjacent pair of lowest rank in tokenizer.ggml.merges is merged,
//     the leftmost of equal ranks first, until no pair has a rank;
//  4. each symbol is its token. One that is not in the vocabulary (a merge
//     result the vocabulary lacks) becomes the tokens of its bytes, or UNK.
//
// Gemma 4's vocabularies ("gemma4") run the same merges over
// SentencePiece-style pieces instead: characters, not bytes, with spaces
// as "▁" and <0xNN> byte fallback (bpe_gemma4.go).
//
// Symbols are int32: token ids below len(Tokens), and above them the texts
// that merges name but the vocabulary lacks, so merging never builds strings.

// byteRune is GPT-2's bytes_to_unicode: printable bytes stand for
// themselves, the others for U+0100 onwards, in byte order. runeByte is its
// inverse, -1 for runes that stand for no byte.
var byteRune, runeByte = byteLevelTables()

func byteLevelTables() (b2r [256]rune, r2b [0x144]int16) {
	for i := range r2b {
		r2b[i] = -1
	}
	next := rune(0x100)
	for b := range 256 {
		if ('!' <= b && b <= '~') || (0xA1 <= b && b <= 0xAC) || (0xAE <= b && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = next
			next++
		}
		r2b[b2r[b]] = int16(b)
	}
	return b2r, r2b
}

// byteLevelDecode returns the bytes a byte-level text stands for, and false
// if it holds a rune that stands for no byte.
func byteLevelDecode(text string) ([]byte, bool) {
	out := make([]byte, 0, len(text))
	for _, r := range text {
		if r >= rune(len(runeByte)) || runeByte[r] < 0 {
			return nil, false
		}
		out = append(out, byte(runeByte[r]))
	}
	return out, true
}

// noMerge is the rank of a pair that has no merge.
const noMerge = math.MaxInt32

// bpeMerge is one merge rule: its rank and the symbol it makes.
type bpeMerge struct{ rank, sym int32 }

// bpe is the byte-level BPE model. It is immutable after newBPE.
type bpe struct {
	vocab        *Vocab
	pre          *preTokenizer
	ignoreMerges bool // a word that is a token is that token (llama3's ignore_merges)

	nTokens int32       // symbols below are token ids
	extra   []string    // symbol nTokens+i is the text extra[i] stands for, outside the vocabulary
	byteSym [256]int32  // byte-level: the symbol of each byte
	merges  *mergeTable // by bpePairKey(left, right)

	// fallback[b] is the token of byte b of a final symbol that is no token:
	// byte-level, the byte's own symbol if it is a token, else UNK;
	// SentencePiece-style, <0xNN>. NoToken drops the byte.
	fallback [256]int32
	// extraSym is the symbol of each text of extra (SentencePiece-style, whose
	// characters are looked up by text).
	extraSym map[string]int32

	// tokenBytes of id is pieces[offs[id]:offs[id+1]]
	pieces []byte
	offs   []uint32
}

func bpePairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

func newBPE(v *Vocab) (model, error) {
	if len(v.Merges) == 0 {
		return nil, fmt.Errorf("%w: %s vocabulary without tokenizer.ggml.merges", ErrVocab, v.Model)
	}
	m := &bpe{
		vocab:        v,
		pre:          preTokenizerFor(v.Pre),
		ignoreMerges: ignoreMerges[v.Pre],
		nTokens:      int32(len(v.Tokens)),
		merges:       newMergeTable(len(v.Merges)),
		extraSym:     make(map[string]int32),
	}
	sym := func(text string) int32 {
		if id, ok := v.ids[text]; ok {
			return id
		}
		if s, ok := m.extraSym[text]; ok {
			return s
		}
		s := m.nTokens + int32(len(m.extra))
		raw := text
		if !m.pre.spmStyle {
			if b, ok := byteLevelDecode(text); ok {
				raw = string(b)
			}
		}
		m.extraSym[text] = s
		m.extra = append(m.extra, raw)
		return s
	}
	if m.pre.spmStyle {
		m.fallback = spmStyleFallback(v)
	} else {
		for b := range 256 {
			m.byteSym[b] = sym(string(byteRune[b]))
			m.fallback[b] = v.UNK
			if m.byteSym[b] < m.nTokens {
				m.fallback[b] = m.byteSym[b]
			}
		}
	}
	for rank, line := range v.Merges {
		// "left right", split at the first space after the first byte, as llama.cpp does
		if len(line) < 2 {
			continue
		}
		k := strings.IndexByte(line[1:], ' ') + 1
		if k == 0 {
			continue
		}
		key := bpePairKey(sym(line[:k]), sym(line[k+1:]))
		if r, _ := m.merges.get(key); r != noMerge {
			continue // the first rank of a pair wins, as in llama.cpp
		}
		m.merges.add(key, bpeMerge{rank: int32(rank), sym: sym(line[:k] + line[k+1:])})
	}

	m.offs = make([]uint32, len(v.Tokens)+1)
	for id, text := range v.Tokens {
		if m.pre.spmStyle {
			m.pieces = appendPieceBytes(m.pieces, text, v.Types[id])
		} else if raw, ok := byteLevelDecode(text); ok {
			m.pieces = append(m.pieces, raw...)
		} else {
			m.pieces = append(m.pieces, text...) // Hugging Face's ByteLevel decoder keeps such a token as it is
		}
		if uint64(len(m.pieces)) > math.MaxUint32 {
			return nil, fmt.Errorf("%w: %d bytes of token text is more than folio supports", ErrVocab, len(m.pieces))
		}
		m.offs[id+1] = uint32(len(m.pieces))
	}
	return m, nil
}

// tokenBytes returns the bytes of token id. Callers must not modify them.
func (m *bpe) tokenBytes(id int32) []byte {
	lo, hi := m.offs[id], m.offs[id+1]
	return m.pieces[lo:hi:hi]
}

// bpeScratch holds the buffers one appendText call reuses across words.
type bpeScratch struct {
	syms  []int32
	ranks []int32 // merge rank of the pair (syms[i], syms[i+1])
	made  []int32 // symbol that pair makes
	enc   []byte  // a word's byte-level text (ignoreMerges only)
	heap  bigramHeap
	prev  []int32
	next  []int32
}

// scratchPool keeps bpeScratch buffers between appendText calls, so that
// the Tokenizer holds no mutable state and is safe for concurrent use.
var scratchPool = sync.Pool{New: func() any { return new(bpeScratch) }}

// maxPooledWord is the longest word whose buffers go back to the pool.
const maxPooledWord = 1 << 16

func (m *bpe) appendText(ids []int32, text string, _ bool) []int32 {
	if m.pre.nfc && !norm.NFC.IsNormalString(text) {
		text = norm.NFC.String(text)
	}
	if m.pre.spmStyle {
		text = spmStyleText(text)
	}
	w := scratchPool.Get().(*bpeScratch)
	m.pre.split(text, func(word string) { ids = m.appendWord(ids, word, w) })
	if cap(w.syms) <= maxPooledWord {
		scratchPool.Put(w)
	}
	return ids
}

// linearMax is the longest word merged by rescanning the pairs; longer ones
// use a heap, so that a megabyte of spaces stays O(n log n).
const linearMax = 48

// appendWord appends the tokens of one pre-tokenized word.
func (m *bpe) appendWord(ids []int32, word string, w *bpeScratch) []int32 {
	if m.ignoreMerges {
		enc := w.enc[:0]
		for i := 0; i < len(word); i++ {
			enc = utf8.AppendRune(enc, byteRune[word[i]])
		}
		w.enc = enc
		if id, ok := m.vocab.ids[string(enc)]; ok {
			return append(ids, id)
		}
	}
	syms := w.syms[:0]
	if m.pre.spmStyle {
		if id, ok := m.newlineToken(word); ok {
			return append(ids, id)
		}
		syms = m.charSyms(syms, word)
	} else {
		for i := 0; i < len(word); i++ {
			syms = append(syms, m.byteSym[word[i]])
		}
	}
	if len(syms) <= linearMax {
		syms = m.mergeLinear(syms, w)
	} else {
		syms = m.mergeHeap(syms, w)
	}
	w.syms = syms
	for _, s := range syms {
		switch {
		case s >= m.nTokens:
			ids = m.appendFallback(ids, m.extra[s-m.nTokens])
		case s >= 0:
			ids = append(ids, s)
		default:
			ids = m.appendFallback(ids, unknownChar(word, s))
		}
	}
	return ids
}

// appendFallback appends the tokens of the bytes of text, a final symbol
// that is no token.
func (m *bpe) appendFallback(ids []int32, text string) []int32 {
	for i := 0; i < len(text); i++ {
		if t := m.fallback[text[i]]; t != NoToken {
			ids = append(ids, t)
		}
	}
	return ids
}

// pair returns the rank of merging left and right and the symbol it makes.
func (m *bpe) pair(left, right int32) (rank, made int32) {
	return m.merges.get(bpePairKey(left, right))
}

// mergeLinear merges syms in place: each step rescans the pair ranks for the
// lowest, leftmost first. O(n²) but allocation-free and fast for short words.
func (m *bpe) mergeLinear(syms []int32, w *bpeScratch) []int32 {
	n := len(syms)
	if n < 2 {
		return syms
	}
	ranks, made := growInt32(w.ranks, n-1), growInt32(w.made, n-1)
	w.ranks, w.made = ranks, made
	for i := range n - 1 {
		ranks[i], made[i] = m.pair(syms[i], syms[i+1])
	}
	for {
		best, bestRank := -1, int32(noMerge)
		for i, r := range ranks[:n-1] {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			return syms[:n]
		}
		// syms[best] and syms[best+1] become one symbol; pair best goes
		syms[best] = made[best]
		copy(syms[best+1:n], syms[best+2:n])
		copy(ranks[best:n-1], ranks[best+1:n-1])
		copy(made[best:n-1], made[best+1:n-1])
		n--
		if best > 0 {
			ranks[best-1], made[best-1] = m.pair(syms[best-1], syms[best])
		}
		if best < n-1 {
			ranks[best], made[best] = m.pair(syms[best], syms[best+1])
		}
	}
}

// mergeHeap is llama.cpp's merge loop: a queue of candidate pairs by
// (rank, left position) over a linked list of symbols; a popped pair whose
// symbols changed since it was queued is stale and skipped.
func (m *bpe) mergeHeap(syms []int32, w *bpeScratch) []int32 {
	n := len(syms)
	prev, next := growInt32(w.prev, n), growInt32(w.next, n)
	w.prev, w.next = prev, next
	for i := range n {
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	h := &w.heap
	*h = (*h)[:0]
	for i := range int32(n - 1) {
		m.queuePair(h, syms, i, i+1)
	}
	for len(*h) > 0 {
		bg := h.pop()
		if syms[bg.left] != bg.lsym || syms[bg.right] != bg.rsym {
			continue
		}
		syms[bg.left], syms[bg.right] = bg.made, -1 // -1: merged away
		nx := next[bg.right]
		next[bg.left] = nx
		if nx >= 0 {
			prev[nx] = bg.left
		}
		m.queuePair(h, syms, prev[bg.left], bg.left)
		m.queuePair(h, syms, bg.left, nx)
	}
	out := 0
	for i := int32(0); i >= 0; i = next[i] {
		syms[out] = syms[i]
		out++
	}
	return syms[:out]
}

// queuePair queues the pair of symbols at positions l and r if it merges.
func (m *bpe) queuePair(h *bigramHeap, syms []int32, l, r int32) {
	if l < 0 || r < 0 {
		return
	}
	if rank, made := m.pair(syms[l], syms[r]); rank != noMerge {
		h.push(bigram{rank: rank, left: l, right: r, lsym: syms[l], rsym: syms[r], made: made})
	}
}

// bigram is a candidate merge of the symbols at positions left and right.
type bigram struct {
	rank, left, right int32
	lsym, rsym, made  int32 // the symbols when queued, and what they make
}

// bigramHeap is a binary min-heap by (rank, left).
type bigramHeap []bigram

func (a bigram) before(b bigram) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.left < b.left)
}

func (h *bigramHeap) push(b bigram) {
	*h = append(*h, b)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bigramHeap) pop() bigram {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, least := 2*i+1, i
		if l < len(s) && s[l].before(s[least]) {
			least = l
		}
		if r := l + 1; r < len(s) && s[r].before(s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}

// grow returns s resized to n, reallocated only when too small.
func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n, 2*n)
	}
	return s[:n]
}
