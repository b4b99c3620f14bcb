package cpu

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// go test -bench . -run ^$ ./gpu/cpu: one kernel per weight type, size
// and SIMD level. MatMul reports weight throughput (the bytes of w read
// per second); n=1 is a decode step, n=64 a tile of a prefill.

func BenchmarkMatMul(b *testing.B) {
	for _, l := range supportedLevels() {
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeMXFP4} {
			for _, n := range []int{1, 64} {
				const k, m = 4096, 4096
				b.Run(fmt.Sprintf("%v/%v/n=%d/%dx%d", l, typ, n, m, k), func(b *testing.B) {
					if _, ok := kernelFor(typ, l); !ok && l != levelScalar {
						b.Skip("no kernel at this level")
					}
					be := New(0)
					defer be.Close()
					be.k = kernelsAt(l)
					r := rand.New(rand.NewPCG(1, 1))
					data, _ := quantWeight(b, r, typ, m, k)
					w := newWeight(b, be, typ, m, k, data)
					x := newAct(b, be, n, k, randFloats(r, n*k, 1))
					dst := newAct(b, be, n, m, nil)
					b.SetBytes(int64(len(data)))
					for b.Loop() {
						be.MatMul(dst, x, w)
					}
				})
			}
		}
	}
}

// BenchmarkAttentionDecode is one decode step: at context 4096 with 32
// query heads over 8 K/V heads of 128 (Llama-3-8B's shape) for one
// sequence, and at contexts 64 … 2048 with 9 over 3 of 64 (smollm-135m's)
// for one sequence and for a batch of 16 (a serving step, ns/op for all
// 16); blocks of 16, each sequence's shuffled over the pool. With
// layers=30 each op attends the next of 30 layers, so that, as in a
// forward pass, its K/V were last read 29 layers ago and come from L3 or
// memory rather than L2.
func BenchmarkAttentionDecode(b *testing.B) {
	shapes := []struct{ ctx, kvHeads, heads, hd, seqs, layers int }{
		{4096, 8, 32, 128, 1, 1},
		{64, 3, 9, 64, 1, 1}, {64, 3, 9, 64, 16, 1}, {128, 3, 9, 64, 16, 1}, {256, 3, 9, 64, 16, 1},
		{64, 3, 9, 64, 16, 30}, {256, 3, 9, 64, 16, 30}, {1024, 3, 9, 64, 16, 30}, {2048, 3, 9, 64, 1, 30},
		{256, 4, 16, 128, 16, 24}, // qwen3moe-mini served 16 at a time
	}
	for _, l := range supportedLevels() {
		for _, sh := range shapes {
			for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
				name := fmt.Sprintf("%v/ctx=%d/%v", l, sh.ctx, typ)
				if sh.seqs > 1 {
					name = fmt.Sprintf("%v/ctx=%d/seqs=%d/%v", l, sh.ctx, sh.seqs, typ)
				}
				if sh.layers > 1 {
					name = fmt.Sprintf("%v/ctx=%d/seqs=%d/layers=%d/%v", l, sh.ctx, sh.seqs, sh.layers, typ)
				}
				b.Run(name, func(b *testing.B) {
					const bs = 16
					ctx, kvHeads, heads, hd, seqs := sh.ctx, sh.kvHeads, sh.heads, sh.hd, sh.seqs
					be := New(0)
					defer be.Close()
					be.k = kernelsAt(l)
					per := ctx / bs // blocks per sequence
					spec := gpu.KVSpec{Layers: sh.layers, Blocks: seqs * per, BlockSize: bs, KVHeads: kvHeads, HeadDim: hd, Type: typ}
					c, err := be.NewKVCache(spec)
					if err != nil {
						b.Fatal(err)
					}
					r := rand.New(rand.NewPCG(2, 2))
					pool := r.Perm(spec.Blocks)
					batch := gpu.Batch{BlockSize: bs}
					slots := make([]int32, 0, seqs*ctx)
					for i := range seqs {
						blocks := make([]int32, per)
						for j := range blocks {
							blocks[j] = int32(pool[i*per+j])
						}
						batch.Seqs = append(batch.Seqs, gpu.Seq{Start: i, Len: 1, Pos: ctx - 1, Blocks: blocks})
						for p := range ctx {
							slots = append(slots, blocks[p/bs]*bs+int32(p%bs))
						}
					}
					kv := randFloats(r, seqs*ctx*kvHeads*hd, 1)
					k := newAct(b, be, seqs*ctx, kvHeads*hd, kv)
					for layer := range sh.layers {
						be.WriteKV(c, layer, k, k, slots)
					}
					q := newAct(b, be, seqs, heads*hd, randFloats(r, seqs*heads*hd, 1))
					dst := newAct(b, be, seqs, heads*hd, nil)
					layer := 0
					for b.Loop() {
						be.Attention(dst, q, c, layer, &batch, gpu.AttnOpts{Scale: 0.088})
						layer = (layer + 1) % sh.layers
					}
				})
			}
		}
	}
}

// BenchmarkKernel times one SIMD matmul kernel on one thread: a cgo call
// over a 1024 × k weight and n activation rows (n=1: a decode step; 64: a
// prefill tile), as GMAC/s and weight bytes per second.
func BenchmarkKernel(b *testing.B) {
	types := maps.Clone(kernelTypes)
	maps.Copy(types, packedOnlyTypes)
	for _, l := range supportedLevels()[1:] {
		for kind, typ := range types {
			for _, n := range []int{1, 4, 16, 64} {
				for _, k := range []int{576, 2048} {
					if k%typ.BlockSize() != 0 {
						continue
					}
					for _, packed := range []bool{false, true} {
						if _, ok := packedKind(typ, l); packed && !ok || !packed && packedOnlyTypes[kind] == typ || !kindAt(kind, l) {
							continue
						}
						name := fmt.Sprintf("%v/%v/n=%d/k=%d", l, typ, n, k)
						if packed {
							name = fmt.Sprintf("%v/%v-packed/n=%d/k=%d", l, kindName(kind, typ), n, k)
						}
						b.Run(name, func(b *testing.B) { benchKernel(b, l, kind, typ, n, k, packed) })
					}
				}
			}
		}
	}
}

