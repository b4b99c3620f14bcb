package gguf

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

var allDequantizable = []TensorType{
	TypeF32, TypeF16, TypeBF16, TypeQ8_0, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1,
	TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeMXFP4, TypeIQ4_NL, TypeIQ4_XS,
}

// rmsBound is the largest relative RMS error, sqrt(Σ(x-y)²/Σx²), a
// quantize/dequantize round trip of standard normal data may have. The
// measured values (seed below, 64Ki elements) are in the comments; the
// bounds leave some margin for other data.
var rmsBound = map[TensorType]float64{
	TypeF32:    0,
	TypeF16:    0.0005,
	TypeBF16:   0.004,
	TypeQ8_0:   0.01,
	TypeQ6_K:   0.02,
	TypeQ5_0:   0.06,
	TypeQ5_1:   0.06,
	TypeQ5_K:   0.05,
	TypeQ4_0:   0.12,
	TypeQ4_1:   0.12,
	TypeQ4_K:   0.1,
	TypeQ3_K:   0.25,
	TypeQ2_K:   0.45,
	TypeMXFP4:  0.2,
	TypeIQ4_NL: 0.09,
	TypeIQ4_XS: 0.09,
}

func TestCanDequantizeAndQuantize(t *testing.T) {
	for _, typ := range allDequantizable {
		if !CanDequantize(typ) {
			t.Errorf("CanDequantize(%v) = false", typ)
		}
	}
	for _, typ := range []TensorType{TypeF32, TypeF16, TypeBF16, TypeQ8_0, TypeQ4_0, TypeQ4_K, TypeQ6_K, TypeMXFP4} {
		if !CanQuantize(typ) {
			t.Errorf("CanQuantize(%v) = false", typ)
		}
	}
	for _, typ := range []TensorType{TypeIQ2_XS, TypeQ8_K, TypeQ8_1, TypeI8, TypeIQ3_S, TensorType(99)} {
		if CanDequantize(typ) || CanQuantize(typ) {
			t.Errorf("%v: CanDequantize = %v, CanQuantize = %v, want false", typ, CanDequantize(typ), CanQuantize(typ))
		}
	}
	for typ := range rmsBound {
		if !CanQuantize(typ) {
			t.Errorf("CanQuantize(%v) = false, but it has an error bound", typ)
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		kind    error
		message string // a substring the message must contain
	}{
		{"no kernel", Dequantize(TypeIQ2_XS, make([]byte, 74), make([]float32, 256)), ErrNoKernel,
			"gguf: cannot dequantize IQ2_XS: folio reads this type's layout but has no kernel for it; requantize the model to Q4_K_M or Q8_0"},
		{"unknown type", Dequantize(TensorType(99), nil, nil), ErrNoKernel, "unknown tensor type id"},
		{"unknown type, quantize", Quantize(TensorType(99), nil, nil), ErrNoKernel,
			"gguf: cannot quantize to type(99): folio has no quantizer for it; choose one of F32, F16, Q4_0"},
		{"no quantizer", Quantize(TypeQ8_K, make([]float32, 256), make([]byte, 292)), ErrNoKernel,
			"gguf: cannot quantize to Q8_K: folio has no quantizer for it; choose one of F32, F16, Q4_0"},
		{"partial block", Dequantize(TypeQ4_K, make([]byte, 144), make([]float32, 255)), ErrRowSize,
			"255 elements is not a multiple of the block size 256"},
		{"short source", Dequantize(TypeQ4_K, make([]byte, 143), make([]float32, 256)), ErrRowSize,
			"256 elements take 144 bytes, the buffer has 143"},
		{"long source", Dequantize(TypeQ8_0, make([]byte, 35), make([]float32, 32)), ErrRowSize,
			"32 elements take 34 bytes, the buffer has 35"},
		{"short f16 source", Dequantize(TypeF16, make([]byte, 3), make([]float32, 2)), ErrRowSize, "take 4 bytes"},
		{"quantize partial block", Quantize(TypeQ4_0, make([]float32, 33), make([]byte, 18)), ErrRowSize,
			"gguf: cannot quantize to Q4_0: 33 elements"},
		{"quantize short dst", Quantize(TypeQ6_K, make([]float32, 512), make([]byte, 210)), ErrRowSize,
			"512 elements take 420 bytes, the buffer has 210"},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.kind) {
			t.Errorf("%s: error %v, want one wrapping %v", tt.name, tt.err, tt.kind)
			continue
		}
		if !strings.Contains(tt.err.Error(), tt.message) {
			t.Errorf("%s: error %q does not contain %q", tt.name, tt.err, tt.message)
		}
	}

	for _, typ := range allDequantizable {
		if err := Dequantize(typ, nil, nil); err != nil {
			t.Errorf("%v: empty row: %v", typ, err)
		}
		if err := Quantize(typ, nil, nil); err != nil {
			t.Errorf("%v: empty row: %v", typ, err)
		}
	}
}

