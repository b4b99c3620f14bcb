package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// phi3: Phi-3, 3.5 and 4, Phi-4-mini. llama's layer with Q, K and V in
// one weight (attn_qkv: rows q | k | v) and the SwiGLU's gate and up in
// another (ffn_up: rows gate | up), rope over split halves (neox) of the
// leading rope.dimension_count elements of each head, and longrope:
// per-pair factors, short or long by the context the model runs at, and
// cos and sin scaled by rope.scaling.attn_factor (read for every
// architecture).
//
// A phi3 file's attention.sliding_window is read by no one: llama.cpp
// runs phi3 with full attention whatever it says, and so does folio.
func newPhi3Block(ld *loader, c *Config, i int) block {
	name := func(t string) string { return fmt.Sprintf("blk.%d.%s.weight", i, t) }
	q, kv := c.QDim(), c.KVDim()
	b := &llamaBlock{
		attnNorm: ld.weight(name("attn_norm"), 1, c.Dim),
		wo:       ld.weight(name("attn_output"), c.Dim, q),
		ffnNorm:  ld.weight(name("ffn_norm"), 1, c.Dim),
		gate:     ld.weightPart(name("ffn_up"), 0, c.FFN, 2*c.FFN, c.Dim),     // [FFN, Dim]
		up:       ld.weightPart(name("ffn_up"), c.FFN, c.FFN, 2*c.FFN, c.Dim), // [FFN, Dim]
		down:     ld.weight(name("ffn_down"), c.Dim, c.FFN),
	}
	ld.releaseRepacked(name("ffn_up"), []gpu.Tensor{b.gate, b.up})
	if _, fused := ld.f.Tensor(name("attn_qkv")); fused {
		b.wq = ld.weightPart(name("attn_qkv"), 0, q, q+2*kv, c.Dim)     // [QDim, Dim]
		b.wk = ld.weightPart(name("attn_qkv"), q, kv, q+2*kv, c.Dim)    // [KVDim, Dim]
		b.wv = ld.weightPart(name("attn_qkv"), q+kv, kv, q+2*kv, c.Dim) // [KVDim, Dim]
		ld.releaseRepacked(name("attn_qkv"), []gpu.Tensor{b.wq, b.wk, b.wv})
	} else {
		b.wq = ld.weight(name("attn_q"), q, c.Dim)
		b.wk = ld.weight(name("attn_k"), kv, c.Dim)
		b.wv = ld.weight(name("attn_v"), kv, c.Dim)
	}
	return b
}

// readPhi3 reads longrope's factors when the file has them:
// rope_factors_short in Rope.Factors, rope_factors_long in LongFactors,
// and the context that separates them, rope.scaling.original_context_length
// (else the training context, as llama.cpp defaults it).
func readPhi3(f *gguf.File, p string, c *Config) error {
	long, err := ropeFactors(f, "rope_factors_long.weight", c.Rope.Dims/2)
	if err != nil {
		return err
	}
	short, err := ropeFactors(f, "rope_factors_short.weight", c.Rope.Dims/2)
	if err != nil {
		return err
	}
	if long == nil && short == nil {
		return nil
	}
	if long == nil || short == nil {
		return fmt.Errorf("the file has only one of rope_factors_long and rope_factors_short; longrope needs both")
	}
	c.Rope.Factors, c.LongFactors = short, long
	c.OrigContext = c.Context
	if v, ok := f.Int(p + "rope.scaling.original_context_length"); ok {
		if v <= 0 || v > 1<<24 {
			return fmt.Errorf("%srope.scaling.original_context_length = %d is out of range", p, v)
		}
		c.OrigContext = int(v)
	}
	return nil
}

// ropeFactors reads the F32 vector name of n positive factors; nil when
// the file has no such tensor.
func ropeFactors(f *gguf.File, name string, n int) ([]float32, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, nil
	}
	if t.Type != gguf.TypeF32 || len(t.Shape) != 1 || t.Elements() != int64(n) {
		return nil, fmt.Errorf("%s is %v of shape %v; want F32 with %d elements (half the rotated dims)", name, t.Type, t.Shape, n)
	}
	out := make([]float32, n)
	if err := gguf.Dequantize(gguf.TypeF32, f.TensorData(t), out); err != nil {
		return nil, err
	}
	for i, v := range out {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s[%d] = %v; every factor must be a positive number", name, i, v)
		}
	}
	return out, nil
}
