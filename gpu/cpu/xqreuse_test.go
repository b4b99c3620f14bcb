package cpu

import (
	"math/rand/v2"
	"slices"
	"testing"

	"folio/models/gguf"
)

// MatMuls of one x in a row share its quantization; any op in between, an
// Upload, or a MatMul that overwrote x makes the next one quantize again.
func TestQuantizedXReuse(t *testing.T) {
	if bestLevel == levelScalar {
		t.Skip("no SIMD kernels on this machine")
	}
	r := rand.New(rand.NewPCG(60, 61))
	const n, k = 3, 256
	b := newTestBackend(t)
	dataA, _ := quantWeight(t, r, gguf.TypeQ8_0, 48, k)
	dataB, _ := quantWeight(t, r, gguf.TypeQ4_K, 32, k)
	dataSq, _ := quantWeight(t, r, gguf.TypeQ8_0, k, k)
	wa := newWeight(t, b, gguf.TypeQ8_0, 48, k, dataA)
	wb := newWeight(t, b, gguf.TypeQ4_K, 32, k, dataB)
	sq := newWeight(t, b, gguf.TypeQ8_0, k, k, dataSq)
	x1, x2 := randFloats(r, n*k, 1), randFloats(r, n*k, 1)

	// want runs w on a fresh backend's x (no reuse possible).
	want := func(xf []float32, typ gguf.TensorType, rows int, data []byte) []float32 {
		fb := newTestBackend(t)
		w := newWeight(t, fb, typ, rows, k, data)
		x := newAct(t, fb, n, k, xf)
		d := newAct(t, fb, n, rows, nil)
		fb.MatMul(d, x, w)
		return download(fb, d)
	}
	x := newAct(t, b, n, k, x1)
	da, db := newAct(t, b, n, 48, nil), newAct(t, b, n, 32, nil)
	check := func(step string, got []float32, w []float32) {
		t.Helper()
		if !slices.Equal(got, w) {
			t.Fatalf("%s: MatMul differs from a fresh backend's", step)
		}
	}
	b.MatMul(da, x, wa)
	b.MatMul(da, x, wa) // reused
	check("reused", download(b, da), want(x1, gguf.TypeQ8_0, 48, dataA))
	b.MatMul(db, x, wb) // another kind: quantized again
	check("other kind", download(b, db), want(x1, gguf.TypeQ4_K, 32, dataB))

	b.Upload(x, x2)
	b.MatMul(da, x, wa)
	check("after Upload", download(b, da), want(x2, gguf.TypeQ8_0, 48, dataA))

	b.Add(x, x, x) // x = 2·x2
	b.MatMul(da, x, wa)
	x2x2 := make([]float32, len(x2))
	for i, v := range x2 {
		x2x2[i] = v + v
	}
	check("after Add", download(b, da), want(x2x2, gguf.TypeQ8_0, 48, dataA))

	b.MatMul(x, x, sq) // overwrites x with x · sq
	xNow := download(b, x)
	b.MatMul(da, x, wa)
	check("after a MatMul into x", download(b, da), want(xNow, gguf.TypeQ8_0, 48, dataA))
}
