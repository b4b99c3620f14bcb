package cuda

import (
	"math"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
)

// The checker itself, run with the CPU on both sides: every case runs and
// agrees; a backend that gets one op wrong fails that op only.
func TestCheckOpsCPUAgainstItself(t *testing.T) {
	ref, dev := cpu.New(2), cpu.New(1)
	defer ref.Close()
	defer dev.Close()
	res := CheckOps(ref, dev, 1)
	if len(res) < 40 {
		t.Fatalf("only %d cases", len(res))
	}
	for _, r := range res {
		if !r.Pass() {
			t.Errorf("%s: NMSE %g (tolerance %g) %s", r.Op, r.NMSE, r.Tol, r.Err)
		}
	}
	bad := CheckOps(ref, &wrongSoftmax{dev}, 1)
	for _, r := range bad {
		if strings.HasPrefix(r.Op, "Softmax") == r.Pass() {
			t.Errorf("with a wrong Softmax, %s passes: %v", r.Op, r.Pass())
		}
	}
}

// wrongSoftmax is a backend whose Softmax is off by a little.
type wrongSoftmax struct{ *cpu.Backend }

func (w *wrongSoftmax) Softmax(x gpu.Tensor) {
	w.Backend.Softmax(x)
	v := make([]float32, x.Rows()*x.Cols())
	w.Download(v, x)
	v[0] += 0.1
	w.Upload(x, v)
}

func TestNMSE(t *testing.T) {
	if got := NMSE([]float32{1, 2}, []float32{1, 2}); got != 0 {
		t.Errorf("equal: %g", got)
	}
	if got := NMSE([]float32{1, 3}, []float32{1, 2}); math.Abs(got-0.2) > 1e-12 {
		t.Errorf("one off: %g, want 1/5", got)
	}
	if got := NMSE([]float32{1}, []float32{0}); !math.IsInf(got, 1) {
		t.Errorf("against zero: %g", got)
	}
	if got := NMSE([]float32{float32(math.NaN())}, []float32{1}); !math.IsNaN(got) {
		t.Errorf("NaN: %g", got)
	}
}
