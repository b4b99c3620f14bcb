package runner

import (
	"context"
	"fmt"

	"folio/gpu"
	"folio/models/arch"
)

// Embed returns the embedding of ids: the final hidden states (after the
// output norm, where the model has one) pooled as the model says
// (arch.Config.Pooling: the mean, the first token's or the last token's),
// then projected where the model has dense layers (arch.Model.Project), not
// scaled (callers normalize when their API says so). It runs between
// scheduler steps on blocks of its own, which go back to the pool before
// it returns; generation requests wait for it.
func (e *Engine) Embed(ctx context.Context, ids []int32) ([]float32, error) {
	spec := e.m.KV.Spec()
	a := e.m.Arch
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("%w: nothing to embed: the input is empty", ErrRequest)
	case len(ids) > e.opt.NumCtx:
		return nil, fmt.Errorf("%w: the input has %d tokens and num_ctx is %d: shorten it, raise num_ctx, or allow truncation", ErrRequest, len(ids), e.opt.NumCtx)
	case a.Encoder && len(ids) > e.opt.NumBatch:
		return nil, fmt.Errorf("%w: the input has %d tokens and %s embeds at most num_batch %d at once: shorten it or raise num_batch", ErrRequest, len(ids), a.Arch, e.opt.NumBatch)
	}
	for i, t := range ids {
		if t < 0 || int(t) >= a.Vocab {
			return nil, fmt.Errorf("%w: token %d at %d is outside the vocabulary of %d", ErrRequest, t, i, a.Vocab)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []float32
	var err error
	if derr := e.do(func() { out, err = e.embed(ids, spec.BlockSize) }); derr != nil {
		return nil, derr
	}
	return out, err
}

// embed runs on the loop goroutine. A generative model's input goes in
// chunks of num_batch (causal attention gives the same states); an
// encoder's in one pass.
func (e *Engine) embed(ids []int32, bs int) ([]float32, error) {
	s := e.pm.NewSeq("\x00embed") // never matched: embeddings share no blocks
	defer func() { e.pm.Free(s); e.noteBlocks() }()
	a := e.m.Arch
	dim := a.Dim
	sum := make([]float64, dim)
	hidden := make([]float32, min(len(ids), e.opt.NumBatch)*dim)
	var out []float32
	for from := 0; from < len(ids); {
		n := min(len(ids)-from, e.opt.NumBatch)
		if err := e.pm.Append(s, n); err != nil {
			e.pm.Radix().Evict(ceilDiv(n, bs) + 1)
			if err = e.pm.Append(s, n); err != nil {
				return nil, fmt.Errorf("%w: the K/V cache is full with running requests (%v): retry, or raise FOLIO_KV_MEMORY", ErrBusy, err)
			}
		}
		e.noteBlocks()
		b := &gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: from, Blocks: e.pm.Table32(s)}}}
		h, err := e.m.forwardGroups(&e.gbatches, b, func(g, _ int) []int32 { return e.pm.Table32In(s, g) }, ids[from:from+n], nil, true)
		if err != nil {
			return nil, err
		}
		a.Backend().Download(hidden[:n*dim], h)
		switch a.Pooling {
		case arch.PoolMean:
			for r := range n {
				for j, v := range hidden[r*dim : (r+1)*dim] {
					sum[j] += float64(v)
				}
			}
		case arch.PoolCLS:
			if from == 0 {
				out = append([]float32(nil), hidden[:dim]...)
			}
		default: // last, and none: the last token's state, as llama.cpp's llama_get_embeddings_ith(-1)
			if from+n == len(ids) {
				out = append([]float32(nil), hidden[(n-1)*dim:n*dim]...)
			}
		}
		from += n
	}
	if a.Pooling == arch.PoolMean {
		out = make([]float32, dim)
		for j, v := range sum {
			out[j] = float32(v / float64(len(ids)))
		}
	}
	a.Project(out) // gemma-embedding's dense projections, after pooling as in llama.cpp
	return out, nil
}
