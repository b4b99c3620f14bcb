package paged

import (
	"fmt"
	"unsafe"
)

// SeqID names a live sequence of a Manager. IDs of freed sequences are
// reused.
type SeqID int32

// Copy asks the backend to copy the K and V of block Src into block Dst,
// for every layer of layer group Group: a sequence is about to write into
// a block it shares.
type Copy struct {
	Src, Dst BlockID
	Group    int
}

// MaxGroups is the most layer groups a Manager takes.
const MaxGroups = 4

// Group is one layer group of the K/V cache: the layers that attend alike
// (full attention, or one sliding window), with a pool of their own. A
// sequence has one block table per group, and the block IDs of a group
// name blocks of its pool only.
type Group struct {
	Blocks int // physical blocks in the group's pool
	// Window is the group's sliding window in tokens: a row at position p
	// reads positions p-Window+1 … p only. 0 means full attention. A
	// sliding group's table lets go of the blocks wholly before the window
	// of every row still to come, so it holds about Window tokens however
	// long the sequence grows.
	Window int
}

// Config sizes a Manager.
type Config struct {
	Blocks    int // physical blocks in the pool (see BlocksForBudget); the first group's when Groups is set
	BlockSize int // tokens per block; 0 means DefaultBlockSize
	// Groups are the layer groups, each with its pool and window (at most
	// MaxGroups); nil means one full-attention group of Blocks blocks.
	// Blocks, when not 0, must equal Groups[0].Blocks.
	Groups []Group
	// Clock stamps the radix cache's last uses (the LRU list holds them in
	// order; the invariant checker compares). Any non-decreasing count
	// will do; nil means a counter that ticks on every use (Match, Insert,
	// an Unlock to zero), so paged never reads the wall clock.
	Clock func() int64
}

// Manager owns a BlockPool per layer group, the block tables of every
// sequence and the RadixCache over the same pools, and keeps their ref
// counts in step: a block's ref count is the number of tables that hold
// it, plus one if the radix tree holds it, plus one for each pending Copy
// that names it.
//
// A sequence's table has exactly ceil(Len/BlockSize) entries in every
// group; token i lives in slot Table[i/B]·B + i%B. All blocks but the last
// are full, and only the last is ever written, so a full block never
// changes and can be shared by forks and by the radix cache. Writing into
// a shared last block first moves the sequence to a copy of it
// (copy-on-write). In a sliding group (Group.Window W > 0) the entries
// wholly before the window of the next row, position Len, are NoBlock: a
// leading run, released as the sequence moves on (see windowStart).
//
// A Manager has no locks: it belongs to the scheduler goroutine.
type Manager struct {
	pools   []*BlockPool // one per group; the block size is theirs
	windows []int        // windows[g]: group g's sliding window, 0 for full attention
	bs      int          // tokens per block
	sliding bool         // some group has a window
	radix   *RadixCache
	seqs    []seqState
	freeIDs []SeqID // slots of seqs not live, reused by NewSeq
	// copies are the copy-on-write copies not yet drained. Each holds a ref
	// on its Src and its Dst, so neither block is reused while the backend
	// may still read or write it; pins counts those refs.
	copies []Copy
	// version changes with every change a Plan depends on (tables, refs,
	// pending copies); Commit refuses a plan made before the last change.
	version    uint64
	planIDs    uint64               // the last Plan id handed out
	appendPlan Plan                 // Append's, kept for its memory
	scratch    [MaxGroups][]BlockID // masked's, per group
}

type seqState struct {
	tables [][]BlockID // tables[g]: group g's blocks, NoBlock before a sliding window
	n      int         // tokens stored
	node   *Node       // deepest radix node this sequence keeps locked, or nil
	// extra is the radix key of the prefixes this sequence attaches and
	// caches, fixed at NewSeq and inherited by forks: blocks pass only
	// between sequences of one key, so two keys never share a block.
	extra string
	live  bool
	// planID/planStep find this sequence's step in the plan being built
	// in O(1); a stale planID means it has none.
	planID   uint64
	planStep int
}

