package grammar

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Constraint is one sequence's progress through a grammar: which tokens may
// come next. It is not safe for concurrent use; it belongs to the goroutine
// that samples its sequence (the engine's scheduler).
type Constraint struct {
	m     matcher
	toks  *Tokens  // nil for a byte-level constraint (AllowedBytes, AcceptBytes)
	cur   []thread // the live threads; never empty before an end
	ended bool     // an end token was accepted: nothing more is allowed
	live  int      // arena entries kept by the last compaction
	// left is how many more tokens (end tokens not counted) the sequence
	// may take; -1: no limit. See Limit.
	left int

	// scratch, reused across calls
	run1, run2 []thread
	walk       walkScratch
	remap      []int32
	masked     []float32
	key        []byte
	cache      map[string]mask // allowed tokens by state key
}

// mask is a cached set of allowed tokens, one bit per id, and far, the
// largest estimate any of them leaves (see est.go): a limit at or above
// far removes none of them.
type mask struct {
	set []uint64
	far int32
}

// maxCached bounds the mask cache: each entry is one bit per token (19 KiB
// for 150k tokens). States repeat (inside a string without a length bound,
// after each comma of an array), so a few entries serve most steps.
const maxCached = 32

// New returns a constraint at the start of g's output, masking the tokens
// of toks (nil for byte-level use only).
func New(g *Grammar, toks *Tokens) *Constraint {
	return &Constraint{m: matcher{g: g}, toks: toks, cur: []thread{{top: frame{node: g.doc}, parent: -1}}, left: -1}
}

// Limit says that the sequence may take at most n more tokens (end tokens
// not counted): num_predict, or the room left in the context. From then
// on only tokens after which a complete value is at most the tokens still
// left away (counting a byte a token) are allowed, so that the output is
// complete by the n-th token whenever the grammar has a value that short
// from here. Strings, arrays and optional properties close as the budget
// runs out. n < 0 removes the limit.
func (c *Constraint) Limit(n int) { c.left = max(n, -1) }

// limit is the largest estimate a token may leave: one less than the
// tokens left, as that token is one of them. -1: no limit.
func (c *Constraint) limit() int32 {
	if c.left < 0 {
		return -1
	}
	return int32(min(c.left-1, int(inf)))
}

// Clone returns an independent copy at the same point: for the n-way forks
// of one request.
func (c *Constraint) Clone() *Constraint {
	return &Constraint{m: matcher{g: c.m.g, arena: slices.Clone(c.m.arena)}, toks: c.toks,
		cur: slices.Clone(c.cur), ended: c.ended, live: c.live, left: c.left}
}

// Allowed reports whether token tok may come next: an end token where the
// output may end, otherwise a token whose bytes the grammar can consume.
// It costs one step per byte of the token.
func (c *Constraint) Allowed(tok int32) bool {
	if c.ended || tok < 0 || int(tok) >= c.toks.size {
		return false
	}
	if c.toks.isEOG(tok) {
		return c.CanEnd()
	}
	p := c.toks.pieces[tok]
	if len(p) == 0 {
		return false
	}
	base := len(c.m.arena)
	defer func() { c.m.arena = c.m.arena[:base] }()
	return c.within(c.run(p), c.limit())
}

// within reports whether some thread of ts can end within limit bytes
// (limit < 0: at all).
func (c *Constraint) within(ts []thread, limit int32) bool {
	for _, t := range ts {
		if limit < 0 || c.m.est(t) <= limit {
			return true
		}
	}
	return false
}

// AllowedBytes reports whether the grammar can consume p next.
func (c *Constraint) AllowedBytes(p []byte) bool {
	if c.ended || len(p) == 0 {
		return false
	}
	base := len(c.m.arena)
	ok := len(c.run(p)) > 0
	c.m.arena = c.m.arena[:base]
	return ok
}

