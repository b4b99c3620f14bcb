//go:build !invariants

package paged

// invariants is false without -tags invariants: the checks below compile
// to nothing, and only tests call verify.
const invariants = false

func (m *Manager) checkInvariants() {}

func (p *BlockPool) checkInvariants() {}
