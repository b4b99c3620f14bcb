package cpu

// WeightBytesRead is the bytes of the weights that MatMul and MatMuls
// have multiplied by since New, each op counting each of its weights once
// as its file type stores them (the kernels read a weight once per op
// whatever the rows of x): a decode step's count is the weight bytes it
// reads, which for a mixture of experts is its chosen experts' and not
// the others'. Like the ops, it is for the engine's goroutine.
func (b *Backend) WeightBytesRead() int64 { return b.wbytes }

func (b *Backend) countWeight(w *Tensor) {
	b.wbytes += int64(w.rows) * w.typ.RowBytes(int64(w.cols))
}
