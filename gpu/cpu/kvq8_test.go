package cpu

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"folio/gpu"
	"folio/models/gguf"
)

// element is element at of layer's K and V, decoded.
func (c *KVCache) element(layer, at int) (k, v float32) {
	switch {
	case c.k16 != nil:
		return gguf.F16ToF32(c.k16[layer][at]), gguf.F16ToF32(c.v16[layer][at])
	case c.k8 != nil:
		blk := q8Byte(at / q8Elems * q8Elems)
		kf, vf := make([]float32, q8Elems), make([]float32, q8Elems)
		q8ToF32(c.k8[layer][blk:blk+q8Bytes], kf)
		q8ToF32(c.v8[layer][blk:blk+q8Bytes], vf)
		return kf[at%q8Elems], vf[at%q8Elems]
	}
	return c.k32[layer][at], c.v32[layer][at]
}

// WriteKV into a Q8_0 cache stores each head's row as gguf.Quantize
// encodes it, at every level, in shuffled slots of blocks of 4.
func TestWriteKVQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	const heads, hd, n = 3, 64, 11
	kf, vf := randFloats(r, n*heads*hd, 3), randFloats(r, n*heads*hd, 0.01)
	kf[5], vf[70] = 0, 1e-30 // a block of one nonzero element is still exact at its largest
	// A block whose largest element is 127 has d = 1: quants of halves are
	// ties, which round away from zero (roundf), not to even.
	copy(kf[64:96], []float32{127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5, -126.5, 3.4999998, -0.49999997, 0})
	for i := range 32 { // a block of zeros
		vf[128+i] = 0
	}
	slots := make([]int32, n)
	for i, s := range r.Perm(16)[:n] {
		slots[i] = int32(s)
	}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		c, err := b.NewKVCache(gpu.KVSpec{Layers: 2, Blocks: 4, BlockSize: 4, KVHeads: heads, HeadDim: hd, Type: gguf.TypeQ8_0})
		if err != nil {
			t.Fatal(err)
		}
		b.WriteKV(c, 1, newAct(t, b, n, heads*hd, kf), newAct(t, b, n, heads*hd, vf), slots)
		cc := c.(*KVCache)
		want := make([]byte, gguf.TypeQ8_0.RowBytes(hd))
		for i := range n {
			for h := range heads {
				at := q8Byte(cc.offset(int(slots[i]), h))
				for _, x := range []struct {
					name string
					src  []float32
					dst  []byte
				}{{"K", kf, cc.k8[1]}, {"V", vf, cc.v8[1]}} {
					row := x.src[(i*heads+h)*hd:][:hd]
					if err := gguf.Quantize(gguf.TypeQ8_0, row, want); err != nil {
						t.Fatal(err)
					}
					if got := x.dst[at : at+len(want)]; !bytes.Equal(got, want) {
						t.Fatalf("%v: row %d head %d of %s stored % x, want % x", l, i, h, x.name, got[:8], want[:8])
					}
				}
			}
		}
	}
}

// Attention over a Q8_0 cache is, bit for bit, attention over an F32 cache
// holding the values the Q8_0 one decodes to, at every level: prompts,
// decode rows, heads whose size is no multiple of a decode pass's 64
// elements (96; with 5 query heads a pass is 48, so its second starts
// mid-block), grouped query heads of real models.
func TestAttentionQ8EqualsF32(t *testing.T) {
	seqs := []seqShape{{0, 1}, {0, 23}, {41, 1}, {130, 1}, {70, 6}, {9, 1}}
	for _, l := range supportedLevels() {
		b := newTestBackend(t)
		b.k = kernelsAt(l)
		for _, sh := range []struct{ bs, kvh, group, hd int }{{16, 3, 3, 64}, {8, 2, 4, 128}, {32, 1, 8, 32}, {4, 2, 1, 96}, {16, 1, 5, 96}} {
			name := fmt.Sprintf("%v/block%d/kvh%d/gqa%d/hd%d", l, sh.bs, sh.kvh, sh.group, sh.hd)
			q8 := newAttnCase(t, b, rand.New(rand.NewPCG(53, uint64(sh.hd))), gguf.TypeQ8_0, sh.bs, sh.kvh, sh.group, sh.hd, seqs, false)
			f32 := *q8
			f32.spec.Type = gguf.TypeF32
			f32.k, f32.v = nil, nil
			for i := range q8.k {
				f32.k = append(f32.k, storedKV(gguf.TypeQ8_0, q8.k[i], sh.hd))
				f32.v = append(f32.v, storedKV(gguf.TypeQ8_0, q8.v[i], sh.hd))
			}
			f32.run(t, b)
			got, want := download(b, q8.output), download(b, f32.output)
			if attnBF16(l, gguf.TypeQ8_0) { // Q8_0 takes the bfloat16 kernel, F32 the float32 one
				checkErr(t, name+" against F32", got, f32.want(), attentionTolBF16)
			} else if i := firstDiff(got, want); i >= 0 {
				t.Fatalf("%s: element %d is %v over Q8_0, %v over F32 of the same values", name, i, got[i], want[i])
			}
			checkErr(t, name, got, q8.want(), attnTol(l, gguf.TypeQ8_0))
		}
	}
}
