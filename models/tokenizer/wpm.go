package tokenizer

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// WordPiece ("bert" vocabularies), as llama.cpp's llm_tokenizer_wpm runs it;
// that in turn follows Hugging Face's BertTokenizer for uncased models:
//
//  1. normalize each code point: replace it by the first code point of its
//     canonical decomposition (llama.cpp's unicode_cpts_normalize_nfd: "é"
//     becomes "e", but a Hangul syllable keeps only its leading jamo, where
//     full NFD would keep all of them), drop NUL, U+FFFD, the assigned code
//     points of category C (Cc, Cf, Co, Cs) and marks (M), lowercase;
//  2. split into words at whitespace; each punctuation character (category
//     P), ASCII symbol ("$+<=>^`|~") and CJK ideograph is a word by itself;
//  3. per word, greedy longest match from the left against the pieces, the
//     word starting with "▁". The GGUF converter stored BERT's word-start
//     pieces as "▁piece" and its "##piece" continuations as plain "piece",
//     so after "▁" the first match must be a word-start piece and every
//     later one a continuation. A word with any unmatched rest is one
//     [UNK].
//
// llama.cpp differs from Hugging Face in the normalization (the first code
// point of NFD only, all marks dropped, not just Mn) and in having no word
// length limit (BertTokenizer makes a word over 100 characters [UNK]).
type wpm struct {
	pieces []string // id -> piece (Vocab.Tokens)
	trie   wpmTrie
	unk    int32

	// BertNormalizer options: Vocab.Lowercase and Vocab.StripAccents
	// (tokenizer.ggml.normalizer.lowercase and .strip_accents).
	lowercase, stripAccents bool
}

// wpmWordStart marks the start of a word in the pieces of a "bert" vocabulary.
const wpmWordStart = "\u2581" // ▁

var _ model = (*wpm)(nil)

func newWPM(v *Vocab) (model, error) {
	if v.UNK == NoToken {
		return nil, fmt.Errorf("%w: WordPiece vocabulary of %d tokens has no unknown token (tokenizer.ggml.unknown_token_id)", ErrVocab, len(v.Tokens))
	}
	return &wpm{pieces: v.Tokens, trie: newWPMTrie(v), unk: v.UNK, lowercase: v.Lowercase, stripAccents: v.StripAccents}, nil
}

// appendText appends the ids of text's words, in order.
func (m *wpm) appendText(ids []int32, text string, _ bool) []int32 {
	word := make([]byte, 0, 64) // wpmWordStart + the current word, normalized
	word = append(word, wpmWordStart...)
	endWord := func() {
		if len(word) > len(wpmWordStart) {
			ids = m.appendWord(ids, word)
			word = word[:len(wpmWordStart)]
		}
	}
	for i := 0; i < len(text); {
		r, size := decodeLenient(text[i:])
		i += size
		r, class := m.normalize(r)
		switch class {
		case wpmLetter:
			word = utf8.AppendRune(word, r)
		case wpmSpace:
			endWord()
		case wpmAlone:
			endWord()
			word = utf8.AppendRune(word, r)
			endWord()
		}
	}
	endWord()
	return ids
}

// appendWord appends the pieces of word (wpmWordStart + normalized text), or
// the unknown token when they cannot cover all of it.
func (m *wpm) appendWord(ids []int32, word []byte) []int32 {
	start := len(ids)
	for len(word) > 0 {
		id, n := m.trie.longest(word)
		if n == 0 {
			return append(ids[:start], m.unk)
		}
		ids = append(ids, id)
		word = word[n:]
	}
	return ids
}

// tokenBytes returns the piece with every ▁ turned into a space, as
// llama.cpp's token_to_piece does for WordPiece: word starts decode with a
// leading space, continuations without.
func (m *wpm) tokenBytes(id int32) []byte {
	return []byte(strings.ReplaceAll(m.pieces[id], wpmWordStart, " "))
}

// wpmClass says what preprocessing does with a normalized code point.
type wpmClass uint8

const (
	wpmLetter wpmClass = iota // joins the current word
	wpmSpace                  // ends the current word
	wpmDrop                   // removed: NUL, U+FFFD, category C, marks
	wpmAlone                  // a word of its own: punctuation, ASCII symbols, CJK ideographs
)

