package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// A decode step of one sequence over one K/V head is one unit of tiles ×
// K/V heads; with more threads its query heads are split in runs
// (headParts), each reading the K/V again. Each query's attention is bit
// for bit what one thread makes of the whole group, at every level and
// K/V type, over several blocks of the online softmax, with a window, a
// soft-cap and sinks: DeepSeek's latent (16 heads of 576) and Gemma 3
// 1B's shape (4 of 256).
func TestAttentionHeadParts(t *testing.T) {
	for _, c := range []struct{ group, units, threads, want int }{{16, 1, 4, 4}, {6, 1, 4, 6}, {8, 2, 2, 1}, {1, 1, 2, 1}, {16, 1, 2, 2}} {
		if got := headParts(c.group, c.units, c.threads); got != c.want {
			t.Errorf("headParts(%d heads, %d units, %d threads) = %d, want %d", c.group, c.units, c.threads, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(61, 62))
	const n, bs = 200, 16
	blocks := []int32{9, 3, 12, 0, 7, 1, 11, 4, 2, 10, 5, 8, 6}
	slots := make([]int32, n)
	for p := range slots {
		slots[p] = blocks[p/bs]*int32(bs) + int32(p%bs)
	}
	one, many := New(1), New(4)
	defer one.Close()
	defer many.Close()
	for _, sh := range []struct{ g, hd int }{{16, 576}, {4, 256}} {
		kf, vf := randFloats(r, n*sh.hd, 1), randFloats(r, n*sh.hd, 1)
		qf, sinks := randFloats(r, sh.g*sh.hd, 4), randFloats(r, sh.g, 4)
		for _, l := range supportedLevels() {
			for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
				for _, o := range []gpu.AttnOpts{{Scale: 0.07}, {Scale: 0.07, Window: 61}, {Scale: 0.07, SoftCap: 5}, {Scale: 0.07, Window: -1}} {
					var outs [2][]float32
					for i, b := range []*Backend{one, many} {
						b.k = kernelsAt(l)
						o := o
						if o.Window < 0 { // the sinks' case
							o.Window = 0
							o.Sinks = newWeight(t, b, gguf.TypeF32, 1, sh.g, gpu.QuantizeRows(gguf.TypeF32, 1, sh.g, sinks))
						}
						c, err := b.NewKVCache(gpu.KVSpec{Layers: 1, Blocks: len(blocks), BlockSize: bs, KVHeads: 1, HeadDim: sh.hd, Type: typ})
						if err != nil {
							t.Fatal(err)
						}
						b.WriteKV(c, 0, newAct(t, b, n, sh.hd, kf), newAct(t, b, n, sh.hd, vf), slots)
						dst := newAct(t, b, 1, sh.g*sh.hd, nil)
						step := gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Start: 0, Len: 1, Pos: n - 1, Blocks: blocks}}}
						b.Attention(dst, newAct(t, b, 1, sh.g*sh.hd, qf), c, 0, &step, o)
						outs[i] = download(b, dst)
					}
					for i := range outs[0] {
						if outs[0][i] != outs[1][i] {
							t.Fatalf("%v %v, %d heads of %d, %+v: element %d is %v on 4 threads, %v on 1",
								l, typ, sh.g, sh.hd, o, i, outs[1][i], outs[0][i])
						}
					}
				}
			}
		}
	}
}

// TestAttentionWideHeads: heads of 256 and 512 (Gemma 3's and Gemma 4's
// windowed and global layers) at every level and K/V type against the
// float64 reference, through prefill and decode shapes.
func TestAttentionWideHeads(t *testing.T) {
	r := rand.New(rand.NewPCG(63, 64))
	seqs := []seqShape{{0, 19}, {37, 1}, {70, 5}}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
			for _, hd := range []int{256, 512} {
				for _, group := range []int{1, 4} {
					c := newAttnCase(t, b, r, typ, 16, 2, group, hd, seqs, false)
					checkErr(t, fmt.Sprintf("%v/%v/gqa%d/hd%d", l, typ, group, hd), download(b, c.output), c.want(), attnTol(l, typ))
				}
			}
		}
	}
}
