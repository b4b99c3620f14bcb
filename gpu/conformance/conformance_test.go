package conformance

import (
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/gguf"
	"folio/models/synth"
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

// The table is fixed by its seed: the same ops, names and bounds in the
// same order, and MatMulCases is its MatMul cases.
func TestCasesTable(t *testing.T) {
	a, b := Cases(3), Cases(3)
	if len(a) != len(b) {
		t.Fatalf("%d cases, then %d", len(a), len(b))
	}
	names := map[string]bool{}
	matmuls := 0
	for i := range a {
		if a[i].Op != b[i].Op || a[i].Tol != b[i].Tol {
			t.Errorf("case %d: %q %g, then %q %g", i, a[i].Op, a[i].Tol, b[i].Op, b[i].Tol)
		}
		if names[a[i].Op] {
			t.Errorf("two cases named %q", a[i].Op)
		}
		names[a[i].Op] = true
		if strings.HasPrefix(a[i].Op, "MatMul") {
			matmuls++
		}
	}
	if m := MatMulCases(3); len(m) != matmuls {
		t.Errorf("MatMulCases: %d cases, the table has %d MatMuls", len(m), matmuls)
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

// The generation check, with the CPU on both sides, agrees exactly; it is
// what `folio gpu selftest` runs against the GPU.
func TestGenerationCheckCPUAgainstItself(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(path, "qwen3", gguf.TypeQ4_K, 3); err != nil {
		t.Fatal(err)
	}
	a, b := cpu.New(1), cpu.New(2)
	defer a.Close()
	defer b.Close()
	g, err := CheckGeneration(path, a, b, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Pass() || g.Steps != 5 || g.Differ != 0 || g.Worst != 0 || len(g.Ref) != 5 {
		t.Errorf("result %+v", g)
	}
}

// A backend that ignores Attention's options (causal attention at the
// scale, whatever the window, cap, direction or sinks) fails every option case
// and no other: the cases can tell.
func TestAttentionOptionCasesCatchIgnoredOptions(t *testing.T) {
	ref, dev := cpu.New(2), cpu.New(1)
	defer ref.Close()
	defer dev.Close()
	n := 0
	for _, r := range CheckOps(ref, &plainAttention{dev}, 1) {
		opts := strings.Contains(r.Op, "window") || strings.Contains(r.Op, "soft-cap") || strings.Contains(r.Op, "bidirectional") ||
			strings.Contains(r.Op, "sinks")
		if opts {
			n++
		}
		if opts == r.Pass() && !strings.Contains(r.Op, "wider than the context") {
			t.Errorf("with options ignored, %s passes: %v (NMSE %.3g %s)", r.Op, r.Pass(), r.NMSE, r.Err)
		}
	}
	if n < 12 {
		t.Errorf("%d option cases", n)
	}
}

// plainAttention is a backend whose Attention drops all options but the
// scale.
type plainAttention struct{ *cpu.Backend }

func (p *plainAttention) Attention(dst, q gpu.Tensor, c gpu.KVCache, layer int, b *gpu.Batch, o gpu.AttnOpts) {
	p.Backend.Attention(dst, q, c, layer, b, gpu.AttnOpts{Scale: o.Scale})
}

// The experts' cases agree between the CPU's Experts ops and the plain
// ops a backend without them runs (a Gather and a MatMul a span, sums on
// the host), and fail for Experts ops that multiply the wrong expert or
// sum the wrong rows: the cases can tell.
func TestExpertCases(t *testing.T) {
	ref, dev := cpu.New(2), cpu.New(1)
	defer ref.Close()
	defer dev.Close()
	var cases []Case
	for _, c := range Cases(1) {
		if strings.HasPrefix(c.Op, "Expert") {
			cases = append(cases, c)
		}
	}
	if len(cases) < 10 {
		t.Fatalf("%d expert cases", len(cases))
	}
	for _, r := range Check(ref, struct{ gpu.Backend }{dev}, cases) {
		if !r.Pass() {
			t.Errorf("plain ops against the CPU's Experts: %s: NMSE %g (tolerance %g) %s", r.Op, r.NMSE, r.Tol, r.Err)
		}
	}
	for _, r := range Check(ref, &wrongExperts{dev}, cases) {
		if r.Pass() {
			t.Errorf("with the wrong experts, %s passes (NMSE %g)", r.Op, r.NMSE)
		}
	}
}

// wrongExperts multiplies each span by the next expert's weights and sums
// each row's first choice k times.
type wrongExperts struct{ *cpu.Backend }

func (w *wrongExperts) ExpertMatMuls(dsts []gpu.Tensor, x gpu.Tensor, rows []int32, ws [][]gpu.Tensor, spans []gpu.ExpertSpan) {
	next := make([]gpu.ExpertSpan, len(spans))
	for i, s := range spans {
		s.Expert = (s.Expert + 1) % len(ws[0])
		next[i] = s
	}
	w.Backend.ExpertMatMuls(dsts, x, rows, ws, next)
}

func (w *wrongExperts) ExpertSum(dst, y gpu.Tensor, at []int32, weights []float32) {
	k := len(at) / dst.Rows()
	first := make([]int32, len(at))
	for i := range at {
		first[i] = at[i/k*k]
	}
	w.Backend.ExpertSum(dst, y, first, weights)
}
