package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"folio/models/gguf"
)

// BenchmarkPackedQ8 times the AVX-512 packed Q8_0 kernel on one thread at
// the tile sizes of batched decode (n = 8 … 25: a serving step of
// smollm-135m batches 16 sequences) besides 1, 2, 4 and 64: a 1024 × k
// weight, k = 576 (smollm's dim), 1536 (its FFN) and 2048.
func BenchmarkPackedQ8(b *testing.B) {
	const l, typ = levelAVX512, gguf.TypeQ8_0
	for _, n := range []int{1, 2, 4, 8, 16, 25, 64} {
		for _, k := range []int{576, 1536, 2048} {
			b.Run(fmt.Sprintf("n=%d/k=%d", n, k), func(b *testing.B) {
				if bestLevel < l {
					b.Skip("no AVX-512 on this machine")
				}
				benchKernel(b, l, kindQ8_0, typ, n, k, true)
			})
		}
	}
}

// BenchmarkKernelStream times the kernels of a decode step where it is
// bound: one activation row against a weight far larger than the caches
// (streamMiB, k = 2048: 1024 random rows repeated), on one thread, as
// weight bytes per second; "read" is readSum over the same bytes, the
// most a kernel can stream.
func BenchmarkKernelStream(b *testing.B) {
	const streamMiB, k = 96, 2048
	for _, l := range supportedLevels()[1:] {
		for _, typ := range []gguf.TensorType{gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ4_0, gguf.TypeQ8_0, gguf.TypeIQ4_XS, gguf.TypeMXFP4} {
			kind, _ := kernelFor(typ, l)
			for _, packed := range []bool{false, true} {
				if _, ok := packedKind(typ, l); packed && !ok || !packed && packedOnlyTypes[kind] == typ {
					continue
				}
				name := fmt.Sprintf("%v/%v/packed=%v", l, typ, packed)
				b.Run(name, func(b *testing.B) {
					r := rand.New(rand.NewPCG(1, 1))
					one, _ := quantWeight(b, r, typ, 1024, k)
					m := 1024 * (streamMiB << 20 / len(one))
					data := make([]byte, 0, m/1024*len(one))
					for len(data) < cap(data) {
						data = append(data, one...)
					}
					stride := xRowBytes(kind, k)
					xq := alignedBytes(stride)
					quantizeX(kind, randFloats(r, k, 1), k, 1, k, xq, stride)
					dst := make([]float32, m)
					b.SetBytes(int64(len(data)))
					if packed {
						be := New(1)
						defer be.Close()
						be.k = kernelsAt(l)
						p := newWeight(b, be, typ, m, k, data).(*Tensor).packed
						b.ResetTimer()
						for b.Loop() {
							matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq, stride, 1, k, dst, m)
						}
						return
					}
					for b.Loop() {
						matmulX(kind, l, data, len(data)/m, m, xq, stride, 1, k, dst, m)
					}
				})
			}
		}
	}
	b.Run("read", func(b *testing.B) {
		data := make([]byte, streamMiB<<20)
		for i := range data {
			data[i] = byte(i)
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			readSum(data)
		}
	})
}

// BenchmarkPackedPrefill times the packed kernels at the tile of a
// prefill unit (64 activation rows) on one thread, at avx512 and amx
// (AMX-INT8 tiles), a 1024 × k weight: smollm's dim and FFN widths.
func BenchmarkPackedPrefill(b *testing.B) {
	for _, l := range []simdLevel{levelAVX512, levelAMX} {
		for _, typ := range []gguf.TensorType{gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K} {
			for _, k := range []int{576, 1536} {
				if typ == gguf.TypeQ4_K && k%256 != 0 {
					k = 512
				}
				b.Run(fmt.Sprintf("%v/%v/k=%d", l, typ, k), func(b *testing.B) {
					if bestLevel < l {
						b.Skipf("no %v on this machine", l)
					}
					kind, _ := packedKind(typ, l)
					benchKernel(b, l, kind, typ, 64, k, true)
				})
			}
		}
	}
}
