package cuda

import (
	"fmt"

	"folio/gpu"
)

// The ops of the families beyond llama have no CUDA kernels yet: calling
// one panics, naming the op and wrapping gpu.ErrUnsupported.

func (b *Backend) Scale(dst, x gpu.Tensor, s float32)                { unsupportedOp("Scale") }
func (b *Backend) GELUMul(dst, gate, up gpu.Tensor)                  { unsupportedOp("GELUMul") }
func (b *Backend) Softcap(x gpu.Tensor, c float32)                   { unsupportedOp("Softcap") }
func (b *Backend) LayerNorm(dst, x, w, bias gpu.Tensor, eps float32) { unsupportedOp("LayerNorm") }

func unsupportedOp(op string) { panic(fmt.Sprintf("cuda: %s: %v", op, gpu.ErrUnsupported)) }
