package arch

import (
	"fmt"
	"math"
	"slices"

	"folio/gpu"
	"folio/models/gguf"
)

// Mixture of experts. A layer's feed-forward is Experts small SwiGLU
// feed-forwards, of which each token runs the ExpertsUsed its router
// picks, its output their weighted sum. The file stacks the experts'
// matrices in 3-D tensors; each expert's slice loads as a 2-D weight of
// its own, so that a token reads the chosen experts' weights only.
// Routing is on the host: the router's logits come down ([rows,
// Experts], small), the choice and the weights are computed there as
// llama.cpp's build_moe_ffn computes them, and each chosen expert runs
// once per step over the rows that chose it (one read of its weights
// however many tokens share it). Each row's weighted outputs are summed
// in the order of its choices, as llama.cpp adds them. With the
// backend's gpu.Experts ops every chosen expert of a step runs in the same
// few ops and the sums are made on the device; without them, expert by
// expert, the sums on the host, uploaded as one [rows, Dim] residual add.

// Gating is how a router's logits become the chosen experts' weights
// (llama.cpp's llama_expert_gating_func_type).
type Gating int

const (
	// GatingSoftmax: softmax over every expert, then the top ExpertsUsed
	// probabilities (qwen3moe, Mixtral).
	GatingSoftmax Gating = iota
	// GatingSoftmaxChosen: the top ExpertsUsed logits, then softmax over
	// those (gpt-oss; llama.cpp's SOFTMAX_WEIGHT).
	GatingSoftmaxChosen
	// GatingSigmoid: the sigmoid of each logit, the top ExpertsUsed of
	// those plus the layer's selection bias where it has one (glm4moe's
	// exp_probs_b), weighted by the sigmoids alone.
	GatingSigmoid
	// GatingLogitsSigmoid: the top ExpertsUsed logits, each weighted by
	// its sigmoid (llama4: the choice on the logits themselves, which
	// sigmoids rounded to 1 would tie).
	GatingLogitsSigmoid
)

// routing is how route chooses and weights a layer's experts: Gating,
// the weights divided by their sum when norm, times scale when it is
// neither 0 nor 1 (llama.cpp's expert_weights_scale), and bias (one per
// expert; nil: none) added to the gated values for the choice alone.
type routing struct {
	gating Gating
	norm   bool
	scale  float32
	bias   []float32
	// groups > 1: the choice is among the experts of the used groups
	// whose two best biased values sum highest (Config.ExpertGroups).
	groups, used int
}

// readMoE reads the expert keys of a mixture-of-experts family: expert_count,
// expert_used_count and expert_feed_forward_length (llama.cpp's default
// when absent: feed_forward_length / expert_used_count).
func readMoE(f *gguf.File, p string, c *Config) error {
	for _, k := range []struct {
		key string
		dst *int
	}{{"expert_count", &c.Experts}, {"expert_used_count", &c.ExpertsUsed}, {"expert_feed_forward_length", &c.ExpertFFN}} {
		v, ok := f.Int(p + k.key)
		switch {
		case !ok && k.dst == &c.ExpertFFN:
			continue
		case !ok:
			return fmt.Errorf("no %s%s key: a %s file must say how many experts it has and uses", p, k.key, c.Arch)
		case v <= 0 || v > 1<<20:
			return fmt.Errorf("%s%s = %d is out of range", p, k.key, v)
		}
		*k.dst = int(v)
	}
	if c.ExpertsUsed > c.Experts {
		return fmt.Errorf("%sexpert_used_count %d exceeds expert_count %d", p, c.ExpertsUsed, c.Experts)
	}
	if c.ExpertFFN == 0 {
		c.ExpertFFN = c.FFN / c.ExpertsUsed
	}
	c.ExpertWeightsNorm = true // qwen3moe's build_moe_ffn(..., norm_w = true, ...)
	return nil
}