// benchKernel times one matmul kernel of kind (packed or in place) at
// level l on one thread: a cgo call over a 1024 × k weight of typ and n
// activation rows, as GMAC/s and weight bytes per second.
func benchKernel(b *testing.B, l simdLevel, kind kernelKind, typ gguf.TensorType, n, k int, packed bool) {
	const m = 1024
	r := rand.New(rand.NewPCG(1, 1))
	data, _ := quantWeight(b, r, typ, m, k)
	stride := xRowBytes(kind, k)
	xq := alignedBytes(n * stride)
	quantizeX(kind, randFloats(r, n*k, 1), k, n, k, xq, stride)
	dst := make([]float32, n*m)
	b.SetBytes(int64(len(data)))
	if packed {
		be := New(1)
		defer be.Close()
		be.k = kernelsAt(l)
		p := newWeight(b, be, typ, m, k, data).(*Tensor).packed
		b.ResetTimer()
		for b.Loop() {
			matmulPackedX(kind, l, p.data, p.group, p.blocks, m, xq, stride, n, k, dst, m)
		}
	} else {
		for b.Loop() {
			matmulX(kind, l, data, len(data)/m, m, xq, stride, n, k, dst, m)
		}
	}
	b.ReportMetric(float64(b.N)*float64(n*m*k)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

// BenchmarkEmbed times Embed of 512 token ids (a prefill's) from a
// 4096 × 2048 table on one thread: in place (F32, and the GGUF bytes of a
// lookup-only weight) or decoded from a repacked copy (unpack.go), as
// rows a second.
func BenchmarkEmbed(b *testing.B) {
	const rows, cols, n = 4096, 2048, 512
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeQ4_K, gguf.TypeQ6_K} {
		for _, lookup := range []bool{true, false} {
			b.Run(fmt.Sprintf("%v/lookup=%v", typ, lookup), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				data, _ := quantWeight(b, r, typ, rows, cols)
				be := New(1)
				defer be.Close()
				weight := be.Weight
				if lookup {
					weight = be.LookupWeight
				}
				w, err := weight("table", typ, rows, cols, data)
				if err != nil {
					b.Fatal(err)
				}
				ids := make([]int32, n)
				for i := range ids {
					ids[i] = int32(r.IntN(rows))
				}
				dst := newAct(b, be, n, cols, nil)
				for b.Loop() {
					be.Embed(dst, w, ids)
				}
				b.ReportMetric(float64(b.N)*n/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkRepack times Weight's repacking of an 8192 × 2048 weight on the
// machine's threads, as weight bytes per second.
func BenchmarkRepack(b *testing.B) {
	for _, typ := range []gguf.TensorType{gguf.TypeQ4_0, gguf.TypeQ4_K} {
		b.Run(typ.String(), func(b *testing.B) {
			if _, ok := packedKind(typ, bestLevel); !ok {
				b.Skip("no packed kernels on this machine")
			}
			const m, k = 8192, 2048
			be := New(0)
			defer be.Close()
			data, _ := quantWeight(b, rand.New(rand.NewPCG(3, 3)), typ, m, k)
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				newWeight(b, be, typ, m, k, data)
			}
		})
	}
}

// BenchmarkStepMatMuls is the MatMuls of one decode step of smollm-135m
// (30 layers of Q8_0 weights, each layer's own, and the output), n rows,
// with Q, K, V and gate, up as one MatMul each ("separate", x quantized
// once per group all the same) or one MatMuls per group ("multi").
func BenchmarkStepMatMuls(b *testing.B) {
	const dim, kv, ffn, layers, vocab = 576, 192, 1536, 30, 49152
	groups := [][][2]int{{{dim, dim}, {kv, dim}, {kv, dim}}, {{dim, dim}}, {{ffn, dim}, {ffn, dim}}, {{dim, ffn}}}
	for _, multi := range []bool{false, true} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("multi=%v/n=%d", multi, n), func(b *testing.B) {
				be := New(0)
				defer be.Close()
				r := rand.New(rand.NewPCG(1, 1))
				type op struct {
					x      gpu.Tensor
					ws, ds []gpu.Tensor
				}
				var ops []op
				bytes := 0
				add := func(shapes [][2]int) {
					o := op{x: newAct(b, be, n, shapes[0][1], randFloats(r, n*shapes[0][1], 1))}
					for _, s := range shapes {
						data, _ := quantWeight(b, r, gguf.TypeQ8_0, s[0], s[1])
						bytes += len(data)
						o.ws = append(o.ws, newWeight(b, be, gguf.TypeQ8_0, s[0], s[1], data))
						o.ds = append(o.ds, newAct(b, be, n, s[0], nil))
					}
					ops = append(ops, o)
				}
				for range layers {
					for _, g := range groups {
						add(g)
					}
				}
				add([][2]int{{vocab, dim}})
				b.SetBytes(int64(bytes))
				for b.Loop() {
					for _, o := range ops {
						if multi {
							be.MatMuls(o.ds, o.x, o.ws)
							continue
						}
						for i := range o.ws {
							be.MatMul(o.ds[i], o.x, o.ws[i])
						}
					}
				}
			})
		}
	}
}
