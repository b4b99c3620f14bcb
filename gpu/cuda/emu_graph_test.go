//go:build linux

package cuda

import (
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
)

// Decode steps replayed as graphs while the block table outgrows its
// device buffer compute what the CPU does, step by step.
func TestGraphsWithGrowingTablesOnTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulation takes a while")
	}
	dev, _ := emuBackendWith(t, Options{NoCache: true, Graphs: true})
	ref := cpu.New(2)
	defer ref.Close()
	gd, gr := newGrowth(t, dev), newGrowth(t, ref)
	for pos := growStart; pos < growStart+growSteps; pos++ {
		got, want := gd.step(dev, pos), gr.step(ref, pos)
		if e := gpu.NMSE(got, want); e > 1e-10 {
			t.Errorf("position %d (%d blocks, %d steps as graphs): NMSE %.3g", pos, pos+1, dev.GraphLaunches(), e)
		}
	}
	if dev.GraphLaunches() < 2 || dev.meta.cap <= 4096 {
		t.Errorf("%d steps as graphs, table buffer of %d bytes: the steps did not reach the growth", dev.GraphLaunches(), dev.meta.cap)
	}
}
