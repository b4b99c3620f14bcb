package conformance

import (
	"errors"
	"math"

	"folio/gpu"
	"folio/models/arch"
	"folio/models/gguf"
)

// GenTolerance bounds the logits' NMSE at every step: the matmuls' share
// (8-bit activations on the CPU) compounded over the layers.
const GenTolerance = 1e-3

// GenCheck compares a greedy decode on two backends.
type GenCheck struct {
	Steps, Differ int     // tokens decoded; tokens the two chose differently
	Mismatches    int     // differing tokens where the reference's best beat its second by a margin
	Worst         float64 // the largest logits NMSE of a step
	Ref, Dev      []int32 // the tokens each chose
}

// Pass reports whether every step's logits are within GenTolerance and
// every differing choice was a near-tie.
func (g GenCheck) Pass() bool { return g.Mismatches == 0 && g.Worst <= GenTolerance }

// CheckGeneration loads the GGUF model at path on ref and dev, prefills a
// short prompt and decodes steps tokens greedily on both, feeding both the
// reference's choice, and compares every step's logits. A model whose
// layers' K/V need caches of their own (arch.Config.NeedsGroups: Gemma 4,
// Gemma 3n) gets one per layer group, all under one block table.
func CheckGeneration(path string, ref, dev gpu.Backend, steps int) (GenCheck, error) {
	var g GenCheck
	f, err := gguf.Open(path)
	if err != nil {
		return g, err
	}
	defer f.Close()
	const bs, promptLen = 16, 8
	opt := arch.Options{MaxRows: promptLen, MaxOut: 1}
	type side struct {
		m      *arch.Model
		groups *arch.Groups // nil: every layer's K/V in kvs[0]
		kvs    []gpu.KVCache
	}
	var sides [2]side
	for i, be := range []gpu.Backend{ref, dev} {
		m, err := arch.Load(f, be, opt)
		if err != nil {
			return g, err
		}
		spec := m.KVSpec((promptLen+steps)/bs+1, bs, gguf.TypeF16)
		s := side{m: m}
		specs := []gpu.KVSpec{spec}
		if m.NeedsGroups() { // a cache per layer group (Gemma 3n, Gemma 4), each with the one table
			s.groups, specs = m.LayerGroups(), nil
			for j := range s.groups.Layers {
				specs = append(specs, s.groups.Spec(j, spec))
			}
		}
		for _, sp := range specs {
			kv, err := be.NewKVCache(sp)
			if err != nil {
				return g, err
			}
			s.kvs = append(s.kvs, kv)
		}
		sides[i] = s
	}
	vocab := sides[0].m.Vocab
	blocks := make([]int32, (promptLen+steps)/bs+1)
	for i := range blocks {
		blocks[i] = int32(i)
	}
	toks := make([]int32, promptLen)
	for i := range toks {
		toks[i] = int32((i*37 + 5) % vocab)
	}
	logits := [2][]float32{make([]float32, vocab), make([]float32, vocab)}
	pos := 0
	for step := 0; step < steps; step++ {
		in := toks[pos:]
		b := gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Start: 0, Len: len(in), Pos: pos, Blocks: blocks}}}
		for i, s := range sides {
			batches := make([]*gpu.Batch, len(s.kvs))
			for j := range batches {
				batches[j] = &b
			}
			out, err := s.m.ForwardGroups(s.groups, s.kvs, batches, in, []int32{int32(len(in) - 1)})
			if err != nil {
				return g, err
			}
			s.m.Backend().Download(logits[i], out)
		}
		pos = len(toks)
		c, d := gpu.ArgMax(logits[0]), gpu.ArgMax(logits[1])
		g.Ref, g.Dev = append(g.Ref, int32(c)), append(g.Dev, int32(d))
		g.Steps++
		g.Worst = max(g.Worst, gpu.NMSE(logits[1], logits[0]))
		if math.IsNaN(g.Worst) {
			return g, errors.New("NaN in the GPU's logits")
		}
		if c != d {
			g.Differ++
			if logits[0][c]-logits[0][d] > 1e-3*(1+abs32(logits[0][c])) {
				g.Mismatches++
			}
		}
		toks = append(toks, int32(c))
	}
	return g, nil
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }
