package runner

import (
	"context"
	"fmt"

	"folio/gpu"
)

// GenerateOptions are the options of one in-process generation.
type GenerateOptions struct {
	Sample     SampleOptions
	NumPredict int // tokens to generate at most; ≤ 0: until an end token or the context is full
	Stop       []string
}

// Generate continues prompt (token ids; empty means BOS alone) and calls
// emit with each piece of complete text as it is generated: one request on
// an engine of its own, for `folio run`.
func (m *Model) Generate(ctx context.Context, prompt []int32, opt GenerateOptions, emit func(text string) error) (Stats, error) {
	e, err := NewEngine(m, EngineOptions{})
	if err != nil {
		return Stats{}, err
	}
	defer e.Close()
	st, err := e.Submit(ctx, Request{Prompt: prompt, Sample: opt.Sample, NumPredict: opt.NumPredict, Stop: opt.Stop})
	if err != nil {
		return Stats{}, err
	}
	defer st.Cancel()
	for {
		ev, ok := st.Recv(ctx)
		if !ok {
			return Stats{}, ctx.Err()
		}
		if ev.Text != "" {
			if err := emit(ev.Text); err != nil {
				return Stats{}, err
			}
		}
		if ev.Done {
			if ev.Err != nil {
				return Stats{}, ev.Err
			}
			return *ev.Stats, nil
		}
	}
}

// Logits runs ids as one sequence over the pool's first blocks and returns
// the last position's logits over the vocabulary. It uses the K/V cache
// directly: not while an engine runs on the model.
func (m *Model) Logits(ids []int32) ([]float32, error) {
	spec := m.KV.Spec()
	if len(ids) == 0 || len(ids) > spec.Blocks*spec.BlockSize {
		return nil, fmt.Errorf("runner: %d tokens: the context holds 1 to %d; raise num_ctx", len(ids), spec.Blocks*spec.BlockSize)
	}
	table := make([]int32, spec.Blocks)
	for i := range table {
		table[i] = int32(i)
	}
	var out gpu.Tensor
	for from := 0; from < len(ids); {
		n := min(len(ids)-from, m.Opt.NumBatch)
		b := &gpu.Batch{BlockSize: spec.BlockSize, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: from, Blocks: table}}}
		var err error
		if out, err = m.Arch.Forward(m.KV, b, ids[from:from+n], []int32{int32(n - 1)}); err != nil {
			return nil, err
		}
		from += n
	}
	logits := make([]float32, m.Arch.Vocab)
	m.Arch.Backend().Download(logits, out)
	return logits, nil
}