// Accept advances past token tok, which must be allowed. After an end
// token nothing more is.
func (c *Constraint) Accept(tok int32) error {
	if !c.ended && tok >= 0 && int(tok) < c.toks.size && c.toks.isEOG(tok) {
		if !c.CanEnd() {
			return fmt.Errorf("%w: end token %d before the value is complete", ErrRejected, tok)
		}
		c.ended = true
		return nil
	}
	if tok < 0 || int(tok) >= c.toks.size {
		return fmt.Errorf("%w: token %d is outside the vocabulary of %d", ErrRejected, tok, c.toks.size)
	}
	if err := c.AcceptBytes(c.toks.pieces[tok]); err != nil {
		return fmt.Errorf("token %d: %w", tok, err)
	}
	if c.left > 0 {
		c.left--
	}
	return nil
}

// AcceptBytes advances past p, which must be allowed.
func (c *Constraint) AcceptBytes(p []byte) error {
	switch {
	case c.ended:
		return fmt.Errorf("%w: the output has ended", ErrRejected)
	case len(p) == 0:
		return fmt.Errorf("%w: it adds no text", ErrRejected)
	}
	base := len(c.m.arena)
	next := c.run(p)
	if len(next) == 0 {
		c.m.arena = c.m.arena[:base]
		return fmt.Errorf("%w: %q cannot come next", ErrRejected, p)
	}
	c.cur = append(c.cur[:0], next...)
	if len(c.m.arena) > 2*c.live+64 {
		c.compact()
	}
	return nil
}

// CanEnd reports whether the output so far is a complete value, so an end
// token is allowed.
func (c *Constraint) CanEnd() bool {
	if c.ended {
		return false
	}
	for _, t := range c.cur {
		if c.m.canEnd(t) {
			return true
		}
	}
	return false
}

// Done reports whether the output is complete and nothing may follow it but
// an end token: the engine may end the sequence without sampling again. A
// top-level number is complete yet not done (more digits may follow).
func (c *Constraint) Done() bool {
	if c.ended {
		return true
	}
	if !c.CanEnd() {
		return false
	}
	base := len(c.m.arena)
	defer func() { c.m.arena = c.m.arena[:base] }()
	for b := range 256 {
		if c.run1 = c.m.advance(c.cur, byte(b), c.run1[:0]); len(c.run1) > 0 {
			return false
		}
		c.m.arena = c.m.arena[:base]
	}
	return true
}

// run steps the live threads over p and returns the survivors (in scratch),
// leaving what they pushed on the arena.
func (c *Constraint) run(p []byte) []thread {
	cur, next := append(c.run1[:0], c.cur...), c.run2[:0]
	for _, b := range p {
		next = c.m.advance(cur, b, next[:0])
		cur, next = next, cur
		if len(cur) == 0 {
			break
		}
	}
	c.run1, c.run2 = cur, next
	return cur
}

// compact drops arena entries no live thread reaches. Parents precede
// their children, so one forward pass renumbers in place.
func (c *Constraint) compact() {
	a := c.m.arena
	c.remap = slices.Grow(c.remap[:0], len(a))[:len(a)]
	for i := range c.remap {
		c.remap[i] = -1
	}
	for _, t := range c.cur {
		for p := t.parent; p >= 0 && c.remap[p] < 0; p = a[p].parent {
			c.remap[p] = 0 // live; numbered below
		}
	}
	n := int32(0)
	for i, e := range a {
		if c.remap[i] < 0 {
			continue
		}
		if e.parent >= 0 {
			e.parent = c.remap[e.parent]
		}
		a[n], c.remap[i] = e, n
		n++
	}
	c.m.arena, c.live = a[:n], int(n)
	for i := range c.cur {
		if c.cur[i].parent >= 0 {
			c.cur[i].parent = c.remap[c.cur[i].parent]
		}
	}
}