// moeFFN is one layer's router and experts.
type moeFFN struct {
	router         gpu.Tensor   // [Experts, Dim]
	gate, up, down []gpu.Tensor // expert e's [ExpertFFN, Dim], [ExpertFFN, Dim], [Dim, ExpertFFN]
	// The biases, where a family has them (gpt-oss; nil otherwise): the
	// router's [1, Experts] on its logits before the choice, and expert
	// e's [1, ExpertFFN], [1, ExpertFFN], [1, Dim] on its matrices'
	// outputs.
	routerB           gpu.Tensor
	gateB, upB, downB []gpu.Tensor
	// probsB is the choice's bias, [1, Experts] (glm4moe's exp_probs_b;
	// nil: none), and probsBHost its values, read at the first step.
	probsB     gpu.Tensor
	probsBHost []float32
	oai        bool // SwiGLUOAI between the matrices (gpt-oss), else SiLUMul
	gelu       bool // GELUMul between the matrices (gemma4), else SiLUMul
	// routerNorm: the router reads the layer's input RMS-normed by it, not
	// the experts' input (gemma4); nil: the experts' input
	routerNorm  gpu.Tensor
	downScale   []float32     // [Experts]: each expert's output times its value (gemma4); nil: none
	expertsPost gpu.Tensor    // [1, Dim]: the experts' sum normed before the shared expert joins it (gemma4); nil: not
	postNorm    gpu.Tensor    // [1, Dim]: the output normed before the residual add (afmoe); nil: not
	shared      *sharedExpert // run by every token besides the chosen (qwen2moe, granitemoe); nil: none
}

func newMoEFFN(ld *loader, c *Config, i int) moeFFN {
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", i, s) }
	f := moeFFN{router: ld.weight(name("ffn_gate_inp"), c.Experts, c.Dim)}
	_, fused := ld.f.Tensor(name("ffn_gate_up_exps"))
	fused = fused && (latentArchs[c.Arch] || c.Arch == "gemma4")
	for e := range c.Experts {
		if fused { // expert e's gate rows, then its up rows
			f.gate = append(f.gate, ld.expertRows(name("ffn_gate_up_exps"), e, c.Experts, 0, c.ExpertFFN, 2*c.ExpertFFN, c.Dim))
			f.up = append(f.up, ld.expertRows(name("ffn_gate_up_exps"), e, c.Experts, c.ExpertFFN, c.ExpertFFN, 2*c.ExpertFFN, c.Dim))
		} else {
			f.gate = append(f.gate, ld.expert(name("ffn_gate_exps"), e, c.Experts, c.ExpertFFN, c.Dim))
			f.up = append(f.up, ld.expert(name("ffn_up_exps"), e, c.Experts, c.ExpertFFN, c.Dim))
		}
		f.down = append(f.down, ld.expert(name("ffn_down_exps"), e, c.Experts, c.Dim, c.ExpertFFN))
	}
	if fused {
		ld.releaseRepacked(name("ffn_gate_up_exps"), append(slices.Clone(f.gate), f.up...))
	} else {
		ld.releaseRepacked(name("ffn_gate_exps"), f.gate)
		ld.releaseRepacked(name("ffn_up_exps"), f.up)
	}
	ld.releaseRepacked(name("ffn_down_exps"), f.down)
	return f
}

// loadBiases loads the router's and the experts' biases: ffn_gate_inp.bias
// [Experts] and ffn_{gate,up,down}_exps.bias, GGUF [ExpertFFN or Dim,
// Experts], expert e's the e-th row.
func (f *moeFFN) loadBiases(ld *loader, c *Config, i int) {
	name := func(s string) string { return fmt.Sprintf("blk.%d.%s.bias", i, s) }
	f.routerB = ld.weight(name("ffn_gate_inp"), 1, c.Experts)
	for e := range c.Experts {
		f.gateB = append(f.gateB, ld.weightPart(name("ffn_gate_exps"), e, 1, c.Experts, c.ExpertFFN))
		f.upB = append(f.upB, ld.weightPart(name("ffn_up_exps"), e, 1, c.Experts, c.ExpertFFN))
		f.downB = append(f.downB, ld.weightPart(name("ffn_down_exps"), e, 1, c.Experts, c.Dim))
	}
	ld.releaseRepacked(name("ffn_gate_exps"), f.gateB)
	ld.releaseRepacked(name("ffn_up_exps"), f.upB)
	ld.releaseRepacked(name("ffn_down_exps"), f.downB)
}

