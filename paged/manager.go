package paged

import (
	"fmt"
	"unsafe"
)

// SeqID names a live sequence of a Manager. IDs of freed sequences are
// reused.
type SeqID int32

// Copy asks the backend to copy every layer's K and V of block Src into
// block Dst: a sequence is about to write into a block it shares.
type Copy struct{ Src, Dst BlockID }

// Config sizes a Manager.
type Config struct {
	Blocks    int // physical blocks in the pool (see BlocksForBudget)
	BlockSize int // tokens per block; 0 means DefaultBlockSize
	// Clock stamps the radix cache's last uses (the LRU list holds them in
	// order; the invariant checker compares). Any non-decreasing count
	// will do; nil means a counter that ticks on every use (Match, Insert,
	// an Unlock to zero), so paged never reads the wall clock.
	Clock func() int64
}

// Manager owns a BlockPool, the block table of every sequence and the
// RadixCache over the same pool, and keeps their ref counts in step: a
// block's ref count is the number of tables that hold it, plus one if the
// radix tree holds it, plus one for each pending Copy that names it.
//
// A sequence's table has exactly ceil(Len/BlockSize) blocks; token i lives
// in slot Table[i/B]·B + i%B. All blocks but the last are full, and only
// the last is ever written, so a full block never changes and can be
// shared by forks and by the radix cache. Writing into a shared last block
// first moves the sequence to a copy of it (copy-on-write).
//
// A Manager has no locks: it belongs to the scheduler goroutine.
type Manager struct {
	pool    *BlockPool
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
	planIDs    uint64 // the last Plan id handed out
	appendPlan Plan   // Append's, kept for its memory
}

