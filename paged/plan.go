package paged

import "fmt"

// Plan is the block work of one scheduler step, worked out by Reserve and
// carried out by Commit. Building a plan changes nothing, so the scheduler
// can try a batch, meet ErrOutOfBlocks, preempt or evict, and plan again.
// The zero Plan is empty and ready for use.
type Plan struct {
	m       *Manager
	id      uint64
	version uint64
	steps   []planStep
	blocks  int       // fresh blocks the plan takes, copy destinations included
	cowSrc  []BlockID // the shared blocks the plan copies, in step order
}

type planStep struct {
	seq    SeqID
	n      int  // tokens to add
	blocks int  // fresh blocks, including the copy destination
	cow    bool // the last block is shared: copy it before writing
}

// Blocks is the number of fresh blocks the plan takes from the pool.
func (p *Plan) Blocks() int { return p.blocks }

// Copies is the number of copy-on-write copies Commit will record.
func (p *Plan) Copies() int { return len(p.cowSrc) }

// Reserve adds nTokens more tokens of sequence s to plan p and reports
// whether everything the plan holds fits in the free blocks. It changes
// nothing but p; on error it leaves p as it was. The error is an
// *OutOfBlocksError (wrapping ErrOutOfBlocks) with the blocks free and the
// blocks the plan would need. Reserving the same sequence twice adds up.
func (m *Manager) Reserve(p *Plan, s SeqID, nTokens int) error {
	q := m.seq(s)
	if nTokens < 0 {
		panic(fmt.Sprintf("paged: reserve %d tokens for sequence %d", nTokens, s))
	}
	if p.m == nil {
		m.planIDs++
		p.m, p.id, p.version = m, m.planIDs, m.version
	}
	m.checkFresh(p)
	if nTokens == 0 {
		return nil
	}
	st := planStep{seq: s, n: nTokens}
	old := -1
	if q.planID == p.id {
		old = q.planStep
		st.n += p.steps[old].n
		st.cow = p.steps[old].cow
	} else {
		st.cow = m.mustCopy(q, p.cowSrc)
	}
	st.blocks = ceilDiv(q.n+st.n, m.pool.blockSize) - len(q.blocks)
	if st.cow {
		st.blocks++
	}
	need := p.blocks + st.blocks
	if old >= 0 {
		need -= p.steps[old].blocks
	}
	if need > m.pool.nFree {
		return &OutOfBlocksError{Free: m.pool.nFree, Need: need}
	}
	p.blocks = need
	if old >= 0 {
		p.steps[old] = st
		return nil
	}
	if st.cow {
		p.cowSrc = append(p.cowSrc, q.blocks[len(q.blocks)-1])
	}
	q.planID, q.planStep = p.id, len(p.steps)
	p.steps = append(p.steps, st)
	return nil
}

// mustCopy reports whether writing after q's last token means copying its
// last block: the block is partly filled and someone else holds it. Refs
// held by pending copies do not count, and neither do the holders that
// copies earlier in the plan (planned) will have moved away.
func (m *Manager) mustCopy(q *seqState, planned []BlockID) bool {
	if q.n%m.pool.blockSize == 0 {
		return false
	}
	last := q.blocks[len(q.blocks)-1]
	r := int(m.pool.refs[last])
	if r <= 1 {
		return false
	}
	r -= m.pins(last)
	for _, b := range planned {
		if b == last {
			r--
		}
	}
	return r > 1
}

// Commit carries out plan p: fresh blocks for every sequence in it, the
// copies it planned (pending until DrainCopies), and the new lengths. It
// then empties p for the next step. Committing a plan made before another
// change to the Manager is a bug and panics.
func (m *Manager) Commit(p *Plan) {
	if p.m == nil {
		return
	}
	m.checkFresh(p)
	copies := len(m.copies)
	for _, st := range p.steps {
		m.grow(m.seq(st.seq), st)
	}
	if got := len(m.copies) - copies; got != len(p.cowSrc) {
		panic(fmt.Sprintf("paged: plan promised %d copies, commit made %d", len(p.cowSrc), got))
	}
	*p = Plan{steps: p.steps[:0], cowSrc: p.cowSrc[:0]}
	m.version++
	m.checkInvariants()
}

// Append adds n tokens to sequence s at once: Reserve and Commit of a plan
// of its own.
func (m *Manager) Append(s SeqID, n int) error {
	p := &m.appendPlan
	*p = Plan{steps: p.steps[:0], cowSrc: p.cowSrc[:0]}
	if err := m.Reserve(p, s, n); err != nil {
		return err
	}
	m.Commit(p)
	return nil
}

func (m *Manager) checkFresh(p *Plan) {
	if p.m != m || p.version != m.version {
		panic("paged: plan made before the last change to the Manager (plan again after Free, Fork, Evict, ...)")
	}
}

// grow carries out one step of a plan. The plan counted the blocks, so an
// allocation failure here is a broken invariant.
func (m *Manager) grow(q *seqState, st planStep) {
	if m.mustCopy(q, nil) != st.cow {
		panic("paged: the sharing of a block changed between Reserve and Commit")
	}
	if st.cow {
		last := len(q.blocks) - 1
		src, dst := q.blocks[last], m.alloc()
		// The copy holds src and dst until drained; the table's hold on
		// src moves to dst.
		m.pool.Retain(src)
		m.pool.Retain(dst)
		m.pool.Release(src)
		q.blocks[last] = dst
		m.copies = append(m.copies, Copy{Src: src, Dst: dst})
	}
	q.n += st.n
	for len(q.blocks) < ceilDiv(q.n, m.pool.blockSize) {
		q.blocks = append(q.blocks, m.alloc())
	}
}

func (m *Manager) alloc() BlockID {
	b, err := m.pool.Alloc()
	if err != nil {
		panic(fmt.Sprintf("paged: %v after a plan that fit", err))
	}
	return b
}
