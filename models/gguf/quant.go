package gguf

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Tensor formats: every type folio computes with has one file (f32.go,
// f16.go, q4_k.go, ...) holding a comment with its block layout, byte
// offsets included, and a scalar reference dequantizer written to be read
// next to ggml-common.h. Most also have a quantizer that follows ggml's
// reference quantizer (quantize_row_*_ref), so that a model folio writes
// decodes in llama.cpp, and the other way round.
//
// Every fp16 field is an IEEE half and every multi-byte field little-endian.
//
// In the quantizers, a product that feeds an addition is written
// float32(a*b): Go may fuse a*b+c into one FMA instruction (it does on
// arm64), and the explicit conversion forbids that. So a quantizer writes the
// same bytes on every platform: the bytes ggml's reference quantizers give
// when compiled without FP contraction (-ffp-contract=off). A llama.cpp
// built with -march=native contracts to FMA and may differ from them, and
// from itself on other machines, in the last bit of a K-quant scale.

var (
	// ErrNoKernel is wrapped by Dequantize and Quantize for a type that folio
	// has no (de)quantizer for.
	ErrNoKernel = errors.New("gguf: no kernel for tensor type")
	// ErrRowSize is wrapped when a buffer does not hold whole blocks of the
	// size the element count calls for.
	ErrRowSize = errors.New("gguf: row size does not match tensor type")
)

// codec is one format's pair of scalar kernels. Both work on a whole row of
// blocks whose lengths Dequantize and Quantize have already checked.
type codec struct {
	// dequantize decodes len(dst) elements from src.
	dequantize func(src []byte, dst []float32)
	// quantize encodes src into dst; nil where folio has no quantizer.
	quantize func(src []float32, dst []byte)
}

// codecs is the dispatch table: the types folio computes with.
var codecs = map[TensorType]codec{
	TypeF32:    {dequantizeF32, quantizeF32},
	TypeF16:    {dequantizeF16, quantizeF16},
	TypeBF16:   {dequantizeBF16, quantizeBF16},
	TypeQ8_0:   {dequantizeQ8_0, quantizeQ8_0},
	TypeQ4_0:   {dequantizeQ4_0, quantizeQ4_0},
	TypeQ4_1:   {dequantizeQ4_1, quantizeQ4_1},
	TypeQ5_0:   {dequantizeQ5_0, quantizeQ5_0},
	TypeQ5_1:   {dequantizeQ5_1, quantizeQ5_1},
	TypeQ2_K:   {dequantizeQ2_K, quantizeQ2_K},
	TypeQ3_K:   {dequantizeQ3_K, quantizeQ3_K},
	TypeQ4_K:   {dequantizeQ4_K, quantizeQ4_K},
	TypeQ5_K:   {dequantizeQ5_K, quantizeQ5_K},
	TypeQ6_K:   {dequantizeQ6_K, quantizeQ6_K},
	TypeMXFP4:  {dequantizeMXFP4, quantizeMXFP4},
	TypeIQ4_NL: {dequantizeIQ4_NL, quantizeIQ4_NL},
	TypeIQ4_XS: {dequantizeIQ4_XS, quantizeIQ4_XS},
}

// CanDequantize reports whether Dequantize supports t.
func CanDequantize(t TensorType) bool {
	_, ok := codecs[t]
	return ok
}

// CanQuantize reports whether Quantize supports t.
func CanQuantize(t TensorType) bool {
	return codecs[t].quantize != nil
}

// Dequantize decodes len(dst) elements of type t from src into dst.
// len(dst) must be a multiple of t.BlockSize() and src must hold exactly
// t.RowBytes(len(dst)) bytes.
func Dequantize(t TensorType, src []byte, dst []float32) error {
	c, ok := codecs[t]
	if !ok {
		return noKernelError("dequantize", t)
	}
	if err := checkRow("dequantize", t, len(dst), len(src)); err != nil {
		return err
	}
	c.dequantize(src, dst)
	return nil
}

// Quantize encodes src as type t into dst. len(src) must be a multiple of
// t.BlockSize() and dst must hold exactly t.RowBytes(len(src)) bytes.
// The result is deterministic: the same input gives the same bytes.
func Quantize(t TensorType, src []float32, dst []byte) error {
	c := codecs[t]
	if c.quantize == nil {
		return noKernelError("quantize to", t)
	}
	if err := checkRow("quantize to", t, len(src), len(dst)); err != nil {
		return err
	}
	c.quantize(src, dst)
	return nil
}

// quantError is an error with a full user-facing message that still
// matches its sentinel under errors.Is.
type quantError struct {
	msg  string
	kind error
}

func (e *quantError) Error() string { return e.msg }
func (e *quantError) Unwrap() error { return e.kind }

func noKernelError(op string, t TensorType) error {
	var msg string
	switch {
	case op == "dequantize" && !t.Known():
		msg = fmt.Sprintf("gguf: cannot dequantize %v: unknown tensor type id; the file may need a newer folio", t)
	case op == "dequantize":
		msg = fmt.Sprintf("gguf: cannot dequantize %v: folio reads this type's layout but has no kernel for it; requantize the model to Q4_K_M or Q8_0", t)
	default:
		msg = fmt.Sprintf("gguf: cannot %s %v: folio has no quantizer for it; choose one of %s", op, t, quantizableNames())
	}
	return &quantError{msg, ErrNoKernel}
}

// quantizableNames lists the types Quantize supports, in id order.
func quantizableNames() string {
	var ts []TensorType
	for t, c := range codecs {
		if c.quantize != nil {
			ts = append(ts, t)
		}
	}
	slices.Sort(ts)
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// checkRow checks that n elements of t fill whole blocks and that the
// encoded side has exactly the bytes they take.
func checkRow(op string, t TensorType, n, nbytes int) error {
	if bs := t.BlockSize(); n%bs != 0 {
		return &quantError{fmt.Sprintf("gguf: cannot %s %v: %d elements is not a multiple of the block size %d; pass whole blocks",
			op, t, n, bs), ErrRowSize}
	}
	if want := t.RowBytes(int64(n)); int64(nbytes) != want {
		return &quantError{fmt.Sprintf("gguf: cannot %s %v: %d elements take %d bytes, the buffer has %d",
			op, t, n, want, nbytes), ErrRowSize}
	}
	return nil
}

// nearestInt rounds to the nearest integer, ties to even, as ggml's
// nearest_int does (it adds 1.5*2^23 and reads the mantissa). ggml only
// calls it on |f| < 2^22; here large values saturate instead of wrapping
// and NaN gives 0, so the callers' clamps always see a sane number.
func nearestInt(f float32) int {
	switch {
	case f != f:
		return 0
	case f > 1<<30:
		return 1 << 30
	case f < -(1 << 30):
		return -(1 << 30)
	}
	return int(math.RoundToEven(float64(f)))
}

// truncInt converts f toward zero as a C cast to an integer type does, with
// the same saturation as nearestInt (C leaves out-of-range casts undefined).
func truncInt(f float32) int {
	switch {
	case f != f:
		return 0
	case f > 1<<30:
		return 1 << 30
	case f < -(1 << 30):
		return -(1 << 30)
	}
	return int(f)
}

// clampInt returns v limited to [lo, hi].
func clampInt(v, lo, hi int) int {
	return max(lo, min(hi, v))
}

// abs32 is fabsf.
func abs32(f float32) float32 {
	return math.Float32frombits(math.Float32bits(f) &^ (1 << 31))
}

// sqrt32 is sqrtf: the float64 square root rounded to float32 is the
// correctly rounded float32 square root.
func sqrt32(f float32) float32 {
	return float32(math.Sqrt(float64(f)))
}

// groupMaxEps is ggml's GROUP_MAX_EPS: a group whose largest magnitude is
// below it is treated as all zeros.
const groupMaxEps = 1e-15
