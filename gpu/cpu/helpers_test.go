package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// The tests compare every op with a plain float64 reference written here,
// by normalized error: max|got - want| / max|want|.

// testThreads is more than most CI machines have, so that the pool's
// hand-off between threads is exercised everywhere.
const testThreads = 3

func newTestBackend(t testing.TB) *Backend {
	t.Helper()
	b := New(testThreads)
	t.Cleanup(func() { b.Close() })
	return b
}

// steadyAllocs is op's allocations per call in the steady state: the
// fewest of three runs of testing.AllocsPerRun, which counts every
// goroutine's (CI's go test ./... runs packages side by side on two
// cores, and one run of an op that allocates nothing once saw one a
// call); an op that allocates does so in all three.
func steadyAllocs(op func()) float64 {
	a := testing.AllocsPerRun(20, op)
	for range 2 {
		a = min(a, testing.AllocsPerRun(20, op))
	}
	return a
}

func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64() * scale)
	}
	return x
}

// normErr is max|got - want| / max|want| (or the plain max difference
// when want is all zeros).
func normErr(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		panic("normErr: lengths differ")
	}
	var diff, ref float64
	for i, w := range want {
		diff = max(diff, math.Abs(float64(got[i])-w))
		ref = max(ref, math.Abs(w))
	}
	if ref == 0 {
		return diff
	}
	return diff / ref
}

func checkErr(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if e := normErr(got, want); !(e <= tol) {
		t.Errorf("%s: normalized error %.3g, want ≤ %.3g", what, e, tol)
	}
}

// weightTypes are the types gguf can dequantize: all of them must work.
var weightTypes = []gguf.TensorType{
	gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16,
	gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1,
	gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
	gguf.TypeMXFP4, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS,
}

func TestWeightTypesCoverGGUF(t *testing.T) {
	covered := map[gguf.TensorType]bool{}
	for _, typ := range weightTypes {
		covered[typ] = true
	}
	for id := range 64 {
		typ := gguf.TensorType(id)
		if gguf.CanDequantize(typ) && !covered[typ] {
			t.Errorf("gguf can dequantize %v but the tests do not cover it", typ)
		}
	}
}

// quantWeight quantizes a random rows × cols matrix to typ and returns its
// bytes and the values they decode to (the reference's weights).
func quantWeight(t testing.TB, r *rand.Rand, typ gguf.TensorType, rows, cols int) ([]byte, []float32) {
	t.Helper()
	src := randFloats(r, rows*cols, 1)
	data := make([]byte, int64(rows)*typ.RowBytes(int64(cols)))
	if err := gguf.Quantize(typ, src, data); err != nil {
		t.Fatal(err)
	}
	deq := make([]float32, rows*cols)
	if err := gguf.Dequantize(typ, data, deq); err != nil {
		t.Fatal(err)
	}
	return data, deq
}

func newWeight(t testing.TB, b *Backend, typ gguf.TensorType, rows, cols int, data []byte) gpu.Tensor {
	t.Helper()
	w, err := b.Weight("w", typ, rows, cols, data)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func newAct(t testing.TB, b *Backend, rows, cols int, data []float32) gpu.Tensor {
	t.Helper()
	x, err := b.NewTensor(rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		b.Upload(x, data)
	}
	return x
}

func download(b *Backend, x gpu.Tensor) []float32 {
	out := make([]float32, x.Rows()*x.Cols())
	b.Download(out, x)
	return out
}

// f32Weight wraps float32s as an F32 weight (a norm or a bias, as GGUF
// stores them).
func f32Weight(t testing.TB, b *Backend, rows, cols int, v []float32) gpu.Tensor {
	t.Helper()
	data := make([]byte, 4*len(v))
	if err := gguf.Quantize(gguf.TypeF32, v, data); err != nil {
		t.Fatal(err)
	}
	return newWeight(t, b, gguf.TypeF32, rows, cols, data)
}
