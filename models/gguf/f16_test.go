package gguf

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func isNaN16(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x03ff != 0 }

func TestF16ToF32Known(t *testing.T) {
	tests := []struct {
		name string
		h    uint16
		want float32
	}{
		{"one", 0x3c00, 1},
		{"minus two", 0xc000, -2},
		{"max", 0x7bff, 65504},
		{"smallest subnormal", 0x0001, 0x1p-24},
		{"largest subnormal", 0x03ff, 1023 * 0x1p-24},
		{"smallest normal", 0x0400, 0x1p-14},
		{"third", 0x3555, 0.333251953125},
		{"zero", 0x0000, 0},
		{"inf", 0x7c00, float32(math.Inf(1))},
		{"minus inf", 0xfc00, float32(math.Inf(-1))},
	}
	for _, tt := range tests {
		if got := F16ToF32(tt.h); got != tt.want {
			t.Errorf("%s: F16ToF32(%#04x) = %g, want %g", tt.name, tt.h, got, tt.want)
		}
		if got := F32ToF16(tt.want); got != tt.h {
			t.Errorf("%s: F32ToF16(%g) = %#04x, want %#04x", tt.name, tt.want, got, tt.h)
		}
	}
	if b := math.Float32bits(F16ToF32(0x8000)); b != 0x80000000 {
		t.Errorf("F16ToF32(0x8000) bits = %#08x, want -0", b)
	}
	// NaNs keep their payload and come out quiet, as vcvtph2ps gives them.
	for h, want := range map[uint16]uint32{0x7e00: 0x7fc00000, 0x7c01: 0x7fc02000, 0xfd55: 0xffeaa000} {
		if b := math.Float32bits(F16ToF32(h)); b != want {
			t.Errorf("F16ToF32(%#04x) bits = %#08x, want %#08x", h, b, want)
		}
	}
}

func TestF32ToF16Rounding(t *testing.T) {
	tests := []struct {
		name string
		f    float32
		want uint16
	}{
		{"tie to even, down", 1 + 0x1p-11, 0x3c00},
		{"tie to even, up", 1 + 3*0x1p-11, 0x3c02},
		{"just above tie", 1 + 0x1p-11 + 0x1p-23, 0x3c01},
		{"just below max overflow", 65519.996, 0x7bff},
		{"tie at max rounds to inf", 65520, 0x7c00},
		{"overflow", 1e10, 0x7c00},
		{"negative overflow", -1e10, 0xfc00},
		{"half smallest subnormal ties to zero", 0x1p-25, 0x0000},
		{"just above half smallest subnormal", 0x1p-25 * (1 + 0x1p-23), 0x0001},
		{"subnormal tie to even, up", 3 * 0x1p-25, 0x0002},
		{"subnormal tie to even, down", 5 * 0x1p-25, 0x0002},
		{"largest subnormal tie rounds to normal", 1023.5 * 0x1p-24, 0x0400},
		{"tiny positive", 1e-10, 0x0000},
		{"tiny negative keeps sign", -1e-10, 0x8000},
		{"float32 subnormal", 0x1p-140, 0x0000},
		{"float32 max", math.MaxFloat32, 0x7c00},
	}
	for _, tt := range tests {
		if got := F32ToF16(tt.f); got != tt.want {
			t.Errorf("%s: F32ToF16(%g) = %#04x, want %#04x", tt.name, tt.f, got, tt.want)
		}
	}
	for _, bits := range []uint32{0x7fc00000, 0x7f800001, 0xffc00000, 0x7fbfffff} {
		if h := F32ToF16(math.Float32frombits(bits)); !isNaN16(h) {
			t.Errorf("F32ToF16(NaN %#08x) = %#04x, want a NaN", bits, h)
		}
	}
}

// TestF16RoundTripExhaustive: every half survives half->f32->half, and its
// float32 value matches an independent float64 formula.
func TestF16RoundTripExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := F16ToF32(h)
		back := F32ToF16(f)
		if isNaN16(h) {
			if !math.IsNaN(float64(f)) || !isNaN16(back) {
				t.Fatalf("NaN %#04x -> %g -> %#04x", h, f, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, back)
		}
		if want := half64(h); float64(f) != want {
			t.Fatalf("F16ToF32(%#04x) = %g, want %g", h, f, want)
		}
	}
}

// half64 is the value of a non-NaN half by the IEEE formula.
func half64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp, mant := int(h>>10&0x1f), float64(h&0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(mant, -24)
	case 0x1f:
		return math.Inf(int(sign))
	}
	return sign * math.Ldexp(1024+mant, exp-25)
}

