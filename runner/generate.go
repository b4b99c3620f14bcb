package runner

import (
	"fmt"

	"folio/gpu"
)

// Logits runs ids as one sequence over the pools' first blocks (a sliding
// layer group's as a ring) and returns the last position's logits over
// the vocabulary. It uses the K/V caches directly: not while an engine
// runs on the model.
func (m *Model) Logits(ids []int32) ([]float32, error) {
	spec := m.KV.Spec()
	if len(ids) == 0 || len(ids) > spec.Tokens() {
		return nil, fmt.Errorf("runner: %d tokens: the context holds 1 to %d; raise num_ctx", len(ids), spec.Tokens())
	}
	tables, err := m.ringTables(spec.Blocks, m.Opt.NumBatch)
	if err != nil {
		return nil, err
	}
	var out gpu.Tensor
	var bufs []gpu.Batch
	for from := 0; from < len(ids); {
		n := min(len(ids)-from, m.Opt.NumBatch)
		b := &gpu.Batch{BlockSize: spec.BlockSize, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: from, Blocks: tables[0]}}}
		var err error
		if out, err = m.forwardGroups(&bufs, b, func(g, _ int) []int32 { return tables[g] }, ids[from:from+n], []int32{int32(n - 1)}, false); err != nil {
			return nil, err
		}
		from += n
	}
	logits := make([]float32, m.Arch.Vocab)
	m.Arch.Backend().Download(logits, out)
	return logits, nil
}
