// Package gpu defines the compute backend interface the model architectures
// are written against (quantized matmul, rmsnorm, rope, paged attention, ...)
// with gpu/cpu always available and gpu/cuda loaded at run time when an
// NVIDIA driver is present. Arrives with the forward-pass issue.
package gpu