// stateKey appends an encoding of the whole state: equal keys, equal masks.
func (c *Constraint) stateKey(dst []byte) []byte {
	put := func(f frame) {
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.node))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.n))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.prop))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.cnt))
		dst = append(dst, f.state, f.sub)
	}
	for _, t := range c.cur {
		put(t.top)
		for p := t.parent; p >= 0; p = c.m.arena[p].parent {
			put(c.m.arena[p].top)
		}
		dst = append(dst, 0xff) // between threads
	}
	return dst
}

// allowed returns the bitset of the tokens allowed next, one bit per id.
// The caller must not modify it. A state's mask without the limit is
// cached with the largest estimate its tokens leave; only when the limit
// is below that is a mask under the limit computed (and cached under the
// state and the limit).
func (c *Constraint) allowed() []uint64 {
	t := c.toks
	if c.ended { // the state is the one before the end token: not a cache key
		return make([]uint64, (t.size+63)/64)
	}
	c.key = c.stateKey(c.key[:0])
	m, ok := c.cache[string(c.key)]
	if !ok {
		m = c.computeMask(-1)
	}
	if limit := c.limit(); limit >= 0 && limit < m.far {
		c.key = binary.LittleEndian.AppendUint32(c.key, uint32(limit))
		if m, ok = c.cache[string(c.key)]; !ok {
			m = c.computeMask(limit)
		}
	}
	return m.set
}

// computeMask walks the vocabulary under limit (-1: none) and caches the
// mask under the current key.
func (c *Constraint) computeMask(limit int32) mask {
	t := c.toks
	set := make([]uint64, (t.size+63)/64)
	c.walk.ensure(t.maxDepth)
	far := t.walk(&c.m, c.cur, set, &c.walk, limit)
	if c.CanEnd() {
		for i, w := range t.eog {
			set[i] |= w
		}
	}
	if c.cache == nil || len(c.cache) >= maxCached {
		c.cache = make(map[string]mask, maxCached)
	}
	m := mask{set: set, far: far}
	c.cache[string(c.key)] = m
	return m
}

// Mask sets the logits of disallowed tokens to -Inf in place (ids past the
// vocabulary too, for models with padded output rows) and returns how many
// remain. Zero means no token can continue: end the sequence with an error.
func (c *Constraint) Mask(logits []float32) int {
	set, n := c.allowed(), 0
	inf := float32(math.Inf(-1))
	valid := min(c.toks.size, len(logits)) // ids below it may be allowed
	for lo := 0; lo < len(logits); lo += 64 {
		var word uint64
		if lo < valid {
			word = set[lo>>6]
			if k := valid - lo; k < 64 {
				word &= 1<<k - 1
			}
		}
		n += bits.OnesCount64(word)
		if word == ^uint64(0) {
			continue
		}
		block := logits[lo:min(lo+64, len(logits))]
		for i := range block {
			if word&(1<<i) == 0 {
				block[i] = inf
			}
		}
	}
	return n
}

// Masked returns a copy of logits with disallowed tokens at -Inf, in
// scratch valid until the next call, and how many remain. The engine's
// logits are shared by the forks of a request, so it masks a copy.
func (c *Constraint) Masked(logits []float32) ([]float32, int) {
	c.masked = append(c.masked[:0], logits...)
	return c.masked, c.Mask(c.masked)
}

// Best returns the allowed token with the highest logit (the lowest id on
// ties), for greedy sampling: the overall best when it is allowed, which
// costs one Allowed, else the best of the mask. ok is false when no token
// is allowed.
func (c *Constraint) Best(logits []float32) (tok int32, ok bool) {
	if len(logits) == 0 {
		return -1, false
	}
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	if c.Allowed(int32(best)) {
		return int32(best), true
	}
	set, best := c.allowed(), -1
	for w, word := range set {
		for word != 0 {
			i := w<<6 | bits.TrailingZeros64(word)
			word &= word - 1
			if i < len(logits) && (best < 0 || logits[i] > logits[best]) {
				best = i
			}
		}
	}
	return int32(best), best >= 0
}
