// Package gpu defines the compute interface the model architectures are
// written against: device tensors, a paged K/V pool, and the few ops a
// llama-family forward pass needs (quantized matmul with fused
// dequantization, rmsnorm, rope, SiLU·mul, add, softmax, embedding rows,
// writes of K/V into block slots, paged attention through block tables,
// copies of blocks for copy-on-write).
//
// Implementations: gpu/cpu, always available; gpu/cuda, loaded at run time
// when an NVIDIA driver is present; gpu/vulkan, loaded at run time on any
// Vulkan device, checked on lavapipe but not yet selectable. Each one asserts
// `var _ gpu.Backend = (*Backend)(nil)` and is checked op by op against the
// CPU's scalar reference (gpu/conformance).
//
// Optional capabilities, found by type assertion; a backend without one
// gets the plain ops or goes without:
//
//   - MultiMatMul: several MatMuls of one x as one op (MatMuls falls back).
//   - Experts: a mixture of experts' chosen experts, every one's rows at
//     once (ExpertMatMuls, ExpertSum; the CPU, CUDA, Split); models/arch
//     runs them expert by expert with the plain ops without it.
//   - AttentionBlock: rope, K/V write, attention and Wo as one op
//     (RunAttend falls back to AttendOps).
//   - LookupWeighter: a weight only Embed reads, kept without the copy the
//     backend makes for its MatMul kernels.
//   - ArgMaxer: greedy sampling on the device, so a greedy step downloads
//     indices, not logits.
//   - BlockIO: a block's K/V to and from host memory, for persisted
//     prefixes.
//   - KVGrower: a K/V pool grown in place, its blocks kept.
//   - FreeMemory: the free memory of the device a backend computes on
//     (a GPU), by which the runner sizes a pool's growth.
//   - LayerKVCacher: a K/V pool for some of the model's layers (a layer
//     group's), placed with those layers by a backend that places layers
//     (place.Split).
//   - RepackedWeight, of a weight Tensor: the backend holds its own copy,
//     so the loader releases the file's pages (models/arch).
//
// gpu knows nothing of block allocation: the block tables it reads come
// from paged/ through the runner, as plain block IDs.
package gpu