type seqState struct {
	blocks []BlockID
	n      int   // tokens stored
	node   *Node // deepest radix node this sequence keeps locked, or nil
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

// New makes a Manager with a pool of cfg.Blocks blocks and an empty radix
// cache.
func New(cfg Config) (*Manager, error) {
	bs := cfg.BlockSize
	if bs == 0 {
		bs = DefaultBlockSize
	}
	pool, err := NewBlockPool(cfg.Blocks, bs)
	if err != nil {
		return nil, err
	}
	m := &Manager{pool: pool}
	m.radix = newRadixCache(m, cfg.Clock)
	m.checkInvariants()
	return m, nil
}

// Grow makes the pool nBlocks blocks long, after the backend has grown
// its K/V pool to match. Tables, the radix cache and pending copies keep
// their blocks, so a plan made before stays valid: it only finds more
// blocks free.
func (m *Manager) Grow(nBlocks int) error {
	if err := m.pool.Grow(nBlocks); err != nil {
		return err
	}
	m.checkInvariants()
	return nil
}

// BlockSize is the number of tokens per block.
func (m *Manager) BlockSize() int { return m.pool.blockSize }

// NumBlocks is the size of the pool.
func (m *Manager) NumBlocks() int { return m.pool.NumBlocks() }

// FreeBlocks is the number of blocks not held by any table, the radix
// tree or a pending copy.
func (m *Manager) FreeBlocks() int { return m.pool.nFree }

// Ref is the number of holders of block b.
func (m *Manager) Ref(b BlockID) int { return m.pool.Ref(b) }

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
	q.live, q.n, q.node, q.blocks, q.extra = true, 0, nil, q.blocks[:0], extra
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

// Table is sequence s's block table: ceil(Len/BlockSize) block IDs. It is
// the Manager's own slice, valid until the next call that changes s;
// callers must not modify it.
func (m *Manager) Table(s SeqID) []BlockID { return m.seq(s).blocks }

// Table32 is Table as []int32 (the same memory), the form the backend's
// batch takes.
func (m *Manager) Table32(s SeqID) []int32 {
	t := m.seq(s).blocks
	return unsafe.Slice((*int32)(unsafe.SliceData(t)), len(t))
}

// Slot is the physical slot of token i of sequence s:
// Table[i/B]·B + i%B.
func (m *Manager) Slot(s SeqID, i int) int32 {
	q, bs := m.seq(s), m.pool.blockSize
	if i < 0 || i >= q.n {
		panic(fmt.Sprintf("paged: token %d of sequence %d, which holds %d", i, s, q.n))
	}
	return int32(q.blocks[i/bs])*int32(bs) + int32(i%bs)
}

// Fork starts a sequence that shares every block of parent (each gains a
// holder) and its radix lock. Neither copies anything until one of them
// writes into the shared last block.
func (m *Manager) Fork(parent SeqID) SeqID {
	p := m.seq(parent)
	blocks, n, node := p.blocks, p.n, p.node
	c := m.NewSeq(p.extra)
	q := &m.seqs[c] // after NewSeq: m.seqs may have moved
	q.blocks = append(q.blocks, blocks...)
	for _, b := range blocks {
		m.pool.Retain(b)
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
	keep := ceilDiv(n, m.pool.blockSize)
	m.releaseBackwards(q.blocks[keep:])
	q.blocks = q.blocks[:keep]
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
	m.releaseBackwards(q.blocks)
	m.radix.unlock(q.node)
	q.blocks, q.n, q.node, q.live = q.blocks[:0], 0, nil, false
	m.freeIDs = append(m.freeIDs, s)
	m.version++
	m.checkInvariants()
}

// AttachPrefix gives the empty sequence s the longest prefix of tokens
// that the radix cache holds under its key, at block granularity: the
// cached blocks become the start of its table, by reference, and the
// cache keeps them until s is freed. It returns the number of tokens
// attached (a multiple of BlockSize). A caller that needs the logits of
// the last prompt token passes the prompt without it.
func (m *Manager) AttachPrefix(s SeqID, tokens []int32) int {
	q := m.seq(s)
	if q.n != 0 {
		panic(fmt.Sprintf("paged: attach a prefix to sequence %d, which already holds %d tokens", s, q.n))
	}
	blocks, node := m.radix.Match(q.extra, tokens)
	for _, b := range blocks {
		m.pool.Retain(b)
	}
	q.blocks = append(q.blocks, blocks...)
	q.n = len(blocks) * m.pool.blockSize
	m.radix.lock(node)
	m.radix.unlock(q.node)
	q.node = node
	m.version++
	m.checkInvariants()
	return q.n
}

// ExtendPrefix continues sequence s, whose length is a whole number of
// blocks, with the cached blocks that follow it in the radix cache: tokens
// are its tokens and the ones it is about to compute. The blocks join its
// table by reference and the cache keeps them until s is freed. It returns
// the number of tokens added (a multiple of BlockSize). This lets a
// sequence admitted while another was computing the same prompt pick up
// what that one has cached since.
func (m *Manager) ExtendPrefix(s SeqID, tokens []int32) int {
	q := m.seq(s)
	bs := m.pool.blockSize
	if q.n%bs != 0 || len(tokens) < q.n+bs {
		return 0
	}
	blocks, node := m.radix.Match(q.extra, tokens)
	have := q.n / bs
	if len(blocks) <= have {
		return 0
	}
	for _, b := range blocks[have:] {
		m.pool.Retain(b)
	}
	q.blocks = append(q.blocks, blocks[have:]...)
	added := (len(blocks) - have) * bs
	q.n += added
	m.radix.lock(node)
	m.radix.unlock(q.node)
	q.node = node
	m.version++
	m.checkInvariants()
	return added
}

// CachePrefix offers the full blocks of sequence s's first len(tokens)
// tokens (tokens are their IDs) to the radix cache under its key, and moves
// s's lock to the inserted path. It returns how many of those blocks the
// cache already held: there the cache keeps its own, and s keeps its
// duplicates until it is freed. The rest are now shared with the cache.
func (m *Manager) CachePrefix(s SeqID, tokens []int32) int {
	q := m.seq(s)
	if len(tokens) > q.n {
		panic(fmt.Sprintf("paged: cache %d tokens of sequence %d, which holds %d", len(tokens), s, q.n))
	}
	nb := len(tokens) / m.pool.blockSize
	node, existing := m.radix.Insert(q.extra, tokens[:nb*m.pool.blockSize], q.blocks[:nb])
	if node != nil {
		q = m.seq(s)
		m.radix.lock(node)
		m.radix.unlock(q.node)
		q.node = node
	}
	m.checkInvariants()
	return existing
}

// DrainCopies appends the pending copy-on-write copies to dst, in the
// order they were made, and forgets them. The caller hands them to the
// backend in one batch before the next forward pass; until then the
// blocks they name are not reused.
func (m *Manager) DrainCopies(dst []Copy) []Copy {
	dst = append(dst, m.copies...)
	for _, c := range m.copies {
		m.pool.Release(c.Src)
		m.pool.Release(c.Dst)
	}
	m.copies = m.copies[:0]
	m.version++
	m.checkInvariants()
	return dst
}

// PendingCopies is the number of copies DrainCopies would return.
func (m *Manager) PendingCopies() int { return len(m.copies) }

// pins is the number of refs pending copies hold on block b.
func (m *Manager) pins(b BlockID) int {
	n := 0
	for _, c := range m.copies {
		if c.Src == b {
			n++
		}
		if c.Dst == b {
			n++
		}
	}
	return n
}

// releaseBackwards releases blocks from the last one, so that the pool
// (last freed, first reused) hands them out again in their old order.
func (m *Manager) releaseBackwards(blocks []BlockID) {
	for i := len(blocks) - 1; i >= 0; i-- {
		m.pool.Release(blocks[i])
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