// New makes a Manager with a pool per group of cfg (one of cfg.Blocks
// blocks without groups) and an empty radix cache.
func New(cfg Config) (*Manager, error) {
	bs := cfg.BlockSize
	if bs == 0 {
		bs = DefaultBlockSize
	}
	groups := cfg.Groups
	switch {
	case len(groups) == 0:
		groups = []Group{{Blocks: cfg.Blocks}}
	case len(groups) > MaxGroups:
		return nil, fmt.Errorf("paged: %d layer groups (at most %d)", len(groups), MaxGroups)
	case cfg.Blocks != 0 && cfg.Blocks != groups[0].Blocks:
		return nil, fmt.Errorf("paged: %d blocks and a first group of %d: set one of them", cfg.Blocks, groups[0].Blocks)
	}
	m := &Manager{bs: bs}
	for g, gr := range groups {
		if gr.Window < 0 {
			return nil, fmt.Errorf("paged: layer group %d has a window of %d tokens (want 0 for full attention, or more)", g, gr.Window)
		}
		pool, err := NewBlockPool(gr.Blocks, bs)
		if err != nil {
			return nil, fmt.Errorf("layer group %d: %w", g, err)
		}
		m.pools = append(m.pools, pool)
		m.windows = append(m.windows, gr.Window)
		m.sliding = m.sliding || gr.Window > 0
	}
	m.radix = newRadixCache(m, cfg.Clock)
	m.checkInvariants()
	return m, nil
}

// Grow makes the first group's pool nBlocks blocks long: GrowGroup(0,
// nBlocks).
func (m *Manager) Grow(nBlocks int) error { return m.GrowGroup(0, nBlocks) }

// GrowGroup makes group g's pool nBlocks blocks long, after the backend
// has grown its K/V pool to match. Tables, the radix cache and pending
// copies keep their blocks, so a plan made before stays valid: it only
// finds more blocks free.
func (m *Manager) GrowGroup(g, nBlocks int) error {
	if err := m.pools[g].Grow(nBlocks); err != nil {
		return err
	}
	m.checkInvariants()
	return nil
}

// BlockSize is the number of tokens per block.
func (m *Manager) BlockSize() int { return m.bs }

// Groups is the number of layer groups.
func (m *Manager) Groups() int { return len(m.pools) }

// Window is group g's sliding window (0: full attention).
func (m *Manager) Window(g int) int { return m.windows[g] }

// NumBlocks is the size of the first group's pool.
func (m *Manager) NumBlocks() int { return m.pools[0].NumBlocks() }

// FreeBlocks is the number of blocks of the first group's pool not held
// by any table, the radix tree or a pending copy.
func (m *Manager) FreeBlocks() int { return m.pools[0].nFree }

// GroupBlocks is the size of group g's pool and the number of its blocks
// free.
func (m *Manager) GroupBlocks(g int) (total, free int) {
	return m.pools[g].NumBlocks(), m.pools[g].nFree
}

// Ref is the number of holders of block b of the first group.
func (m *Manager) Ref(b BlockID) int { return m.pools[0].Ref(b) }

// RefIn is the number of holders of block b of group g.
func (m *Manager) RefIn(g int, b BlockID) int { return m.pools[g].Ref(b) }

// windowStart is the first block a row at position p reads in group g:
// 0 for full attention, else the block of position p-W+1. The blocks
// before it can go once no row before p is still to come.
func (m *Manager) windowStart(g, p int) int {
	w := m.windows[g]
	if w == 0 || p < w {
		return 0
	}
	return (p - w + 1) / m.bs
}

// Radix is the prefix cache over this Manager's pool.
func (m *Manager) Radix() *RadixCache { return m.radix }

// NewSeq starts an empty sequence whose prefixes are cached under the
// radix key extra: the model digest plus any cache salt, "" if nothing
// tells tenants apart.
func (m *Manager) NewSeq(extra string) SeqID {
	var s SeqID
	if n := len(m.freeIDs); n > 0 {
		s = m.freeIDs[n-1]
		m.freeIDs = m.freeIDs[:n-1]
	} else {
		s = SeqID(len(m.seqs))
		m.seqs = append(m.seqs, seqState{})
	}
	q := &m.seqs[s]
	q.live, q.n, q.node, q.extra = true, 0, nil, extra
	if len(q.tables) != len(m.pools) {
		q.tables = make([][]BlockID, len(m.pools))
	}
	for g := range q.tables {
		q.tables[g] = q.tables[g][:0]
	}
	return s
}

