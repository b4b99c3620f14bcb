//go:build linux

package cuda

import (
	"bytes"
	"strings"
	"testing"
)

// On the emulator the tiny launches run the kernels themselves, with the
// launch geometry the ops choose, and the graph's two nodes compute.
func TestPreflightOnTheEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("the emulation takes a while")
	}
	d, f := emuDriver(t)
	var out bytes.Buffer
	if err := preflight(&out, fakeEnv(f, d, &fakeCompiler{ver: [2]int{13, 0}}), t.TempDir()); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "graph: y = a + 2·bias, NMSE 0 ") {
		t.Errorf("output:\n%s", out.String())
	}
}
