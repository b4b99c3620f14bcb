// Package vulkan computes on a GPU through Vulkan, with no Vulkan at build
// time: the loader (libvulkan.so.1) is opened at run time with purego, so
// one folio binary starts on machines without it; there Open and Probe
// return ErrNoLoader and folio computes on the CPU.
//
// Open makes an instance (Vulkan 1.1 or later), picks a physical device
// (discrete GPUs first, or the one Options.Device names: FOLIO_VULKAN_DEVICE),
// and makes a logical device with one compute queue. Every VkResult that is
// an error becomes an Error naming the call and the result.
//
// Memory: each tensor is a storage buffer with memory of its own. On a
// device whose memory is the host's (an integrated GPU, Mesa's lavapipe)
// that memory is device-local, host-visible and coherent, and mapped;
// elsewhere it is device-local, and data passes through a host-visible
// staging buffer. Uploads and downloads are copies recorded in queue
// order, so they see the ops before them.
//
// Kernels are GLSL compute shaders in shaders/, compiled to SPIR-V by
// glslc through go generate (shaders/build.sh); the .spv files are
// committed and embedded. Each has a descriptor set of storage buffers
// and a 128-byte push-constant block. Ops are recorded into one command
// buffer, each followed by a full memory barrier, and submitted when the
// host needs a result (stream.go).
//
// Reductions across a workgroup (the matmul kernels' sum of their
// invocations' shares, RMSNorm, LayerNorm and Softmax) have two variants:
// in shared memory, and with subgroup operations (subgroupAdd,
// subgroupMax, then one shared-memory step across the subgroups;
// shaders/NAME_sg.spv). Open reads the device's subgroup properties
// (Device.SubgroupSize, SubgroupArithmetic) and makes each such kernel's
// pipeline of the subgroup variant when compute shaders have subgroup
// arithmetic and the subgroup size, 4 or more, divides the kernel's
// workgroup; Options.NoSubgroups keeps the shared-memory ones.
//
// Structs handed to Vulkan are Go structs laid out as the C headers lay
// them out (vk.go, checked in vk_test.go), pinned with runtime.Pinner for
// the call that passes them.
//
// Backend is a gpu.Backend: Add, RMSNorm, SiLUMul, Softmax, Rope (angles
// computed on the host by gpu.Rope.Angles and uploaded), Gather, Scale,
// Softcap, GELUMul, SwiGLUOAI, SigmoidMul, LayerNorm, Gemma 3n's row ops
// (MixRows, MatchNorm, MulRow, SparsifyRows), MatMul and Embed of F32, F16,
// Q8_0, Q4_0, Q4_K, Q5_K, Q6_K and MXFP4 weights with the dequantization
// inside the kernel, the paged K/V pool (F16 or F32, laid out as
// gpu/cpu's) with WriteKV, CopyBlocks and gpu.BlockIO, and paged attention
// through block tables with every AttnOpts option. Weights of the other
// types models/gguf decodes (BF16, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K) are
// decoded to F32 at upload (WeightBytes counts them so); a type it cannot
// decode is refused with gpu.ErrUnsupported.
//
// Kind is Vulkan for gpu/place: FOLIO_GPU=vulkan selects it, and
// FOLIO_GPU=auto after CUDA, declining a device that is the CPU itself
// (lavapipe) unless FOLIO_VULKAN_DEVICE names it.
//
// A Backend is used by one goroutine at a time (gpu.Backend's rule).
package vulkan
