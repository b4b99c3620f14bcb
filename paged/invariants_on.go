//go:build invariants

package paged

// invariants is true when the package is built with -tags invariants:
// every operation then checks the whole state, and a violation panics.
const invariants = true

func (m *Manager) checkInvariants() {
	if err := m.verify(); err != nil {
		panic("paged: broken invariant: " + err.Error())
	}
}

func (p *BlockPool) checkInvariants() {
	if err := p.verify(); err != nil {
		panic("paged: broken invariant: " + err.Error())
	}
}
