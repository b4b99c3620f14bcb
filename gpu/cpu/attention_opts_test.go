package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// TestAttentionOptions checks sliding windows (causal and symmetric),
// soft-capping and bidirectional attention against the float64 reference,
// at every SIMD level (the options run through the Go kernel, which must
// take them whatever the level), with the block-table entries that fall
// wholly before the window set to -1: a kernel that read one would panic
// or read another sequence's K/V.
func TestAttentionOptions(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	seqs := []seqShape{{0, 1}, {0, 23}, {37, 1}, {70, 5}, {5, 2}}
	opts := []gpu.AttnOpts{
		{Window: 1}, {Window: 3}, {Window: 8}, {Window: 16}, {Window: 200},
		{SoftCap: 0.5}, {SoftCap: 50}, {Window: 5, SoftCap: 2},
		{Bidirectional: true}, {Bidirectional: true, Window: 6}, {Bidirectional: true, SoftCap: 1},
	}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32} {
			for _, bs := range []int{1, 4, 16} {
				for _, o := range opts {
					name := fmt.Sprintf("%v/%v/block%d/%+v", l, typ, bs, o)
					t.Run(name, func(t *testing.T) {
						c := newAttnCase(t, b, r, typ, bs, 2, 2, 12, seqs, false)
						c.opts = o
						c.run(t, b)
						want := c.want()
						forgetBeforeWindow(&c.batch, o)
						q := newAct(t, b, c.batch.Rows(), c.heads*c.spec.HeadDim, c.q)
						out := newAct(t, b, c.batch.Rows(), c.heads*c.spec.HeadDim, nil)
						b.Attention(out, q, c.cache, c.layer, &c.batch, c.attnOpts())
						checkErr(t, "Attention", download(b, c.output), want, attnTol(l, typ))
						checkErr(t, "Attention without the blocks before the window", download(b, out), want, attnTol(l, typ))
					})
				}
			}
		}
	}
}

// forgetBeforeWindow sets to -1 every block-table entry that no row of its
// sequence reads under o.
func forgetBeforeWindow(b *gpu.Batch, o gpu.AttnOpts) {
	for i, s := range b.Seqs {
		first, _ := o.Span(s.Pos, s.Pos+s.Len-1)
		blocks := append([]int32(nil), s.Blocks...)
		for j := range first / b.BlockSize {
			blocks[j] = -1
		}
		b.Seqs[i].Blocks = blocks
	}
}

// TestAttnOptsSpan: which options are plain (the SIMD kernels' causal
// attention), and the positions a row reads under each.
func TestAttnOptsSpan(t *testing.T) {
	if !(gpu.AttnOpts{Scale: 0.3}).Plain() || (gpu.AttnOpts{Window: 1}).Plain() ||
		(gpu.AttnOpts{SoftCap: 1}).Plain() || (gpu.AttnOpts{Bidirectional: true}).Plain() {
		t.Fatal("Plain misreports")
	}
	for _, tc := range []struct {
		o           gpu.AttnOpts
		p, end      int
		first, last int
	}{
		{gpu.AttnOpts{}, 7, 9, 0, 7},
		{gpu.AttnOpts{Window: 3}, 7, 9, 5, 7},
		{gpu.AttnOpts{Window: 30}, 7, 9, 0, 7},
		{gpu.AttnOpts{Bidirectional: true}, 7, 9, 0, 9},
		{gpu.AttnOpts{Bidirectional: true, Window: 4}, 7, 20, 5, 9},
		{gpu.AttnOpts{Bidirectional: true, Window: 4}, 1, 2, 0, 2},
	} {
		if f, l := tc.o.Span(tc.p, tc.end); f != tc.first || l != tc.last {
			t.Errorf("%+v.Span(%d, %d) = %d, %d; want %d, %d", tc.o, tc.p, tc.end, f, l, tc.first, tc.last)
		}
	}
}

// TestAttentionSinks checks attention sinks (a logit per query head in
// the softmax's denominator, gpt-oss) against the float64 reference at
// every SIMD level, causal, in a window and soft-capped, sinks small and
// large enough to take most of the probability; the reference without
// them must be far off (the sinks are seen).
func TestAttentionSinks(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	seqs := []seqShape{{0, 1}, {0, 23}, {37, 1}, {70, 5}}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeF32} {
			for _, o := range []gpu.AttnOpts{{}, {Window: 8}, {SoftCap: 3}} {
				for _, scale := range []float64{2, 12} {
					t.Run(fmt.Sprintf("%v/%v/%+v/sinks±%g", l, typ, o, scale), func(t *testing.T) {
						c := newAttnCase(t, b, r, typ, 4, 2, 3, 16, seqs, false)
						c.sinks = randFloats(r, c.heads, scale)
						sb := gpu.QuantizeRows(gguf.TypeF32, 1, c.heads, c.sinks)
						c.opts = o
						c.opts.Sinks = newWeight(t, b, gguf.TypeF32, 1, c.heads, sb)
						c.run(t, b)
						checkErr(t, "Attention with sinks", download(b, c.output), c.want(), attnTol(l, typ))
						plain := c.sinks
						c.sinks = nil
						if normErr(download(b, c.output), c.want()) < max(100*attentionTol, 10*attnTol(l, typ)) {
							t.Errorf("the sinks ±%g change nothing the check can see", scale)
						}
						c.sinks = plain
					})
				}
			}
		}
	}
}