// expert loads expert e's slice of name, a GGUF [cols, rows, experts]
// tensor, as a rows × cols weight.
func (ld *loader) expert(name string, e, experts, rows, cols int) gpu.Tensor {
	return ld.expertRows(name, e, experts, 0, rows, rows, cols)
}

// expertRows loads rows row0 … row0+rows-1 of expert e's slice of name, a
// GGUF [cols, slice, experts] tensor (a part of fused experts), as a rows
// × cols weight.
func (ld *loader) expertRows(name string, e, experts, row0, rows, slice, cols int) gpu.Tensor {
	return ld.loadShape(name, []uint64{uint64(cols), uint64(slice), uint64(experts)}, e*slice+row0, rows, experts*slice, cols)
}

// moeScratch is the activations of the experts' feed-forwards, device and
// host, for maxRows rows.
type moeScratch struct {
	logits         gpu.Tensor // [maxRows, Experts] the router's
	xe             gpu.Tensor // [maxRows, Dim] an expert's rows in
	xw             gpu.Tensor // [maxRows·ExpertsUsed, Dim] each choice's weighted input (ExpertWeightsIn); nil without
	pairRow        []int32    // [maxRows·ExpertsUsed] the row of each choice
	xwHost         []float32  // [maxRows·ExpertsUsed·Dim] (ExpertWeightsIn, without the Experts ops)
	ye             gpu.Tensor // [maxRows·ExpertsUsed, Dim] the experts' outputs
	he, he2        gpu.Tensor // [maxRows·ExpertsUsed, ExpertFFN]
	hostLogits     []float32  // [maxRows·Experts]
	chosen         []int32    // [maxRows·ExpertsUsed] each row's experts, best first
	weights        []float32  // [maxRows·ExpertsUsed] their weights
	rows, choice   [][]int32  // per expert: the rows that chose it, and the index into chosen of each
	out            []float32  // [maxRows·ExpertsUsed·Dim] each choice's expert output
	yHost, sum     []float32  // [maxRows·Dim] one expert's outputs; each row's weighted sum
	ident          []int32    // 0, 1, … maxRows-1
	probs, scratch []float32  // [Experts] one row's routing work
	shared         *sharedScratch

	// The Experts ops': the rows of xb that each (row, choice) pair
	// reads, grouped by expert; the spans of the groups; each choice's
	// pair.
	order, at []int32 // [maxRows·ExpertsUsed] each
	spans     []gpu.ExpertSpan
	dsts      [2]gpu.Tensor
	ws        [2][]gpu.Tensor
}

func (m *Model) allocMoE(alloc func(rows, cols int) gpu.Tensor) {
	r, c := m.maxRows, &m.Config
	k := c.ExpertsUsed
	ms := &moeScratch{
		logits: alloc(r, c.Experts), xe: alloc(r, c.Dim), ye: alloc(r*k, c.Dim),
		he: alloc(r*k, c.ExpertFFN), he2: alloc(r*k, c.ExpertFFN),
		hostLogits: make([]float32, r*c.Experts),
		chosen:     make([]int32, r*k), weights: make([]float32, r*k),
		rows: make([][]int32, c.Experts), choice: make([][]int32, c.Experts),
		out: make([]float32, r*k*c.Dim), yHost: make([]float32, r*c.Dim), sum: make([]float32, r*c.Dim),
		ident: make([]int32, r), probs: make([]float32, c.Experts), scratch: make([]float32, c.Experts),
		order: make([]int32, 0, r*k), at: make([]int32, r*k), spans: make([]gpu.ExpertSpan, 0, c.Experts),
	}
	for i := range ms.ident {
		ms.ident[i] = int32(i)
	}
	if c.SharedFFN > 0 {
		ms.shared = allocShared(alloc, r, c)
	}
	if c.ExpertWeightsIn {
		ms.xw, ms.pairRow, ms.xwHost = alloc(r*k, c.Dim), make([]int32, r*k), make([]float32, r*k*c.Dim)
	}
	m.moe = ms
}

// moeScratchBytes is the device activations allocMoE adds for maxRows rows.
func moeScratchBytes(c *Config, maxRows int) int64 {
	if c.Experts == 0 {
		return 0
	}
	b := 4*int64(maxRows)*int64(c.Experts+c.Dim+c.ExpertsUsed*(c.Dim+2*c.ExpertFFN)) + sharedScratchBytes(c, maxRows)
	if c.ExpertWeightsIn {
		b += 4 * int64(maxRows) * int64(c.ExpertsUsed*c.Dim)
	}
	return b
}

