// Package cuda is gpu.Backend on an NVIDIA GPU, with no CUDA at build time.
//
// The driver (libcuda.so.1), NVRTC (libnvrtc.so*) and, where present,
// cuBLAS are opened at run time with purego, so one folio binary builds
// without CUDA headers and starts on machines without a driver; there Open
// returns ErrNoDriver and the runner computes on the CPU. Every driver call
// goes through a table of Go functions (driver, nvrtc), which tests replace
// with fakes, and every CUresult becomes an error naming the call and the
// driver's name for the code.
//
// Kernels are CUDA C in kernels/*.cu, embedded in the binary, compiled by
// NVRTC for the device's compute capability on first use and cached on
// disk (kcache.go) by a hash of the source, the options and the NVRTC and
// driver versions. Every kernel declares __launch_bounds__ equal to the
// block it is launched with, from one table (bounds.go, Kernels).
//
// Weights keep their GGUF encoding in device memory and are dequantized
// inside the matmul kernels (Q8_0, Q4_0, Q4_K, Q6_K, MXFP4, F16, F32; other types
// are converted to F32 when loaded). The K/V pool is one device
// allocation, laid out as gpu/cpu's (head-major within a block), so a
// block's bytes are already in gpu.BlockIO's canonical layout.
//
// Kind is CUDA for gpu/place, which opens the device, checks it on its
// first load and places the model: whole, or split with its first layers
// on the GPU and the rest on the CPU (place.Split), counting each weight as
// it is uploaded (NeedOf).
//
// Ops are queued on one stream in call order; Download and the BlockIO
// calls wait for it. A failing driver call inside an op panics with the
// call and the error: gpu.Backend's ops return no error, and a device that
// faults mid-pass leaves nothing to continue with.
//
// Preflight (preflight*.go) checks a machine step by step and stops at the
// first failure: the libraries loaded and every path tried, the compile
// and its log, each kernel's attributes against its launch bounds, a
// synchronized launch of every kernel, cuBLAS, and a CUDA graph.
//
// A Backend is used by one goroutine at a time (gpu.Backend's rule); each
// op locks the goroutine to its OS thread and makes the context current
// there, since a CUDA context is current per thread.
package cuda
