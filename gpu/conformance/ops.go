package conformance

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"folio/gpu"
	"folio/models/gguf"
)

// Tolerances. MatMul's reference (gpu/cpu) quantizes activations to 8 bits
// for the integer kernels, as ggml does, where the GPU multiplies in F32:
// that difference dominates. Attention and Rope differ in the order of
// sums and in expf; the rest are the same float32 steps.
const (
	tolMatMul    = 5e-4
	tolAttention = 1e-5
	tolExact     = 1e-6
	tolBits      = 0 // the same bits: F16 rounding is IEEE's on both
)

// table builds the cases: their inputs are drawn from r as each case is
// added, so a seed fixes them all.
type table struct {
	r     *rand.Rand
	cases []Case
}

func newTable(seed uint64) *table { return &table{r: rand.New(rand.NewPCG(seed, 11))} }

// Cases is the table of every op's cases on random inputs of awkward
// sizes, op by op and type by type: MatMul of each weight type, Embed,
// Gather, RMSNorm, Add, SiLUMul, Softmax, Rope, WriteKV with Attention,
// CopyBlocks and BlockIO, F16 rounding; then the ops of the families
// beyond llama (Scale, Softcap, GELUMul, LayerNorm, Rope's MScale) and
// Attention's options (sliding windows over freed blocks, soft-capping,
// bidirectional); the experts' ops of a mixture of experts.
func Cases(seed uint64) []Case {
	c := newTable(seed)
	c.matmuls()
	c.rows()
	c.elementwise()
	c.ropes()
	c.attention()
	c.halves()
	c.families()
	c.attentionOpts()
	c.experts()
	return c.cases
}

// MatMulCases is Cases's MatMul cases alone: for a second pass over
// another matmul path (cuBLAS off).
func MatMulCases(seed uint64) []Case {
	c := newTable(seed)
	c.matmuls()
	return c.cases
}

// add appends a case.
func (c *table) add(op string, tol float64, f func(be gpu.Backend) []float32) {
	c.cases = append(c.cases, Case{Op: op, Tol: tol, Run: f})
}

// vals returns n random values in [-s, s).
func (c *table) vals(n int, s float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = s * (2*c.r.Float32() - 1)
	}
	return v
}

// The tensor helpers of every backend check, under this file's short names.
var (
	act         = gpu.Activation
	read        = gpu.Values
	weightBytes = gpu.QuantizeRows
	weight      = gpu.WeightOf
)

var checkTypes = []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K, gguf.TypeQ5_K, gguf.TypeMXFP4}

// matmuls: decode (matvec) and prefill (tiled) shapes with ragged edges.
func (c *table) matmuls() {
	for _, typ := range checkTypes {
		shapes := [][3]int{{1, 256, 67}, {3, 512, 130}, {8, 256, 64}, {17, 768, 100}, {70, 512, 129}}
		if typ.BlockSize() == 1 {
			shapes = append(shapes, [3]int{5, 100, 33}, [3]int{9, 37, 10})
		}
		for _, s := range shapes {
			n, k, m := s[0], s[1], s[2]
			x, w := c.vals(n*k, 1), weightBytes(typ, m, k, c.vals(m*k, 0.5))
			c.add(fmt.Sprintf("MatMul %v [%d×%d]·[%d×%d]ᵀ", typ, n, k, m, k), tolMatMul, func(be gpu.Backend) []float32 {
				dst := act(be, n, m, make([]float32, n*m))
				be.MatMul(dst, act(be, n, k, x), weight(be, typ, m, k, w))
				return read(be, dst)
			})
		}
	}
}

// rows: Embed of every type, Gather.
func (c *table) rows() {
	for _, typ := range checkTypes {
		cols := 512
		if typ.BlockSize() == 1 {
			cols = 100
		}
		const vocab = 37
		table := weightBytes(typ, vocab, cols, c.vals(vocab*cols, 1))
		ids := []int32{3, 0, 36, 3, 17}
		c.add(fmt.Sprintf("Embed %v [%d ids of %d×%d]", typ, len(ids), vocab, cols), tolExact, func(be gpu.Backend) []float32 {
			dst := act(be, len(ids), cols, make([]float32, len(ids)*cols))
			be.Embed(dst, weight(be, typ, vocab, cols, table), ids)
			return read(be, dst)
		})
	}
	x := c.vals(9*77, 3)
	c.add("Gather [3 of 9×77]", tolExact, func(be gpu.Backend) []float32 {
		dst := act(be, 3, 77, make([]float32, 3*77))
		be.Gather(dst, act(be, 9, 77, x), []int32{8, 2, 2})
		return read(be, dst)
	})
}