// forward: x += Σ over each row's chosen experts e of weight_e ·
// down_e(silu(gate_e(h)) · up_e(h)), h = norm(x) (with the biases and
// SwiGLUOAI where the family has them), plus the shared expert's output
// where there is one, the sum × ResidualScale where the family has one.
func (f *moeFFN) forward(m *Model, s *step, norm gpu.Tensor) {
	be, c, ms := m.be, &m.Config, m.moe
	n, k := s.x.Rows(), c.ExpertsUsed
	be.RMSNorm(s.xb, s.x, norm, m.Eps) // xb [n, Dim]
	logits, rin := be.Slice(ms.logits, n), s.xb
	if f.routerNorm != nil {
		rin = be.Slice(ms.xe, n)
		be.RMSNorm(rin, s.x, f.routerNorm, m.Eps)
	}
	be.MatMul(logits, rin, f.router) // [n, Experts]
	if f.routerB != nil {
		be.Add(logits, logits, f.routerB)
	}
	be.Download(ms.hostLogits[:n*c.Experts], logits)
	for e := range ms.rows {
		ms.rows[e], ms.choice[e] = ms.rows[e][:0], ms.choice[e][:0]
	}
	if f.probsB != nil && f.probsBHost == nil {
		f.probsBHost = make([]float32, c.Experts)
		be.Download(f.probsBHost, f.probsB)
	}
	how := routing{gating: c.Gating, norm: c.ExpertWeightsNorm, scale: c.ExpertWeightsScale, bias: f.probsBHost,
		groups: c.ExpertGroups, used: c.GroupsUsed}
	for r := range n {
		at := r * k
		route(ms.hostLogits[r*c.Experts:(r+1)*c.Experts], how, ms.chosen[at:at+k], ms.weights[at:at+k], ms.probs, ms.scratch)
		for j, e := range ms.chosen[at : at+k] {
			if f.downScale != nil { // the expert's output scale, with its weight
				ms.weights[at+j] *= f.downScale[e]
			}
			ms.rows[e] = append(ms.rows[e], int32(r))
			ms.choice[e] = append(ms.choice[e], int32(at+j))
		}
	}
	var shared gpu.Tensor
	if f.shared != nil {
		shared = f.shared.run(m, s) // [n, Dim] from h, before the experts' sum overwrites it
	}
	in, pick := s.xb, ms.rows // each choice's input: a row of in, by expert
	if c.ExpertWeightsIn {
		in, pick = f.weighInputs(m, s), ms.choice
	}
	if ex, ok := be.(gpu.Experts); ok && f.gateB == nil {
		f.experts(m, s, ex, in, pick)
	} else {
		f.expertByExpert(m, s, in, pick)
	}
	if f.expertsPost != nil {
		be.RMSNorm(s.xb, s.xb, f.expertsPost, m.Eps)
	}
	if shared != nil {
		be.Add(s.xb, s.xb, shared) // llama.cpp's moe_out + shexp_out
	}
	if f.postNorm != nil {
		be.RMSNorm(s.xb, s.xb, f.postNorm, m.Eps)
	}
	m.residual(s) // x += xb (· ResidualScale)
}

// weighInputs returns each choice's input weighted by its weight, [n·k,
// Dim] (row r·k+j: xb's row r times the weight of r's j-th choice,
// rounded as llama.cpp's ggml_mul), through the backend's ExpertSum where
// it has one, else on the host; the weights become 1, which the sums
// multiply exactly.
func (f *moeFFN) weighInputs(m *Model, s *step) gpu.Tensor {
	be, ms, k, dim := m.be, m.moe, m.ExpertsUsed, m.Dim
	n := s.xb.Rows()
	xw, w := be.Slice(ms.xw, n*k), ms.weights[:n*k]
	for i := range w {
		ms.pairRow[i] = int32(i / k)
	}
	if ex, ok := be.(gpu.Experts); ok {
		ex.ExpertSum(xw, s.xb, ms.pairRow[:n*k], w) // one term a row
	} else {
		be.Download(ms.yHost[:n*dim], s.xb)
		h := ms.xwHost[:n*k*dim]
		for i, wt := range w {
			src := ms.yHost[(i/k)*dim : (i/k+1)*dim]
			for d, v := range src {
				h[i*dim+d] = v * wt
			}
		}
		be.Upload(xw, h)
	}
	for i := range w {
		w[i] = 1
	}
	return xw
}