// nearestHalf is a slow reference for F32ToF16 on non-NaN input: the
// nearest half by float64 distance, ties to the even encoding, values at or
// beyond 65520 (halfway to the next binade) to inf.
func nearestHalf(f float32, positive []float64) uint16 {
	a := math.Abs(float64(f))
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	if a >= 65520 {
		return sign | 0x7c00
	}
	i, _ := slices.BinarySearch(positive, a) // positive[i] >= a
	if i == len(positive) {
		return sign | 0x7bff
	}
	if positive[i] == a || i == 0 {
		return sign | uint16(i)
	}
	lo, hi := a-positive[i-1], positive[i]-a
	switch {
	case lo < hi:
		return sign | uint16(i-1)
	case hi < lo:
		return sign | uint16(i)
	case i%2 == 0:
		return sign | uint16(i)
	}
	return sign | uint16(i-1)
}

func TestF32ToF16MatchesReference(t *testing.T) {
	positive := make([]float64, 0x7c00) // encodings 0x0000..0x7bff, ascending
	for i := range positive {
		positive[i] = half64(uint16(i))
	}
	check := func(f float32) {
		t.Helper()
		if got, want := F32ToF16(f), nearestHalf(f, positive); got != want {
			t.Fatalf("F32ToF16(%g = %#08x) = %#04x, want %#04x", f, math.Float32bits(f), got, want)
		}
	}
	// Every midpoint between neighbouring halves (exact ties) and the
	// float32s on either side of it.
	for i := 1; i < len(positive); i++ {
		mid := float32((positive[i-1] + positive[i]) / 2)
		for _, f := range []float32{mid, math.Nextafter32(mid, 0), math.Nextafter32(mid, 1e9)} {
			check(f)
			check(-f)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		f := math.Float32frombits(rng.Uint32())
		if !math.IsNaN(float64(f)) {
			check(f)
		}
	}
}

func TestBF16Known(t *testing.T) {
	tests := []struct {
		name string
		bits uint32 // float32 input
		want uint16
	}{
		{"one", 0x3f800000, 0x3f80},
		{"tie to even, down", 0x3f808000, 0x3f80},
		{"tie to even, up", 0x3f818000, 0x3f82},
		{"above tie", 0x3f808001, 0x3f81},
		{"below tie", 0x3f807fff, 0x3f80},
		{"max float rounds to inf", 0x7f7fffff, 0x7f80},
		{"inf", 0x7f800000, 0x7f80},
		{"minus inf", 0xff800000, 0xff80},
		{"subnormal rounds, not flushed", 0x00018000, 0x0002},
		{"subnormal tie to zero", 0x00008000, 0x0000},
		{"minus zero", 0x80000000, 0x8000},
		{"signalling NaN turns quiet", 0x7f800001, 0x7fc0},
		{"NaN that would round to inf", 0x7f80ffff, 0x7fc0},
	}
	for _, tt := range tests {
		if got := F32ToBF16(math.Float32frombits(tt.bits)); got != tt.want {
			t.Errorf("%s: F32ToBF16(%#08x) = %#04x, want %#04x", tt.name, tt.bits, got, tt.want)
		}
	}
	if got := BF16ToF32(0x3f80); got != 1 {
		t.Errorf("BF16ToF32(0x3f80) = %g, want 1", got)
	}
}

func TestBF16RoundTripExhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		f := BF16ToF32(h)
		back := F32ToBF16(f)
		if h&0x7f80 == 0x7f80 && h&0x7f != 0 {
			if !math.IsNaN(float64(f)) || back&0x7f80 != 0x7f80 || back&0x7f == 0 {
				t.Fatalf("NaN %#04x -> %g -> %#04x", h, f, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, back)
		}
	}
}

// TestF32ToBF16MatchesReference compares with the nearer of the two
// bfloat16 neighbours by float64 distance (inf counting as 2^128), ties to
// the even encoding.
func TestF32ToBF16MatchesReference(t *testing.T) {
	val := func(h uint16) float64 {
		if h&0x7fff == 0x7f80 {
			return math.Copysign(0x1p128, float64(BF16ToF32(h)))
		}
		return float64(BF16ToF32(h))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 1 << 20 {
		bits := rng.Uint32()
		if i%4 == 0 {
			bits = bits&^0xffff | 0x8000 // an exact tie
		}
		f := math.Float32frombits(bits)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		lo := uint16(bits >> 16)
		hi := lo + 1
		x := float64(f)
		dlo, dhi := math.Abs(x-val(lo)), math.Abs(val(hi)-x)
		want := lo
		if dhi < dlo || dhi == dlo && lo&1 == 1 {
			want = hi
		}
		if got := F32ToBF16(f); got != want {
			t.Fatalf("F32ToBF16(%#08x) = %#04x, want %#04x", bits, got, want)
		}
	}
}
