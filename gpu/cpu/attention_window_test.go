package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// windowOpts are the causal options the SIMD kernels take: windows shorter
// than a tile, than a block, than a decode tile of 16 and longer than the
// context, soft-caps tight and loose, and both together (Gemma 2's).
var windowOpts = []gpu.AttnOpts{
	{Window: 1}, {Window: 5}, {Window: 16}, {Window: 23}, {Window: 500},
	{SoftCap: 0.7}, {SoftCap: 50}, {Window: 9, SoftCap: 5},
}

// TestAttentionWindowSIMDMatchesGo compares the SIMD kernels with the Go
// kernel under windows and soft-caps (and checks that Attention takes the
// SIMD kernels for them), over the shapes each SIMD path
// takes (decode rows of up to 8 query heads, tiles of rows, Gemma's head
// size of 256) and every K/V type, the block-table entries before the
// windows set to -1.
func TestAttentionWindowSIMDMatchesGo(t *testing.T) {
	if len(supportedLevels()) < 2 {
		t.Skip("no SIMD level on this machine")
	}
	r := rand.New(rand.NewPCG(51, 52))
	seqs := []seqShape{{0, 1}, {0, 37}, {44, 1}, {70, 6}, {19, 2}}
	goB := newTestBackend(t)
	goB.k = kernelsAt(levelScalar)
	for _, l := range supportedLevels()[1:] {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32, gguf.TypeQ8_0} {
			for _, sh := range []struct{ bs, group, hd int }{{4, 1, 32}, {16, 4, 256}, {8, 9, 64}} {
				for _, o := range windowOpts {
					name := fmt.Sprintf("%v/%v/block%d/group%d/hd%d/%+v", l, typ, sh.bs, sh.group, sh.hd, o)
					t.Run(name, func(t *testing.T) {
						c := newAttnCase(t, b, r, typ, sh.bs, 2, sh.group, sh.hd, seqs, false)
						c.opts = o
						got := attendForgetting(t, b, c, true)
						ref := attendForgetting(t, goB, c, false)
						if routed := attendForgetting(t, b, c, false); !slices.Equal(routed, got) {
							t.Errorf("Attention at %v is not the SIMD kernel's under %+v", l, o)
						}
						want := make([]float64, len(ref))
						for i, v := range ref {
							want[i] = float64(v)
						}
						checkErr(t, "SIMD against Go", got, want, attnTol(l, typ))
						checkErr(t, "SIMD against float64", got, c.want(), attnTol(l, typ))
					})
				}
			}
		}
	}
}

// attendForgetting writes c's K/V on be and returns its attention with
// the block-table entries before the windows set to -1: through
// Attention, or with simd straight through the SIMD kernels.
func attendForgetting(t *testing.T, be *Backend, c *attnCase, simd bool) []float32 {
	t.Helper()
	c.run(t, be)
	batch := c.batch
	batch.Seqs = append([]gpu.Seq(nil), c.batch.Seqs...)
	forgetBeforeWindow(&batch, c.opts)
	q := newAct(t, be, batch.Rows(), c.heads*c.spec.HeadDim, c.q)
	out := newAct(t, be, batch.Rows(), c.heads*c.spec.HeadDim, nil)
	if simd {
		cc, cq := be.kv(c.cache), be.tensor(q)
		_, maxCtx, _ := be.attnRows(out, q, cc, c.layer, &batch, c.attnOpts())
		be.attentionSIMD(be.act(out), cq.f32, cq.cols, cc, c.layer, &batch, c.attnOpts(), maxCtx)
	} else {
		be.Attention(out, q, c.cache, c.layer, &batch, c.attnOpts())
	}
	return download(be, out)
}