// experts is the chosen experts through the backend's Experts ops: their
// choices grouped by expert in spans of the scratch (pick[e]: the rows of
// in that expert e's choices read), gate and up of every span as one op,
// SiLUMul over all of them, down as one op, and each row's weighted sum
// into xb, on the device.
func (f *moeFFN) experts(m *Model, s *step, ex gpu.Experts, in gpu.Tensor, pick [][]int32) {
	be, ms := m.be, m.moe
	ms.order, ms.spans = ms.order[:0], ms.spans[:0]
	for e, rows := range pick {
		if len(rows) == 0 {
			continue // not read at all
		}
		ms.spans = append(ms.spans, gpu.ExpertSpan{Expert: e, Start: len(ms.order), Len: len(rows)})
		for i, ch := range ms.choice[e] {
			ms.at[ch] = int32(len(ms.order) + i)
		}
		ms.order = append(ms.order, rows...)
	}
	n, nk := s.x.Rows(), len(ms.order)
	he, he2, ye := be.Slice(ms.he, nk), be.Slice(ms.he2, nk), be.Slice(ms.ye, nk)
	ms.dsts[0], ms.dsts[1], ms.ws[0], ms.ws[1] = he, he2, f.gate, f.up
	ex.ExpertMatMuls(ms.dsts[:2], in, ms.order, ms.ws[:2], ms.spans) // [nk, ExpertFFN] each
	if f.gelu {
		be.GELUMul(he, he, he2)
	} else {
		be.SiLUMul(he, he, he2)
	}
	ms.dsts[0], ms.ws[0] = ye, f.down
	ex.ExpertMatMuls(ms.dsts[:1], he, nil, ms.ws[:1], ms.spans) // [nk, Dim]
	ms.dsts, ms.ws = [2]gpu.Tensor{}, [2][]gpu.Tensor{}
	ex.ExpertSum(s.xb, ye, ms.at[:n*m.ExpertsUsed], ms.weights[:n*m.ExpertsUsed]) // xb [n, Dim]
}

// expertByExpert is the chosen experts one at a time with the plain ops
// (a Gather, the MatMuls and a Download each; pick[e] the rows of src
// expert e's choices read), their outputs summed on the host and uploaded
// into xb.
func (f *moeFFN) expertByExpert(m *Model, s *step, src gpu.Tensor, pick [][]int32) {
	be, ms := m.be, m.moe
	n, k, dim := s.x.Rows(), m.ExpertsUsed, m.Dim
	for e, rows := range pick {
		if len(rows) == 0 {
			continue // not read at all
		}
		cnt := len(rows)
		in := src
		if cnt < src.Rows() || !equalRows(rows, ms.ident[:cnt]) {
			in = be.Slice(ms.xe, cnt)
			be.Gather(in, src, rows) // xe [cnt, Dim]
		}
		he, he2, ye := be.Slice(ms.he, cnt), be.Slice(ms.he2, cnt), be.Slice(ms.ye, cnt)
		m.matMuls(s, in, he, f.gate[e], he2, f.up[e]) // [cnt, ExpertFFN]
		if f.gateB != nil {
			be.Add(he, he, f.gateB[e])
			be.Add(he2, he2, f.upB[e])
		}
		if f.oai {
			be.SwiGLUOAI(he, he, he2, oaiAlpha, oaiLimit)
		} else if f.gelu {
			be.GELUMul(he, he, he2)
		} else {
			be.SiLUMul(he, he, he2)
		}
		be.MatMul(ye, he, f.down[e]) // [cnt, Dim]
		if f.downB != nil {
			be.Add(ye, ye, f.downB[e])
		}
		be.Download(ms.yHost[:cnt*dim], ye)
		for i, ch := range ms.choice[e] {
			copy(ms.out[int(ch)*dim:(int(ch)+1)*dim], ms.yHost[i*dim:(i+1)*dim])
		}
	}
	// Each row's sum in the order of its choices, each output weighted
	// first: llama.cpp's ggml_mul by the weights, then its chain of adds.
	sum := ms.sum[:n*dim]
	for r := range n {
		dst := sum[r*dim : (r+1)*dim]
		for j := range k {
			w, y := ms.weights[r*k+j], ms.out[(r*k+j)*dim:(r*k+j+1)*dim]
			if j == 0 {
				for d := range dst {
					dst[d] = y[d] * w
				}
				continue
			}
			for d := range dst {
				dst[d] += y[d] * w
			}
		}
	}
	be.Upload(s.xb, sum)
}

