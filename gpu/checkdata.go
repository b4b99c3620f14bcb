package gpu

import "folio/models/gguf"

// The helpers below build and read tensors for backend checks (the
// conformance table, the CUDA preflight); they panic on a backend error,
// which a check reports as the op's failure.

// Activation makes an F32 activation of rows × cols holding v on be.
func Activation(be Backend, rows, cols int, v []float32) Tensor {
	t, err := be.NewTensor(rows, cols)
	if err != nil {
		panic(err)
	}
	be.Upload(t, v)
	return t
}

// Values downloads t.
func Values(be Backend, t Tensor) []float32 {
	out := make([]float32, t.Rows()*t.Cols())
	be.Download(out, t)
	return out
}

// QuantizeRows encodes v (rows × cols) as typ, row by row.
func QuantizeRows(typ gguf.TensorType, rows, cols int, v []float32) []byte {
	rb := int(typ.RowBytes(int64(cols)))
	data := make([]byte, rows*rb)
	for r := range rows {
		if err := gguf.Quantize(typ, v[r*cols:(r+1)*cols], data[r*rb:(r+1)*rb]); err != nil {
			panic(err)
		}
	}
	return data
}

// WeightOf makes a weight of typ from data on be.
func WeightOf(be Backend, typ gguf.TensorType, rows, cols int, data []byte) Tensor {
	w, err := be.Weight("w", typ, rows, cols, data)
	if err != nil {
		panic(err)
	}
	return w
}