// TestAttentionWindowReadsNoBlockBefore points the block-table entries
// wholly before every row's window at a block of NaN K and V: a kernel
// that read a row of it (a V row, even times a probability of 0) would
// return NaN. The Go kernel and every SIMD level, prefill and decode.
func TestAttentionWindowReadsNoBlockBefore(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, l := range supportedLevels() {
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32} {
			for _, o := range []gpu.AttnOpts{{Window: 3}, {Window: 16}, {Window: 21, SoftCap: 4}} {
				t.Run(fmt.Sprintf("%v/%v/%+v", l, typ, o), func(t *testing.T) {
					b := newTestBackend(t)
					b.k = kernelsAt(l)
					c := newAttnCase(t, b, r, typ, 4, 2, 3, 64, []seqShape{{0, 40}, {61, 1}, {33, 9}}, false)
					c.opts = o
					c.run(t, b)
					want := c.want()
					// The poison block: one more block at the end of the pool.
					c.spec.Blocks++
					poison := int32(c.spec.Blocks - 1)
					c.run(t, b)
					w := c.spec.KVHeads * c.spec.HeadDim
					nan := make([]float32, c.spec.BlockSize*w)
					for i := range nan {
						nan[i] = float32(math.NaN())
					}
					slots := make([]int32, c.spec.BlockSize)
					for i := range slots {
						slots[i] = poison*int32(c.spec.BlockSize) + int32(i)
					}
					b.WriteKV(c.cache, c.layer, newAct(t, b, len(slots), w, nan), newAct(t, b, len(slots), w, nan), slots)
					for i, s := range c.batch.Seqs {
						first, _ := o.Span(s.Pos, s.Pos+s.Len-1)
						blocks := append([]int32(nil), s.Blocks...)
						for j := range first / c.spec.BlockSize {
							blocks[j] = poison
						}
						c.batch.Seqs[i].Blocks = blocks
					}
					q := newAct(t, b, c.batch.Rows(), c.heads*c.spec.HeadDim, c.q)
					out := newAct(t, b, c.batch.Rows(), c.heads*c.spec.HeadDim, nil)
					b.Attention(out, q, c.cache, c.layer, &c.batch, c.attnOpts())
					checkErr(t, "Attention with NaN blocks before the window", download(b, out), want, attnTol(l, typ))
				})
			}
		}
	}
}

// A windowed or soft-capped token's attention is the same decoded alone
// as in its prompt (the SIMD decode path against the tiles of rows), and
// the thread count changes none of it.
func TestAttentionWindowDecodeEqualsPrefill(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	const n, kvh = 45, 2
	blocks := []int32{3, 1, 5, 0, 2, 4, 6, 7, 8, 9, 10, 11}
	for _, sh := range []struct{ g, hd, bs int }{{4, 256, 16}, {3, 64, 8}, {1, 32, 4}} {
		slots := make([]int32, n)
		for p := range slots {
			slots[p] = blocks[p/sh.bs]*int32(sh.bs) + int32(p%sh.bs)
		}
		kf, vf := randFloats(r, n*kvh*sh.hd, 1), randFloats(r, n*kvh*sh.hd, 1)
		qf := randFloats(r, n*kvh*sh.g*sh.hd, 4)
		for _, o := range []gpu.AttnOpts{{Window: 7}, {Window: 17}, {SoftCap: 2}, {Window: 30, SoftCap: 5}} {
			o.Scale = 0.125
			decodeEqualsPrefill(t, n, kvh, sh.g, sh.hd, sh.bs, blocks, slots, kf, vf, qf, nil, o)
		}
	}
}

func TestAttentionWindowThreadCountInvariance(t *testing.T) {
	one, many := New(1), New(16)
	defer one.Close()
	defer many.Close()
	seqs := []seqShape{{0, 30}, {40, 1}, {17, 6}}
	for _, l := range supportedLevels() {
		one.k, many.k = kernelsAt(l), kernelsAt(l)
		for _, o := range windowOpts {
			for _, group := range []int{1, 4} {
				a := newAttnCase(t, one, rand.New(rand.NewPCG(57, 58)), gguf.TypeF16, 8, 2, group, 32, seqs, false)
				b := newAttnCase(t, many, rand.New(rand.NewPCG(57, 58)), gguf.TypeF16, 8, 2, group, 32, seqs, false)
				a.opts, b.opts = o, o
				a.run(t, one)
				b.run(t, many)
				got, want := download(many, b.output), download(one, a.output)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%v Attention %+v, group %d: element %d is %v on 16 threads, %v on 1", l, o, group, i, got[i], want[i])
					}
				}
			}
		}
	}
}