func (m *Manager) seq(s SeqID) *seqState {
	if s < 0 || int(s) >= len(m.seqs) || !m.seqs[s].live {
		panic(fmt.Sprintf("paged: sequence %d is not live", s))
	}
	return &m.seqs[s]
}

// Len is the number of tokens sequence s holds.
func (m *Manager) Len(s SeqID) int { return m.seq(s).n }

// Table is sequence s's block table in the first group:
// ceil(Len/BlockSize) block IDs. It is the Manager's own slice, valid until
// the next call that changes s; callers must not modify it.
func (m *Manager) Table(s SeqID) []BlockID { return m.seq(s).tables[0] }

// TableIn is sequence s's block table in group g, as Table; in a sliding
// group its entries before the window of position Len are NoBlock.
func (m *Manager) TableIn(s SeqID, g int) []BlockID { return m.seq(s).tables[g] }

// Table32 is Table as []int32 (the same memory), the form the backend's
// batch takes.
func (m *Manager) Table32(s SeqID) []int32 { return m.Table32In(s, 0) }

// Table32In is TableIn as []int32; NoBlock is -1, the entry the kernels
// never read.
func (m *Manager) Table32In(s SeqID, g int) []int32 {
	t := m.seq(s).tables[g]
	return unsafe.Slice((*int32)(unsafe.SliceData(t)), len(t))
}

// HeldBlocks is the number of blocks sequence s's table holds in group g.
func (m *Manager) HeldBlocks(s SeqID, g int) int {
	n := 0
	for _, b := range m.seq(s).tables[g] {
		if b != NoBlock {
			n++
		}
	}
	return n
}

// Slot is the physical slot of token i of sequence s in the first group:
// Table[i/B]·B + i%B.
func (m *Manager) Slot(s SeqID, i int) int32 {
	q, bs := m.seq(s), m.bs
	if i < 0 || i >= q.n {
		panic(fmt.Sprintf("paged: token %d of sequence %d, which holds %d", i, s, q.n))
	}
	return int32(q.tables[0][i/bs])*int32(bs) + int32(i%bs)
}

// Fork starts a sequence that shares every block of parent (each gains a
// holder) and its radix lock. Neither copies anything until one of them
// writes into the shared last block.
func (m *Manager) Fork(parent SeqID) SeqID {
	p := m.seq(parent)
	n, node := p.n, p.node
	c := m.NewSeq(p.extra)
	p, q := &m.seqs[parent], &m.seqs[c] // after NewSeq: m.seqs may have moved
	for g, t := range p.tables {
		q.tables[g] = append(q.tables[g], t...)
		m.retainAll(g, t)
	}
	q.n, q.node = n, node
	m.radix.lock(node)
	m.version++
	m.checkInvariants()
	return c
}

// Truncate keeps the first n tokens of sequence s and releases the blocks
// past them (rollback after a stop sequence). Later tokens overwrite the
// tail of the last kept block, after a copy if it is shared.
func (m *Manager) Truncate(s SeqID, n int) {
	q := m.seq(s)
	if n < 0 || n > q.n {
		panic(fmt.Sprintf("paged: truncate sequence %d of %d tokens to %d", s, q.n, n))
	}
	keep := ceilDiv(n, m.bs)
	for g, t := range q.tables {
		if from := m.windowStart(g, n); from < keep && t[from] == NoBlock {
			panic(fmt.Sprintf("paged: truncate sequence %d to %d tokens: group %d has let go of block %d, which the window of position %d reads", s, n, g, from, n))
		}
	}
	for g, t := range q.tables {
		m.releaseBackwards(g, t[keep:])
		q.tables[g] = t[:keep]
	}
	q.n = n
	if q.node != nil && q.node.depth > n {
		// Lock only the cached prefix the sequence still covers.
		anc := q.node.parent
		for anc.parent != nil && anc.depth > n {
			anc = anc.parent
		}
		if anc.parent == nil {
			anc = nil
		}
		m.radix.lock(anc)
		m.radix.unlock(q.node)
		q.node = anc
	}
	m.version++
	m.checkInvariants()
}