// normalize returns code point r as it goes into a word, and its class.
// Categories are those of r after decomposition but before lowercasing, as
// in llama.cpp. Go's Unicode 15.0 tables (unicode, x/text/unicode/norm) and
// llama.cpp's 15.1 ones (unicode-data.cpp) give the same result for every
// code point: the code points 15.1 added are letters or symbols that join a
// word, as unassigned ones do.
func (m *wpm) normalize(r rune) (rune, wpmClass) {
	if r < utf8.RuneSelf {
		c := wpmASCII[r]
		if m.lowercase && 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return r, c
	}
	if m.stripAccents {
		r = nfdFirst(r)
	}
	class := wpmClassOf(r)
	if class == wpmDrop || (m.stripAccents && unicode.Is(unicode.M, r)) {
		return r, wpmDrop
	}
	if m.lowercase {
		r = unicode.ToLower(r)
	}
	return r, class
}

// wpmASCII is wpmClassOf for the ASCII range.
var wpmASCII = func() (t [utf8.RuneSelf]wpmClass) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = wpmClassOf(r)
	}
	return t
}()

// wpmClassOf classifies a code point by llama.cpp's rules, marks aside: the
// whitespace set is Unicode's White_Space property, the same as
// unicode.IsSpace's.
func wpmClassOf(r rune) wpmClass {
	switch {
	case unicode.IsSpace(r):
		return wpmSpace
	case r == 0 || r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs):
		return wpmDrop // unicode.C would also hold the unassigned code points, which llama.cpp keeps
	case unicode.IsPunct(r) || (r < 0x7F && unicode.IsSymbol(r)) || isBertChinese(r):
		return wpmAlone
	}
	return wpmLetter
}

// bertChineseRanges are the code points Hugging Face's BERT pre-tokenizer
// (and so llama.cpp) treats as Chinese characters. The seventh starts at
// 0x2B920, not 0x2B820, as in the Rust tokenizers code.
var bertChineseRanges = [...][2]rune{
	{0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF}, {0x20000, 0x2A6DF},
	{0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0x2F800, 0x2FA1F},
}