// elementwise: RMSNorm (whole rows, per head, in place), Add (full and
// broadcast), SiLUMul, Softmax.
func (c *table) elementwise() {
	for _, s := range [][3]int{{3, 2048, 2048}, {5, 576, 576}, {4, 256, 64}, {2, 1000, 1000}} {
		rows, cols, g := s[0], s[1], s[2]
		x, w := c.vals(rows*cols, 2), c.vals(g, 1)
		c.add(fmt.Sprintf("RMSNorm [%d×%d] by %d", rows, cols, g), tolExact, func(be gpu.Backend) []float32 {
			xt := act(be, rows, cols, x)
			be.RMSNorm(xt, xt, weight(be, gguf.TypeF32, 1, g, weightBytes(gguf.TypeF32, 1, g, w)), 1e-5)
			return read(be, xt)
		})
	}
	a, bias, full := c.vals(7*300, 4), c.vals(300, 1), c.vals(7*300, 1)
	c.add("Add [7×300] + bias", tolExact, func(be gpu.Backend) []float32 {
		at := act(be, 7, 300, a)
		be.Add(at, at, weight(be, gguf.TypeF32, 1, 300, weightBytes(gguf.TypeF32, 1, 300, bias)))
		return read(be, at)
	})
	c.add("Add [7×300] + [7×300]", tolExact, func(be gpu.Backend) []float32 {
		dst := act(be, 7, 300, make([]float32, 7*300))
		be.Add(dst, act(be, 7, 300, a), act(be, 7, 300, full))
		return read(be, dst)
	})
	g, u := c.vals(3*1001, 8), c.vals(3*1001, 2)
	c.add("SiLUMul [3×1001]", tolExact, func(be gpu.Backend) []float32 {
		gt := act(be, 3, 1001, g)
		be.SiLUMul(gt, gt, act(be, 3, 1001, u))
		return read(be, gt)
	})
	sm := c.vals(4*1537, 20)
	c.add("Softmax [4×1537]", tolExact, func(be gpu.Backend) []float32 {
		t := act(be, 4, 1537, sm)
		be.Softmax(t)
		return read(be, t)
	})
}

// ropes: llama and NeoX pairing, partial rotation, llama3 factors, far
// positions.
func (c *table) ropes() {
	factors := make([]float32, 32)
	for i := range factors {
		factors[i] = 1 + float32(i)/4
	}
	for _, r := range []gpu.Rope{
		{HeadDim: 64, Dims: 64, Base: 10000, Scale: 1},
		{HeadDim: 128, Dims: 128, Base: 500000, Scale: 1, Neox: true},
		{HeadDim: 80, Dims: 32, Base: 10000, Scale: 0.25, Neox: true},
		{HeadDim: 64, Dims: 64, Base: 500000, Scale: 1, Factors: factors},
	} {
		heads, rows := 3, 5
		cols := heads * r.HeadDim
		x := c.vals(rows*cols, 1)
		pos := []int32{0, 1, 17, 4095, 30000}
		c.add(fmt.Sprintf("Rope dims %d of %d, neox %v, factors %v", r.Dims, r.HeadDim, r.Neox, r.Factors != nil), tolExact, func(be gpu.Backend) []float32 {
			t := act(be, rows, cols, x)
			be.Rope(t, pos, &r)
			return read(be, t)
		})
	}
}

// halves: WriteKV into an F16 pool rounds as gguf.F32ToF16 does, bit for
// bit, from subnormals to past the largest half.
func (c *table) halves() {
	spec := gpu.KVSpec{Layers: 1, Blocks: 2, BlockSize: 8, KVHeads: 2, HeadDim: 64, Type: gguf.TypeF16}
	w := spec.KVHeads * spec.HeadDim
	k, v := c.vals(8*w, 1), c.vals(8*w, 1)
	for i := range k {
		switch i % 4 {
		case 1:
			k[i] *= 1e-5 // subnormal halves
		case 2:
			k[i] *= 7e4 // near and past 65504
		case 3:
			k[i] = float32(math.Float32frombits(math.Float32bits(k[i])&^0x1fff | 0x1000)) // a tie
		}
	}
	c.add("WriteKV F16 rounding (bits)", tolBits, func(be gpu.Backend) []float32 {
		kv, err := be.NewKVCache(spec)
		if err != nil {
			panic(err)
		}
		be.WriteKV(kv, 0, act(be, 8, w, k), act(be, 8, w, v), []int32{8, 9, 10, 11, 12, 13, 14, 15})
		bio, ok := be.(gpu.BlockIO)
		if !ok {
			return nil
		}
		buf := make([]byte, spec.BlockBytes())
		bio.ReadBlock(kv, 1, buf)
		out := make([]float32, len(buf)/2)
		for i := range out { // the bits themselves, so that infinities compare
			out[i] = float32(binary.LittleEndian.Uint16(buf[2*i:]))
		}
		return out
	})
}

// decodeKV reads canonical block bytes as floats.
func decodeKV(buf []byte, typ gguf.TensorType) []float32 {
	if typ == gguf.TypeF16 {
		out := make([]float32, len(buf)/2)
		for i := range out {
			out[i] = gguf.F16ToF32(binary.LittleEndian.Uint16(buf[2*i:]))
		}
		return out
	}
	out := make([]float32, len(buf)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
	}
	return out
}
