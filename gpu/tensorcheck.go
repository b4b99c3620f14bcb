package gpu

import (
	"fmt"

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
