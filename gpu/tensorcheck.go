package gpu

import (
	"fmt"
	"unsafe"

	"folio/models/gguf"
)

// The backends check the tensors handed to their ops the same way, and a
// wrong one is a programming error: these panic with the backend's name.

// Own is t as backend's own tensor type T; another backend's tensor panics.
func Own[T Tensor](backend string, t Tensor) T {
	bt, ok := t.(T)
	if !ok {
		panic(fmt.Sprintf("%s: tensor %v (%T) is not a %s tensor", backend, t, t, backend))
	}
	return bt
}

// MustAct panics unless t, of backend, is a writable F32 activation:
// f32 says its elements are F32, weight that it is a weight.
func MustAct(backend string, t Tensor, f32, weight bool) {
	if weight || !f32 {
		panic(fmt.Sprintf("%s: %v is a weight where an F32 activation is needed", backend, t))
	}
}

// MustF32 panics unless t, of backend, is F32 (an activation or an F32
// weight).
func MustF32(backend string, t Tensor) {
	if t.Type() != gguf.TypeF32 {
		panic(fmt.Sprintf("%s: %v is not F32", backend, t))
	}
}

// CheckShape panics unless t, an operand of backend's op, is rows × cols.
func CheckShape(backend, op, what string, t Tensor, rows, cols int) {
	if t.Rows() != rows || t.Cols() != cols {
		panic(fmt.Sprintf("%s: %s: %s is %v, want [%d, %d]", backend, op, what, t, rows, cols))
	}
}

// UploadWeight checks a weight handed to backend's Weight, data a rows ×
// cols tensor of typ in its GGUF encoding, and returns what the backend
// stores: the data as it is when upload (the type the backend keeps it in)
// is typ, else decoded to F32 (upload F32), with the type and row bytes.
// A type models/gguf cannot decode is ErrUnsupported.
func UploadWeight(backend, name string, typ gguf.TensorType, rows, cols int, data []byte, upload gguf.TensorType) (gguf.TensorType, int64, []byte, error) {
	if !gguf.CanDequantize(typ) {
		return 0, 0, nil, fmt.Errorf("%w: %s: weight %s has type %v, which folio cannot compute with; use a model quantized to F16, Q8_0, Q4_K or Q6_K",
			ErrUnsupported, backend, name, typ)
	}
	if rows <= 0 || cols <= 0 || cols%typ.BlockSize() != 0 {
		return 0, 0, nil, fmt.Errorf("%s: weight %s: shape [%d, %d] does not fit type %v (rows must be whole blocks of %d)",
			backend, name, rows, cols, typ, typ.BlockSize())
	}
	rb := typ.RowBytes(int64(cols))
	if int64(len(data)) != int64(rows)*rb {
		return 0, 0, nil, fmt.Errorf("%s: weight %s: %v [%d, %d] takes %d bytes, got %d", backend, name, typ, rows, cols, int64(rows)*rb, len(data))
	}
	if upload == typ {
		return typ, rb, data, nil
	}
	f := make([]float32, rows*cols)
	if err := gguf.Dequantize(typ, data, f); err != nil {
		return 0, 0, nil, fmt.Errorf("%s: weight %s: %w", backend, name, err)
	}
	return gguf.TypeF32, 4 * int64(cols), unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f)), nil
}

// View is the view of t's first rows rows, for a backend's Slice: t itself
// for all of them, else the one in views of that many rows, else a new one
// mk makes for rows, kept in views for the next ask.
func View[T Tensor](backend string, t T, rows int, views *[]T, mk func(rows int) T) T {
	if rows <= 0 || rows > t.Rows() {
		panic(fmt.Sprintf("%s: Slice of %d rows from %v", backend, rows, t))
	}
	if rows == t.Rows() {
		return t
	}
	for _, v := range *views {
		if v.Rows() == rows {
			return v
		}
	}
	v := mk(rows)
	*views = append(*views, v)
	return v
}

// Grown is spec at blocks blocks, for a backend's GrowKVCache: same says
// it already has them (nothing to do); fewer is an error naming backend,
// as a pool only grows.
func (s KVSpec) Grown(backend string, blocks int) (grown KVSpec, same bool, err error) {
	if blocks < s.Blocks {
		return s, false, fmt.Errorf("%s: grow a K/V cache of %d blocks to %d: a pool only grows", backend, s.Blocks, blocks)
	}
	s.Blocks, same = blocks, blocks == s.Blocks
	return s, same, nil
}
