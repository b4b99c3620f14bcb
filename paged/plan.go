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
	blocks  [MaxGroups]int // fresh blocks the plan takes per group, copy destinations included
	cowSrc  []Copy         // the shared blocks the plan copies (Src, Group), in step order
}

type planStep struct {
	seq    SeqID
	n      int             // tokens to add
	blocks [MaxGroups]int  // fresh blocks per group, including the copy destination
	cow    [MaxGroups]bool // the group's last block is shared: copy it before writing
}

// Blocks is the number of fresh blocks the plan takes from the first
// group's pool.
func (p *Plan) Blocks() int { return p.blocks[0] }

// BlocksIn is the number of fresh blocks the plan takes from group g's
// pool.
func (p *Plan) BlocksIn(g int) int { return p.blocks[g] }

// Copies is the number of copy-on-write copies Commit will record.
func (p *Plan) Copies() int { return len(p.cowSrc) }

// Reserve adds nTokens more tokens of sequence s to plan p and reports
// whether everything the plan holds fits in the free blocks of every
// group. It changes nothing but p; on error it leaves p as it was. The
// error is an *OutOfBlocksError (wrapping ErrOutOfBlocks) with the group
// short of blocks, its blocks free and the blocks the plan would need.
// Reserving the same sequence twice adds up. In a sliding group the
// blocks that Commit lets go of first (those before the window of the
// sequence's next row that only its table holds) count as free.
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
		for g := range m.pools {
			st.cow[g] = m.mustCopy(q, g, p.cowSrc)
		}
	}
	need := p.blocks
	for g, pool := range m.pools {
		t := q.tables[g]
		st.blocks[g] = ceilDiv(q.n+st.n, m.bs) - len(t)
		if st.cow[g] {
			st.blocks[g]++
		}
		need[g] += st.blocks[g]
		if old >= 0 {
			need[g] -= p.steps[old].blocks[g]
		}
		// what Commit's trim gives back comes first
		freed := 0
		for i := min(m.windowStart(g, q.n), len(t)) - 1; i >= 0 && t[i] != NoBlock; i-- {
			if pool.refs[t[i]] == 1 {
				freed++
			}
		}
		if need[g] > pool.nFree+freed {
			return &OutOfBlocksError{Free: pool.nFree + freed, Need: need[g], Group: g}
		}
	}
	p.blocks = need
	if old >= 0 {
		p.steps[old] = st
		return nil
	}
	for g, cow := range st.cow[:len(m.pools)] {
		if cow {
			t := q.tables[g]
			p.cowSrc = append(p.cowSrc, Copy{Src: t[len(t)-1], Group: g})
		}
	}
	q.planID, q.planStep = p.id, len(p.steps)
	p.steps = append(p.steps, st)
	return nil
}

// mustCopy reports whether writing after q's last token means copying its
// last block in group g: the block is partly filled and someone else
// holds it. Refs held by pending copies do not count, and neither do the
// holders that copies earlier in the plan (planned) will have moved away.
func (m *Manager) mustCopy(q *seqState, g int, planned []Copy) bool {
	if q.n%m.bs == 0 {
		return false
	}
	t := q.tables[g]
	last := t[len(t)-1]
	r := int(m.pools[g].refs[last])
	if r <= 1 {
		return false
	}
	r -= m.pins(g, last)
	for _, c := range planned {
		if c.Src == last && c.Group == g {
			r--
		}
	}
	return r > 1
}

// Commit carries out plan p: fresh blocks for every sequence in it, the
// copies it planned (pending until DrainCopies), and the new lengths. In
// a sliding group every sequence first lets go of the blocks before the
// window of its first new row; a copy a sequence planned of a block that
// no one else holds after that is not made. It then empties p for the
// next step.
// Committing a plan made before another change to the Manager is a bug
// and panics.
func (m *Manager) Commit(p *Plan) {
	if p.m == nil {
		return
	}
	m.checkFresh(p)
	copies := len(m.copies)
	for _, st := range p.steps { // no row before a sequence's old end is still to come
		q := m.seq(st.seq)
		for g, t := range q.tables {
			m.trim(g, t, q.n)
		}
	}
	for _, st := range p.steps {
		m.grow(m.seq(st.seq), st)
	}
	// A trim may have left a planned copy's block unshared: then it is not
	// copied, and its fresh block stays free.
	if got := len(m.copies) - copies; got > len(p.cowSrc) {
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
	n := q.n + st.n
	for g := range m.pools {
		t := q.tables[g]
		cow := m.mustCopy(q, g, nil)
		if cow && !st.cow[g] {
			panic("paged: the sharing of a block changed between Reserve and Commit")
		}
		if cow {
			last := len(t) - 1
			src, dst := t[last], m.alloc(g)
			// The copy holds src and dst until drained; the table's hold on
			// src moves to dst.
			m.pools[g].Retain(src)
			m.pools[g].Retain(dst)
			m.pools[g].Release(src)
			t[last] = dst
			m.copies = append(m.copies, Copy{Src: src, Dst: dst, Group: g})
		}
		for len(t) < ceilDiv(n, m.bs) {
			t = append(t, m.alloc(g))
		}
		q.tables[g] = t
	}
	q.n = n
}

func (m *Manager) alloc(g int) BlockID {
	b, err := m.pools[g].Alloc()
	if err != nil {
		panic(fmt.Sprintf("paged: %v after a plan that fit", err))
	}
	return b
}
