package arch

import (
	"fmt"

	"folio/gpu"
)

// dense is the pair of projections some embedding models apply to the
// pooled embedding (sentence-transformers' Dense modules, which llama.cpp's
// converter writes as dense_2 and dense_3: EmbeddingGemma's 768 → 3072 →
// 768), without activation.
type dense struct {
	up   gpu.Tensor // [Feat, Dim]  dense_2
	down gpu.Tensor // [Dim, Feat]  dense_3
	in   gpu.Tensor // [1, Dim] the pooled embedding
	mid  gpu.Tensor // [1, Feat]
	out  gpu.Tensor // [1, Dim]
}

// loadDense loads dense_2 and dense_3 when the file has both; nil when it
// has neither.
func loadDense(ld *loader, c *Config) (*dense, error) {
	t2, ok2 := ld.f.Tensor("dense_2.weight")
	_, ok3 := ld.f.Tensor("dense_3.weight")
	switch {
	case !ok2 && !ok3:
		return nil, nil
	case ok2 != ok3 || len(t2.Shape) != 2:
		return nil, fmt.Errorf("%w %s: dense_2.weight and dense_3.weight come as a pair of matrices (the sentence-transformers projections)", ErrModel, ld.f.Path)
	}
	feat := c.DenseFeat // dense_2's rows (ReadConfig)
	d := &dense{up: ld.weight("dense_2.weight", feat, c.Dim), down: ld.weight("dense_3.weight", c.Dim, feat)}
	if ld.err != nil {
		return nil, ld.err
	}
	var err error
	alloc := func(cols int) gpu.Tensor {
		if err != nil {
			return nil
		}
		var t gpu.Tensor
		t, err = ld.be.NewTensor(1, cols)
		return t
	}
	d.in, d.mid, d.out = alloc(c.Dim), alloc(feat), alloc(c.Dim)
	return d, err
}

// Project applies the model's dense projections to a pooled embedding v
// of Dim values, in place; it leaves v as it is for a model without them.
func (m *Model) Project(v []float32) {
	d := m.dense
	if d == nil {
		return
	}
	m.be.Upload(d.in, v)
	m.be.MatMul(d.mid, d.in, d.up)    // mid [1, Feat]
	m.be.MatMul(d.out, d.mid, d.down) // out [1, Dim]
	m.be.Download(v, d.out)
}