func normalData(n int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 0))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// roundTrip quantizes x as typ and decodes it again.
func roundTrip(t *testing.T, typ TensorType, x []float32) []float32 {
	t.Helper()
	enc := make([]byte, typ.RowBytes(int64(len(x))))
	if err := Quantize(typ, x, enc); err != nil {
		t.Fatal(err)
	}
	y := make([]float32, len(x))
	if err := Dequantize(typ, enc, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// relRMS is sqrt(Σ(x-y)²/Σx²), with NaN or Inf in y reported as +Inf.
func relRMS(x, y []float32) float64 {
	var num, den float64
	for i := range x {
		if math.IsNaN(float64(y[i])) || math.IsInf(float64(y[i]), 0) {
			return math.Inf(1)
		}
		d := float64(x[i]) - float64(y[i])
		num += d * d
		den += float64(x[i]) * float64(x[i])
	}
	return math.Sqrt(num / den)
}

func TestRoundTripNormal(t *testing.T) {
	x := normalData(1<<16, 42)
	for _, typ := range allDequantizable {
		t.Run(typ.String(), func(t *testing.T) {
			y := roundTrip(t, typ, x)
			e := relRMS(x, y)
			t.Logf("%v: relative RMS error %.5f (bound %g)", typ, e, rmsBound[typ])
			if e > rmsBound[typ] {
				t.Errorf("%v: relative RMS error %.5f, want <= %g", typ, e, rmsBound[typ])
			}
			// Deterministic: quantizing the decoded values once more (or the
			// same input again) must not depend on anything but the input.
			if e2 := relRMS(x, roundTrip(t, typ, x)); e2 != e {
				t.Errorf("%v: second run gave error %g, first %g", typ, e2, e)
			}
		})
	}
}

// TestRoundTripNegative: data of one sign (here all below -0.5), which the
// min-offset formats must represent without a zero quant to lean on.
func TestRoundTripNegative(t *testing.T) {
	x := normalData(1<<14, 7)
	for i, v := range x {
		x[i] = -float32(math.Abs(float64(v))) - 0.5
	}
	for _, typ := range allDequantizable {
		y := roundTrip(t, typ, x)
		e := relRMS(x, y)
		t.Logf("%v: relative RMS error %.5f", typ, e)
		if e > rmsBound[typ] {
			t.Errorf("%v: relative RMS error %.5f on negative data, want <= %g", typ, e, rmsBound[typ])
		}
	}
}

func TestRoundTripZeros(t *testing.T) {
	x := make([]float32, 1024)
	for _, typ := range allDequantizable {
		y := roundTrip(t, typ, x)
		for i, v := range y {
			if v != 0 {
				t.Fatalf("%v: element %d of an all-zero row decodes to %g", typ, i, v)
			}
		}
	}
}

// TestRoundTripHugeValue puts one value 10⁴ times the others' scale in a
// row: it must come back close, with no NaN or Inf, and blocks without it
// must keep their usual accuracy.
func TestRoundTripHugeValue(t *testing.T) {
	const n, pos, huge = 1024, 300, 1e4
	x := normalData(n, 9)
	x[pos] = huge
	for _, typ := range allDequantizable {
		y := roundTrip(t, typ, x)
		// MXFP4's scale is a power of two, so even a block's largest
		// value is rounded to the E2M1 grid (4, 6, 8 ...: up to 1/5 off).
		tol := 0.01
		if typ == TypeMXFP4 {
			tol = 0.2
		}
		if rel := math.Abs(float64(y[pos])-huge) / huge; rel > tol {
			t.Errorf("%v: huge value %g decodes to %g", typ, float32(huge), y[pos])
		}
		// Blocks of 256 elements other than the one holding pos.
		var xs, ys []float32
		for b := 0; b < n; b += 256 {
			if pos/256 != b/256 {
				xs, ys = append(xs, x[b:b+256]...), append(ys, y[b:b+256]...)
			}
		}
		if e := relRMS(xs, ys); e > rmsBound[typ]*1.5 {
			t.Errorf("%v: other blocks' relative RMS error %.5f, want <= %g", typ, e, rmsBound[typ]*1.5)
		}
		for i, v := range y {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%v: element %d decodes to %g", typ, i, v)
			}
		}
	}
}

// TestDequantizeRandomBytes: any bytes decode without a panic, whatever the
// scales hold (NaN and Inf included).
func TestDequantizeRandomBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range allDequantizable {
		n := 4 * 256
		src := make([]byte, typ.RowBytes(int64(n)))
		for i := range src {
			src[i] = byte(rng.Uint32())
		}
		if err := Dequantize(typ, src, make([]float32, n)); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
}

// TestQuantizeNonFinite: NaN and Inf in the input give some block, never a
// panic.
func TestQuantizeNonFinite(t *testing.T) {
	x := normalData(512, 11)
	x[3] = float32(math.NaN())
	x[260] = float32(math.Inf(1))
	x[300] = float32(math.Inf(-1))
	for _, typ := range allDequantizable {
		enc := make([]byte, typ.RowBytes(int64(len(x))))
		if err := Quantize(typ, x, enc); err != nil {
			t.Errorf("%v: %v", typ, err)
		}
	}
}

func FuzzDequantize(f *testing.F) {
	f.Add(uint8(TypeQ4_K), make([]byte, 144))
	f.Add(uint8(TypeQ6_K), make([]byte, 210))
	f.Add(uint8(TypeF16), []byte{0, 0x3c})
	f.Fuzz(func(t *testing.T, typ uint8, src []byte) {
		tt := TensorType(typ)
		if !CanDequantize(tt) {
			return
		}
		n := len(src) / tt.TypeSize() * tt.BlockSize()
		if err := Dequantize(tt, src[:tt.RowBytes(int64(n))], make([]float32, n)); err != nil {
			t.Fatal(err)
		}
		// A length mismatch is an error, not a panic.
		_ = Dequantize(tt, src, make([]float32, n+1))
	})
}

func BenchmarkDequantize(b *testing.B) {
	const n = 4096
	x := normalData(n, 1)
	for _, typ := range allDequantizable {
		b.Run(typ.String(), func(b *testing.B) {
			src := make([]byte, typ.RowBytes(n))
			if err := Quantize(typ, x, src); err != nil {
				b.Fatal(err)
			}
			dst := make([]float32, n)
			b.SetBytes(n * 4)
			for b.Loop() {
				if err := Dequantize(typ, src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	const n = 4096
	x := normalData(n, 1)
	for _, typ := range allDequantizable {
		b.Run(typ.String(), func(b *testing.B) {
			dst := make([]byte, typ.RowBytes(n))
			b.SetBytes(n * 4)
			for b.Loop() {
				if err := Quantize(typ, x, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