// Free ends sequence s: its blocks lose a holder (returning to the pool at
// zero) and its radix lock is dropped. s may be reused by NewSeq.
func (m *Manager) Free(s SeqID) {
	q := m.seq(s)
	for g, t := range q.tables {
		m.releaseBackwards(g, t)
		q.tables[g] = t[:0]
	}
	m.radix.unlock(q.node)
	q.n, q.node, q.live = 0, nil, false
	m.freeIDs = append(m.freeIDs, s)
	m.version++
	m.checkInvariants()
}

// AttachPrefix gives the empty sequence s the longest prefix of tokens
// that the radix cache holds under its key, at block granularity, from
// which it can resume: the cached blocks become the start of its tables,
// by reference, and the cache keeps them until s is freed. In a sliding
// group only the blocks of the window before the resume point are
// attached, and a prefix whose window the cache no longer holds is cut
// back to one whose window it does (or to nothing, to be computed). It
// returns the number of tokens attached (a multiple of BlockSize). A
// caller that needs the logits of the last prompt token passes the prompt
// without it.
func (m *Manager) AttachPrefix(s SeqID, tokens []int32) int {
	q := m.seq(s)
	if q.n != 0 {
		panic(fmt.Sprintf("paged: attach a prefix to sequence %d, which already holds %d tokens", s, q.n))
	}
	node, nb := m.radix.matchResumable(q.extra, tokens, 0)
	m.adopt(q, node, nb, 0)
	m.checkInvariants()
	return q.n
}

// ExtendPrefix continues sequence s, whose length is a whole number of
// blocks, with the cached blocks that follow it in the radix cache: tokens
// are its tokens and the ones it is about to compute. The blocks join its
// tables by reference (in a sliding group, those of the window before the
// new end) and the cache keeps them until s is freed. It returns the
// number of tokens added (a multiple of BlockSize). This lets a sequence
// admitted while another was computing the same prompt pick up what that
// one has cached since.
func (m *Manager) ExtendPrefix(s SeqID, tokens []int32) int {
	q := m.seq(s)
	bs := m.bs
	if q.n%bs != 0 || len(tokens) < q.n+bs {
		return 0
	}
	have := q.n / bs
	node, nb := m.radix.matchResumable(q.extra, tokens, have)
	if nb <= have {
		return 0
	}
	m.adopt(q, node, nb, have)
	m.checkInvariants()
	return (nb - have) * bs
}

// adopt extends q, which holds have blocks, to the nb blocks of the
// cached path ending at node (nil: nothing), taking a ref on each block
// it attaches and moving q's lock to node. A sliding group first lets go
// of q's blocks before the new window.
func (m *Manager) adopt(q *seqState, node *Node, nb, have int) {
	if node == nil || nb <= have {
		return
	}
	for g := range m.pools {
		m.trim(g, q.tables[g], nb*m.bs)
		from := max(have, m.windowStart(g, nb*m.bs))
		t := q.tables[g]
		for len(t) < from {
			t = append(t, NoBlock)
		}
		t = m.radix.appendPath(t, node, g, from, nb)
		m.retainAll(g, t[from:])
		q.tables[g] = t
	}
	q.n = nb * m.bs
	m.radix.lock(node)
	m.radix.unlock(q.node)
	q.node = node
	m.version++
}

// CachePrefix offers the full blocks of sequence s's first len(tokens)
// tokens (tokens are their IDs) to the radix cache under its key, and moves
// s's lock to the inserted path. A sliding group's blocks are not offered:
// the prefix is cached for the full-attention groups, and for resuming at
// its end only once CacheResumable gives the window too. It returns how
// many of those blocks the cache already held: there the cache keeps its
// own, and s keeps its duplicates until it is freed. The rest are now
// shared with the cache.
func (m *Manager) CachePrefix(s SeqID, tokens []int32) int {
	return m.cachePrefix(s, tokens, false)
}