func isBertChinese(r rune) bool {
	if r < 0x3400 {
		return false
	}
	for _, rg := range bertChineseRanges {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// Hangul syllables decompose by formula (Unicode 3.12), not by table.
const (
	nfdHangulBase  = 0xAC00
	nfdHangulCount = 11172
	nfdHangulLBase = 0x1100
	nfdHangulNPerL = 588 // vowel × trailing consonant combinations per leading consonant
)

// nfdFirst returns the first code point of r's canonical decomposition: r
// itself when it has none.
func nfdFirst(r rune) rune {
	if r < 0xC0 { // nothing below À decomposes canonically
		return r
	}
	if nfdHangulBase <= r && r < nfdHangulBase+nfdHangulCount {
		return nfdHangulLBase + (r-nfdHangulBase)/nfdHangulNPerL
	}
	var b [utf8.UTFMax]byte
	d := norm.NFD.Properties(utf8.AppendRune(b[:0], r)).Decomposition()
	if len(d) == 0 {
		return r
	}
	first, _ := utf8.DecodeRune(d)
	return first
}

// decodeLenient decodes the first code point of s as leniently as llama.cpp's
// unicode_cpt_from_utf8: overlong forms and surrogates are accepted; a byte
// that starts no complete sequence is U+FFFD (later dropped) and consumes
// only itself. Values above U+10FFFF, which make llama.cpp's tokenizer
// throw, also come out as U+FFFD.
func decodeLenient(s string) (rune, int) {
	c := s[0]
	var n int
	var r rune
	switch {
	case c < 0x80:
		return rune(c), 1
	case c < 0xC0:
		return utf8.RuneError, 1
	case c < 0xE0:
		n, r = 2, rune(c&0x1F)
	case c < 0xF0:
		n, r = 3, rune(c&0x0F)
	case c < 0xF8:
		n, r = 4, rune(c&0x07)
	default:
		return utf8.RuneError, 1
	}
	if len(s) < n {
		return utf8.RuneError, 1
	}
	for k := 1; k < n; k++ {
		if s[k]&0xC0 != 0x80 {
			return utf8.RuneError, 1
		}
		r = r<<6 | rune(s[k]&0x3F)
	}
	if r > unicode.MaxRune {
		return utf8.RuneError, n
	}
	return r, n
}

// wpmTrie finds the longest piece of a vocabulary that starts a byte
// string. Nodes are indices into flat slices: node n's children are
// labels/children[nodes[n].first : nodes[n].first+nodes[n].count], sorted by
// label byte. Node 0 is the root (the empty string), so 0 is never a child.
// The few nodes with many children (151 of 65,017 for bge's vocabulary: the
// root, "▁" and the starts of common pieces) also have a row of 256 child
// indices in dense; most steps of a walk go through one.
type wpmTrie struct {
	nodes    []wpmTrieNode
	labels   []byte  // edge label: the next byte of the piece
	children []int32 // edge target node
	dense    []int32 // [rows*256]: child by byte, 0 for none
}

type wpmTrieNode struct {
	first, count int32
	row          int32 // row in dense, or -1
	id           int32 // the piece that ends here, or NoToken
}

// wpmDenseMin is the number of children from which a node gets a dense row.
const wpmDenseMin = 16

// newWPMTrie indexes every non-empty piece of v by the id v.ID gives it, so
// that duplicate pieces resolve as the rest of the package resolves them.
func newWPMTrie(v *Vocab) wpmTrie {
	type entry struct {
		piece string
		id    int32
	}
	entries := make([]entry, 0, len(v.Tokens))
	for i, p := range v.Tokens {
		if id, _ := v.ID(p); p != "" && id == int32(i) {
			entries = append(entries, entry{p, id})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.piece, b.piece) })
	pieces := make([]string, len(entries))
	ids := make([]int32, len(entries))
	for i, e := range entries {
		pieces[i], ids[i] = e.piece, e.id
	}
	var t wpmTrie
	t.build(pieces, ids, 0)
	rows := int32(0)
	for i := range t.nodes {
		nd := &t.nodes[i]
		if nd.count < wpmDenseMin {
			continue
		}
		nd.row = rows
		rows++
		t.dense = append(t.dense, make([]int32, 256)...)
		row := t.dense[len(t.dense)-256:]
		for e := nd.first; e < nd.first+nd.count; e++ {
			row[t.labels[e]] = t.children[e]
		}
	}
	return t
}

// build adds the node for the common prefix of length depth of the sorted
// pieces, and its subtree, and returns its index.
func (t *wpmTrie) build(pieces []string, ids []int32, depth int) int32 {
	n := int32(len(t.nodes))
	t.nodes = append(t.nodes, wpmTrieNode{row: -1, id: NoToken})
	if len(pieces) > 0 && len(pieces[0]) == depth { // sorted: the prefix itself comes first
		t.nodes[n].id = ids[0]
		pieces, ids = pieces[1:], ids[1:]
	}
	// One edge per distinct next byte; the edges are reserved before any
	// child is built so that they stay contiguous.
	first := int32(len(t.labels))
	for i, p := range pieces {
		if i == 0 || p[depth] != pieces[i-1][depth] {
			t.labels = append(t.labels, p[depth])
			t.children = append(t.children, 0)
		}
	}
	t.nodes[n].first, t.nodes[n].count = first, int32(len(t.labels))-first
	edge := first
	for lo := 0; lo < len(pieces); edge++ {
		hi := lo + 1
		for hi < len(pieces) && pieces[hi][depth] == pieces[lo][depth] {
			hi++
		}
		t.children[edge] = t.build(pieces[lo:hi], ids[lo:hi], depth+1)
		lo = hi
	}
	return n
}

// longest returns the longest piece that s starts with and its length in
// bytes, or (NoToken, 0) when no piece starts s.
func (t *wpmTrie) longest(s []byte) (id int32, n int) {
	id = NoToken
	node := &t.nodes[0]
	for i, c := range s {
		var child int32
		if node.row >= 0 {
			child = t.dense[int(node.row)<<8|int(c)]
		} else {
			for e := node.first; e < node.first+node.count; e++ { // fewer than wpmDenseMin
				if t.labels[e] == c {
					child = t.children[e]
					break
				}
			}
		}
		if child == 0 {
			break
		}
		node = &t.nodes[child]
		if node.id != NoToken {
			id, n = node.id, i+1
		}
	}
	return id, n
}