func equalRows(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// route chooses len(chosen) experts from one row's router logits and
// their weights, as llama.cpp's build_moe_ffn does in float32: with
// GatingSoftmax, softmax over all (exp of the difference to the max,
// summed in double, times the float reciprocal), the top probabilities
// (the first index among equals) and, when how.norm, each divided by
// their sum (at least 2⁻¹⁴, as llama.cpp clamps it); with
// GatingSoftmaxChosen, the top logits and softmax over them; with
// GatingSigmoid, the top sigmoids (plus how.bias for the choice). Then
// the weights times how.scale. probs and scratch hold len(logits) values
// each.
func route(logits []float32, how routing, chosen []int32, weights, probs, scratch []float32) {
	g, norm := how.gating, how.norm
	sel := logits
	switch g {
	case GatingSoftmax:
		softmax(probs, logits)
		sel = probs
	case GatingSigmoid, GatingLogitsSigmoid:
		for e, v := range logits {
			probs[e] = float32(1 / (1 + math.Exp(-float64(v))))
		}
		sel = probs
	}
	copy(scratch, sel)
	if g == GatingLogitsSigmoid {
		copy(scratch, logits)
	}
	if how.bias != nil {
		for e, b := range how.bias {
			scratch[e] += b
		}
	}
	if how.groups > 1 {
		maskGroups(scratch, how.groups, how.used)
	}
	for j := range chosen {
		best := -1
		for e, v := range scratch {
			if best < 0 || v > scratch[best] {
				best = e
			}
		}
		chosen[j], weights[j] = int32(best), sel[best]
		scratch[best] = float32(math.Inf(-1))
	}
	if g == GatingSoftmaxChosen {
		softmax(weights, weights)
	}
	if norm {
		var s float64
		for _, w := range weights {
			s += float64(w)
		}
		sum := max(float32(s), 6.103515625e-5)
		for j := range weights {
			weights[j] /= sum
		}
	}
	if how.scale != 0 && how.scale != 1 {
		for j := range weights {
			weights[j] *= how.scale
		}
	}
}

// maskGroups leaves the values of the used groups of sel (groups equal
// runs of experts) whose two largest values sum highest, the first group
// among equals, and sets the others' to -Inf: llama.cpp's group-limited
// routing (argsort_top_k of 2 in each group, their sum, argsort_top_k of
// the sums).
func maskGroups(sel []float32, groups, used int) {
	per := len(sel) / groups
	var best [2]float32
	score := make([]float32, groups) // a few dozen at most
	for g := range groups {
		best[0], best[1] = float32(math.Inf(-1)), float32(math.Inf(-1))
		for _, v := range sel[g*per : (g+1)*per] {
			if v > best[0] {
				best[0], best[1] = v, best[0]
			} else if v > best[1] {
				best[1] = v
			}
		}
		score[g] = best[0] + best[1]
	}
	keep := make([]bool, groups)
	for range used {
		top := -1
		for g, v := range score {
			if !keep[g] && (top < 0 || v > score[top]) {
				top = g
			}
		}
		keep[top] = true
	}
	for g := range groups {
		if !keep[g] {
			for e := g * per; e < (g+1)*per; e++ {
				sel[e] = float32(math.Inf(-1))
			}
		}
	}
}

// softmax: dst = softmax(x) as ggml's soft_max computes it in float32 (dst
// may be x).
func softmax(dst, x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var s float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		dst[i] = e
		s += float64(e)
	}
	inv := float32(1 / s)
	for i := range dst {
		dst[i] *= inv
	}
}