// CacheResumable is CachePrefix that also offers, in every sliding group,
// the blocks of the window before the end of the prefix, so that a later
// sequence can resume there (AttachPrefix). Each call keeps at most a
// window's blocks per sliding group in the cache beyond what it held, so
// callers ask it at the points worth resuming from (the end of a prompt,
// of a sequence) and CachePrefix in between. Without sliding groups the
// two are the same.
func (m *Manager) CacheResumable(s SeqID, tokens []int32) int {
	return m.cachePrefix(s, tokens, true)
}

func (m *Manager) cachePrefix(s SeqID, tokens []int32, resumable bool) int {
	q := m.seq(s)
	if len(tokens) > q.n {
		panic(fmt.Sprintf("paged: cache %d tokens of sequence %d, which holds %d", len(tokens), s, q.n))
	}
	nb := len(tokens) / m.bs
	var offer [MaxGroups][]BlockID
	for g, t := range q.tables {
		offer[g] = t[:nb]
		if m.windows[g] == 0 {
			continue
		}
		from := nb // not offered
		if resumable {
			from = m.windowStart(g, nb*m.bs)
		}
		if from > 0 {
			offer[g] = m.masked(g, t[:nb], from)
		}
	}
	node, existing := m.radix.insert(q.extra, tokens[:nb*m.bs], offer[:len(q.tables)])
	if node != nil {
		q = m.seq(s)
		m.radix.lock(node)
		m.radix.unlock(q.node)
		q.node = node
	}
	m.checkInvariants()
	return existing
}

// masked is group g's table t with its first from entries NoBlock, in
// scratch memory valid until the next call for g.
func (m *Manager) masked(g int, t []BlockID, from int) []BlockID {
	m.scratch[g] = append(m.scratch[g][:0], t...)
	for i := range min(from, len(t)) {
		m.scratch[g][i] = NoBlock
	}
	return m.scratch[g]
}

// trim lets go of the blocks of group g's table t wholly before the
// window of position p (none in a full-attention group), setting their
// entries to NoBlock. They form the end of the table's leading NoBlock
// run, so it walks back from the window only over blocks it frees.
func (m *Manager) trim(g int, t []BlockID, p int) {
	for i := min(m.windowStart(g, p), len(t)) - 1; i >= 0 && t[i] != NoBlock; i-- {
		m.pools[g].Release(t[i])
		t[i] = NoBlock
	}
}

// DrainCopies appends the pending copy-on-write copies to dst, in the
// order they were made, and forgets them. The caller hands them to the
// backend in one batch before the next forward pass; until then the
// blocks they name are not reused.
func (m *Manager) DrainCopies(dst []Copy) []Copy {
	dst = append(dst, m.copies...)
	for _, c := range m.copies {
		m.pools[c.Group].Release(c.Src)
		m.pools[c.Group].Release(c.Dst)
	}
	m.copies = m.copies[:0]
	m.version++
	m.checkInvariants()
	return dst
}

// PendingCopies is the number of copies DrainCopies would return.
func (m *Manager) PendingCopies() int { return len(m.copies) }

// pins is the number of refs pending copies hold on block b of group g.
func (m *Manager) pins(g int, b BlockID) int {
	n := 0
	for _, c := range m.copies {
		if c.Group != g {
			continue
		}
		if c.Src == b {
			n++
		}
		if c.Dst == b {
			n++
		}
	}
	return n
}

// releaseBackwards releases group g's blocks from the last one, so that
// the pool (last freed, first reused) hands them out again in their old
// order. NoBlock entries are skipped.
func (m *Manager) releaseBackwards(g int, blocks []BlockID) {
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i] != NoBlock {
			m.pools[g].Release(blocks[i])
		}
	}
}

// retainAll adds a holder to each of group g's blocks but NoBlock.
func (m *Manager) retainAll(g int, blocks []BlockID) {
	for _, b := range blocks {
		if b != NoBlock {
			m.pools[g].Retain(b)
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
