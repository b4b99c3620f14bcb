package runner

import (
	"context"
	"fmt"
	"time"

	"folio/gpu"
	"folio/models/tokenizer"
)

// GenerateOptions are the options of one in-process generation.
type GenerateOptions struct {
	Sample     SampleOptions
	NumPredict int // tokens to generate at most; ≤ 0: until an end token or the context is full
}

// Stats describe a finished generation, with Ollama's meanings.
type Stats struct {
	PromptTokens   int
	PromptDuration time.Duration
	EvalTokens     int
	EvalDuration   time.Duration
	DoneReason     string // "stop": an end-of-generation token; "length": num_predict or the context
}

// Generate continues prompt (token ids; empty means BOS alone) with one
// sequence and calls emit with each piece of complete UTF-8 text as it is
// generated. It is the single-sequence path of `folio run`: the K/V blocks
// of the sequence are the pool's first ones, in order. The engine (many
// sequences, shared prefixes) replaces it.
func (m *Model) Generate(ctx context.Context, prompt []int32, opt GenerateOptions, emit func(text string) error) (Stats, error) {
	var st Stats
	if err := opt.Sample.Check(); err != nil {
		return st, err
	}
	vocab := m.Tok.Vocab()
	if len(prompt) == 0 {
		if vocab.BOS == tokenizer.NoToken {
			return st, fmt.Errorf("runner: empty prompt and the model has no BOS token to start from")
		}
		prompt = []int32{vocab.BOS}
	}
	spec := m.KV.Spec()
	capacity := spec.Blocks * spec.BlockSize
	if len(prompt) >= capacity {
		return st, fmt.Errorf("runner: the prompt has %d tokens and the context holds %d: shorten it or raise num_ctx", len(prompt), capacity)
	}
	table := firstBlocks(spec.Blocks)
	tokens := append(make([]int32, 0, capacity), prompt...)
	sampler := NewSampler(opt.Sample)
	detok := m.Tok.NewDetokenizer(tokenizer.DecodeOptions{})
	for _, id := range prompt { // the generated text continues the prompt's
		detok.Add(id)
	}
	logits := make([]float32, m.Arch.Vocab)

	// forward runs tokens[from:] and leaves the last row's logits in logits.
	forward := func(from int) error {
		for from < len(tokens) {
			n := min(len(tokens)-from, m.Opt.NumBatch)
			b := &gpu.Batch{BlockSize: spec.BlockSize, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: from, Blocks: table}}}
			out, err := m.Arch.Forward(m.KV, b, tokens[from:from+n], []int32{int32(n - 1)})
			if err != nil {
				return err
			}
			from += n
			if from == len(tokens) {
				m.Arch.Backend().Download(logits, out)
			}
		}
		return nil
	}

	start := time.Now()
	if err := forward(0); err != nil {
		return st, err
	}
	st.PromptTokens, st.PromptDuration = len(prompt), time.Since(start)
	start = time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		next := sampler.Sample(logits, tokens)
		if vocab.IsEOG(next) {
			st.DoneReason = "stop"
			break
		}
		tokens = append(tokens, next)
		st.EvalTokens++
		if text := detok.Add(next); text != "" {
			if err := emit(text); err != nil {
				return st, err
			}
		}
		if (opt.NumPredict > 0 && st.EvalTokens >= opt.NumPredict) || len(tokens) >= capacity {
			st.DoneReason = "length"
			break
		}
		if err := forward(len(tokens) - 1); err != nil {
			return st, err
		}
	}
	st.EvalDuration = time.Since(start)
	if text := detok.Flush(); text != "" {
		if err := emit(text); err != nil {
			return st, err
		}
	}
	return st, nil
}

// Logits runs ids as one sequence over the pool's first blocks and returns
// the last position's logits over the vocabulary.
func (m *Model) Logits(ids []int32) ([]float32, error) {
	spec := m.KV.Spec()
	if len(ids) == 0 || len(ids) > spec.Blocks*spec.BlockSize {
		return nil, fmt.Errorf("runner: %d tokens: the context holds 1 to %d; raise num_ctx", len(ids), spec.Blocks*spec.BlockSize)
	}
	table := firstBlocks(spec.Blocks)
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

// firstBlocks is the block table 0, 1, …, n-1.
func firstBlocks(n int) []int32 {
	table := make([]int32, n)
	for i := range table {
		table[i] = int32(i)
	}
	return table
}
