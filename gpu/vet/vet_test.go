package vet

import (
	"errors"
	"strings"
	"testing"
	"time"

	"folio/gpu"
	"folio/gpu/cpu"
)

// wrongSoftmax is the CPU backend with one kernel broken, as a GPU kernel
// that never met its hardware might be.
type wrongSoftmax struct{ *cpu.Backend }

func (w wrongSoftmax) Softmax(x gpu.Tensor) {
	w.Backend.Softmax(x)
	w.Backend.Scale(x, x, 1.5)
}

func TestSubsetCoversEveryOpOnce(t *testing.T) {
	sub := Subset(1)
	ops := map[string]bool{}
	for _, c := range sub {
		ops[c.Op] = true
	}
	for _, want := range []string{"MatMul Q4_K", "MatMul Q8_0", "MatMul F16", "Softmax", "Attention decode", "Attention prefill", "RMSNorm", "Rope", "ExpertMatMuls Q4_K"} {
		found := false
		for op := range ops {
			found = found || strings.HasPrefix(op, want)
		}
		if !found {
			t.Errorf("the subset has no %q case", want)
		}
	}
	if len(sub) > 80 {
		t.Errorf("%d cases: the first-run check should take seconds", len(sub))
	}
}

// A device that passes is checked once and remembered across processes
// (a new Checker on the same folder); a new folio version checks again.
func TestPassRemembered(t *testing.T) {
	dir := t.TempDir()
	dev := cpu.New(1)
	defer dev.Close()
	c := New(dir, "v1")
	start := time.Now()
	if _, err := c.Check(dev, "cpu test-device"); err != nil {
		t.Fatal(err)
	}
	t.Logf("first-run check: %v", time.Since(start))
	if _, err := c.Check(dev, "cpu test-device"); err != nil || c.runs != 1 {
		t.Fatalf("second check: %v after %d runs, want the verdict remembered", err, c.runs)
	}
	c2 := New(dir, "v1")
	if _, err := c2.Check(dev, "cpu test-device"); err != nil || c2.runs != 0 {
		t.Fatalf("after a restart: %v after %d runs, want the file's verdict", err, c2.runs)
	}
	c3 := New(dir, "v2")
	c3.check = func(gpu.Backend) (bool, string) { return true, "stand-in" }
	if _, err := c3.Check(dev, "cpu test-device"); err != nil || c3.runs != 1 {
		t.Fatalf("another folio version: %v after %d runs, want a new check", err, c3.runs)
	}
}

// A device with a wrong kernel fails, says what failed the first time and
// only that it is known to fail after, also after a restart.
func TestWrongKernelFails(t *testing.T) {
	dir := t.TempDir()
	dev := wrongSoftmax{cpu.New(1)}
	defer dev.Close()
	c := New(dir, "v1")
	quiet, err := c.Check(dev, "cpu broken")
	if !errors.Is(err, ErrFailed) || quiet || !strings.Contains(err.Error(), "Softmax") {
		t.Fatalf("broken softmax: quiet %v, %v; want ErrFailed naming Softmax", quiet, err)
	}
	if quiet, err = c.Check(dev, "cpu broken"); !errors.Is(err, ErrFailed) || !quiet || c.runs != 1 {
		t.Fatalf("again: quiet %v, %v after %d runs; want the remembered failure, quiet", quiet, err, c.runs)
	}
	c2 := New(dir, "v1")
	if quiet, err = c2.Check(dev, "cpu broken"); !errors.Is(err, ErrFailed) || quiet || c2.runs != 0 {
		t.Fatalf("after a restart: quiet %v, %v after %d runs", quiet, err, c2.runs)
	}
	if _, err := c2.Check(cpu.New(1), "cpu other"); err != nil {
		t.Fatalf("another device: %v", err)
	}
}
