package arch

import (
	"fmt"
	"math"

	"folio/gpu"
	"folio/models/gguf"
)

// deepseek2: DeepSeek-V2, V2-Lite, V2.5, V3, R1, Kimi K2 and the other
// files llama.cpp runs as deepseek2, and Mistral 4 (mistral4: the same
// model and keys under its own name, its experts' gate and up fused in
// ffn_gate_up_exps as every conversion of it writes them). Multi-head latent attention as
// llama.cpp computes it when a file has attn_k_b and attn_v_b (every
// conversion since it split attn_kv_b): a token's keys and values are one
// latent of KVLora elements (attn_kv_a_mqa's first rows, normed) and
// Rope.Dims rotated ones shared by every head, and that is what the cache
// holds, one K/V head of HeadDim = KVLora + Rope.Dims whose values are
// the same row (the latent part is what matters: the rest of each head's
// output is left unread). A query head of QKHeadDim (attn_q, or attn_q_b
// after attn_q_a and its norm) splits into QKHeadDim − Rope.Dims elements
// that attn_k_b takes into the latent's space and Rope.Dims that rotate;
// joined, they meet the cached rows as multi-query attention, scaled by
// mscale²/√QKHeadDim. Each head's output in the latent's space goes out
// through its attn_v_b (VHeadDim) and then attn_output. The gpu ops are
// 2-D, so heads cross between rows and columns with gpu.Rearrange, and
// the matmuls of a head each run as the experts' do, one ExpertMatMuls a
// step. The feed-forward is glm4moe's: leading dense layers, then
// experts by softmax or by sigmoid with the selection bias, within groups
// where the file has them, beside shared experts.
type deepseek2Block struct {
	attnNorm      gpu.Tensor   // [1, Dim]
	wq            gpu.Tensor   // [Heads·QKHeadDim, Dim]; nil with the LoRA
	wqA, qANorm   gpu.Tensor   // [QLora, Dim], [1, QLora]
	wqB           gpu.Tensor   // [Heads·QKHeadDim, QLora]
	wkvA, wkvAPe  gpu.Tensor   // attn_kv_a_mqa's rows: [KVLora, Dim], [Rope.Dims, Dim]
	kvANorm       gpu.Tensor   // [1, KVLora]
	wkB, wvB      []gpu.Tensor // head h's [KVLora, QKHeadDim − Rope.Dims], [VHeadDim, KVLora]
	wo            gpu.Tensor   // [Dim, Heads·VHeadDim]
	ffnNorm       gpu.Tensor   // [1, Dim]
	gate, up, dwn gpu.Tensor   // the dense layers'
	moe           *moeFFN      // nil in the dense layers
}

func newDeepseek2Block(ld *loader, c *Config, i int) block {
	p := fmt.Sprintf("blk.%d.", i)
	w := func(name string, rows, cols int) gpu.Tensor { return ld.weight(p+name+".weight", rows, cols) }
	h, nope, lat, rd := c.Heads, c.QKHeadDim-c.Rope.Dims, c.KVLora, c.Rope.Dims
	l := &deepseek2Block{attnNorm: w("attn_norm", 1, c.Dim), kvANorm: w("attn_kv_a_norm", 1, lat),
		wo: w("attn_output", c.Dim, h*c.VHeadDim), ffnNorm: w("ffn_norm", 1, c.Dim)}
	if c.QLora > 0 {
		l.wqA, l.qANorm, l.wqB = w("attn_q_a", c.QLora, c.Dim), w("attn_q_a_norm", 1, c.QLora), w("attn_q_b", h*c.QKHeadDim, c.QLora)
	} else {
		l.wq = w("attn_q", h*c.QKHeadDim, c.Dim)
	}
	kva := p + "attn_kv_a_mqa.weight"
	l.wkvA, l.wkvAPe = ld.weightPart(kva, 0, lat, lat+rd, c.Dim), ld.weightPart(kva, lat, rd, lat+rd, c.Dim)
	for j := range h {
		l.wkB = append(l.wkB, ld.expert(p+"attn_k_b.weight", j, h, lat, nope))
		l.wvB = append(l.wvB, ld.expert(p+"attn_v_b.weight", j, h, c.VHeadDim, lat))
	}
	ld.releaseRepacked(p+"attn_k_b.weight", l.wkB)
	ld.releaseRepacked(p+"attn_v_b.weight", l.wvB)
	if i < c.DenseLead {
		l.gate, l.up, l.dwn = loadFFN(ld, c, i)
		return l
	}
	l.moe = loadLeadMoE(ld, c, i, ld.optional)
	return l
}

func (l *deepseek2Block) forward(m *Model, s *step) {
	be, c, ms := m.be, &m.Config, m.mla
	n, h := s.x.Rows(), c.Heads
	qk, rd, lat, dv := c.QKHeadDim, c.Rope.Dims, c.KVLora, c.VHeadDim
	nope, kd := qk-rd, lat+rd
	move := func(dst, src gpu.Tensor, heads, length int, d, sr gpu.Layout) {
		gpu.Rearrange(be, dst, src, gpu.Rearrangement{Rows: n, Heads: heads, Len: length, Dst: d, Src: sr})
	}
	be.RMSNorm(s.xb, s.x, l.attnNorm, m.Eps)
	q := be.Slice(ms.q, n) // [n, Heads·QKHeadDim]
	if l.wq != nil {
		be.MatMul(q, s.xb, l.wq)
	} else {
		qa := be.Slice(ms.qa, n)
		be.MatMul(qa, s.xb, l.wqA)
		be.RMSNorm(qa, qa, l.qANorm, m.Eps)
		be.MatMul(q, qa, l.wqB)
	}
	kv, kpe := be.Slice(ms.kv, n), be.Slice(ms.kpe, n)
	m.matMuls(s, s.xb, kv, l.wkvA, kpe, l.wkvAPe)
	be.RMSNorm(kv, kv, l.kvANorm, m.Eps)
	be.Rope(kpe, s.pos, &ms.rope)
	// The cached row: the latent, then its rotated elements.
	move(s.k, kv, 1, lat, gpu.Layout{Row: kd}, gpu.Layout{Row: lat})
	move(s.k, kpe, 1, rd, gpu.Layout{Off: lat, Row: kd}, gpu.Layout{Row: rd})

	// Each query head: its unrotated part into the latent's space, then
	// its rotated part after it.
	qn, qpe, ql := be.Slice(ms.qn, n*h), be.Slice(ms.qpe, n), be.Slice(ms.lat, n*h)
	move(qn, q, h, nope, gpu.Layout{Row: h * nope, Head: nope}, gpu.Layout{Row: h * qk, Head: qk})
	move(qpe, q, h, rd, gpu.Layout{Row: h * rd, Head: rd}, gpu.Layout{Off: nope, Row: h * qk, Head: qk})
	be.Rope(qpe, s.pos, &ms.rope)
	m.headMatMuls(ql, qn, n, l.wkB) // [Heads·n, KVLora], head by head
	move(s.q, ql, h, lat, gpu.Layout{Row: h * kd, Head: kd}, gpu.Layout{Row: lat, Head: n * lat})
	move(s.q, qpe, h, rd, gpu.Layout{Off: lat, Row: h * kd, Head: kd}, gpu.Layout{Row: h * rd, Head: rd})
	m.temperQueries(s) // Mistral Large 3's temperature, on the joined queries as llama.cpp scales Qcur

	be.WriteKV(s.kv, s.kvLayer, s.k, s.k, s.slots)
	be.Attention(s.att, s.q, s.kv, s.kvLayer, s.batch, gpu.AttnOpts{Scale: c.attnScale()})

	// Each head's output in the latent's space (its first KVLora
	// elements) out through its attn_v_b, the heads joined for attn_output.
	al, vo, vc := be.Slice(ms.lat, n*h), be.Slice(ms.vo, n*h), be.Slice(ms.vc, n)
	move(al, s.att, h, lat, gpu.Layout{Row: h * lat, Head: lat}, gpu.Layout{Row: h * kd, Head: kd})
	m.headMatMuls(vo, al, n, l.wvB) // [Heads·n, VHeadDim]
	move(vc, vo, h, dv, gpu.Layout{Row: h * dv, Head: dv}, gpu.Layout{Row: dv, Head: n * dv})
	be.MatMul(s.xb, vc, l.wo)
	be.Add(s.x, s.x, s.xb)
	m.ffnOrExperts(s, l.moe, l.ffnNorm, l.gate, l.up, l.dwn)
}

// headMatMuls sets dst's rows j·n … j·n+n-1 ([Heads·n, ws[j].Rows], head
// by head) to the rows of head j of x ([n·Heads, ws[j].Cols], row i's
// heads in turn) times ws[j]ᵀ: one ExpertMatMuls where the backend has
// it, else a Gather, a MatMul and a Rearrange a head.
func (m *Model) headMatMuls(dst, x gpu.Tensor, n int, ws []gpu.Tensor) {
	ms, h := m.mla, len(ws)
	rows, spans := ms.rows[:n*h], ms.spans[:h]
	if ms.rowsFor != n { // a layer's two calls, and the next layers', share them
		for j := range h {
			for i := range n {
				rows[j*n+i] = int32(i*h + j)
			}
			spans[j] = gpu.ExpertSpan{Expert: j, Start: j * n, Len: n}
		}
		ms.rowsFor = n
	}
	if ex, ok := m.be.(gpu.Experts); ok {
		ms.dsts[0], ms.ws[0] = dst, ws
		ex.ExpertMatMuls(ms.dsts[:], x, rows, ms.ws[:], spans)
		ms.dsts[0], ms.ws[0] = nil, nil
		return
	}
	in, out := ms.in[x.Cols()], ms.out[dst.Cols()]
	for j := range h {
		xi, yo := m.be.Slice(in, n), m.be.Slice(out, n)
		m.be.Gather(xi, x, rows[j*n:(j+1)*n])
		m.be.MatMul(yo, xi, ws[j])
		gpu.Rearrange(m.be, dst, yo, gpu.Rearrangement{Rows: n, Heads: 1, Len: dst.Cols(),
			Dst: gpu.Layout{Off: j * n * dst.Cols(), Row: dst.Cols()}, Src: gpu.Layout{Row: dst.Cols()}})
	}
}

// mlaScratch is latent attention's activations for maxRows rows.
type mlaScratch struct {
	q, qa, kv, kpe gpu.Tensor       // [r, Heads·QKHeadDim], [r, QLora], [r, KVLora], [r, Rope.Dims]
	qn, qpe        gpu.Tensor       // [r·Heads, QKHeadDim−Rope.Dims], [r, Heads·Rope.Dims]
	lat, vo, vc    gpu.Tensor       // [r·Heads, KVLora], [r·Heads, VHeadDim], [r, Heads·VHeadDim]
	rope           gpu.Rope         // the model's, over heads of Rope.Dims
	rows           []int32          // head j's rows of an [n·Heads, ·] input, head by head
	spans          []gpu.ExpertSpan // head j's rows of the output
	rowsFor        int              // the n rows and spans hold; 0: none yet
	dsts           [1]gpu.Tensor
	ws             [1][]gpu.Tensor
	// A head's rows in and out by width, for backends without
	// gpu.Experts.
	in, out map[int]gpu.Tensor
}

func (m *Model) allocMLA(alloc func(rows, cols int) gpu.Tensor) {
	r, c := m.maxRows, &m.Config
	h, nope := c.Heads, c.QKHeadDim-c.Rope.Dims
	ms := &mlaScratch{q: alloc(r, h*c.QKHeadDim), kv: alloc(r, c.KVLora), kpe: alloc(r, c.Rope.Dims),
		qn: alloc(r*h, nope), qpe: alloc(r, h*c.Rope.Dims), lat: alloc(r*h, c.KVLora), vo: alloc(r*h, c.VHeadDim),
		vc: alloc(r, h*c.VHeadDim), rows: make([]int32, r*h), spans: make([]gpu.ExpertSpan, h)}
	if c.QLora > 0 {
		ms.qa = alloc(r, c.QLora)
	}
	if _, ok := m.be.(gpu.Experts); !ok {
		ms.in = map[int]gpu.Tensor{nope: alloc(r, nope), c.KVLora: alloc(r, c.KVLora)}
		ms.out = map[int]gpu.Tensor{c.KVLora: alloc(r, c.KVLora), c.VHeadDim: alloc(r, c.VHeadDim)}
	}
	m.mla = ms
}

// setMLARope gives the latent attention the model's rope over heads of
// its rotated elements alone.
func (m *Model) setMLARope() {
	if m.mla != nil {
		m.mla.rope = m.Rope
		m.mla.rope.HeadDim = m.Rope.Dims
	}
}

// mlaScratchBytes is the device activations allocMLA adds for maxRows
// rows (the head buffers of backends without gpu.Experts left out).
func mlaScratchBytes(c *Config, maxRows int) int64 {
	if c.KVLora == 0 {
		return 0
	}
	h := c.Heads
	perRow := h*c.QKHeadDim + c.QLora + c.KVLora + c.Rope.Dims + h*(c.QKHeadDim-c.Rope.Dims) + h*c.Rope.Dims +
		h*c.KVLora + 2*h*c.VHeadDim
	return 4 * int64(maxRows) * int64(perRow)
}

// latentArchs are the families of deepseek2's model (multi-head latent
// attention), whose keys and quirks llama.cpp reads alike.
var latentArchs = map[string]bool{"deepseek2": true, "mistral4": true}

// readDeepseek2 reads the latent attention's shape (attention.q_lora_rank,
// kv_lora_rank, key_length_mla and value_length_mla, the cache's
// key_length and value_length and one K/V head checked against them), its
// score scale, and the experts as glm4moe's with softmax the gating
// without expert_gating_func (sigmoid for GLM-4.7-Flash's layout, as
// llama.cpp decides).
func readDeepseek2(f *gguf.File, p string, c *Config) error {
	blocks := c.Layers
	gating := GatingSoftmax
	if (blocks == 47 || blocks == 48) && c.Vocab == 154880 {
		gating = GatingSigmoid // GLM-4.7-Flash: llama.cpp's default for these files
	}
	if err := readLeadMoE(f, p, c, gating); err != nil {
		return err
	}
	if err := readCounts(f, p, countKey{"attention.q_lora_rank", 1 << 16, &c.QLora}, countKey{"attention.kv_lora_rank", 1 << 16, &c.KVLora},
		countKey{"attention.key_length_mla", 1 << 16, &c.QKHeadDim}, countKey{"attention.value_length_mla", 1 << 16, &c.VHeadDim}); err != nil {
		return err
	}
	vlen, _ := f.Int(p + "attention.value_length")
	rd := c.Rope.Dims
	switch {
	case c.QKHeadDim == 0 || c.VHeadDim == 0:
		return fmt.Errorf("no %sattention.key_length_mla and value_length_mla: this file has DeepSeek's attention as attn_kv_b, "+
			"which llama.cpp's converter has split into attn_k_b and attn_v_b since 2025; convert the model again", p)
	case c.KVLora == 0 || c.KVHeads != 1 || c.HeadDim != c.KVLora+rd || int(vlen) != c.KVLora:
		return fmt.Errorf("latent attention of rank %d with %d rotated elements caches one K/V head of %d keys and %d values, "+
			"not %d heads of %d and %d", c.KVLora, rd, c.KVLora+rd, c.KVLora, c.KVHeads, c.HeadDim, vlen)
	case rd >= c.QKHeadDim || rd == c.HeadDim:
		return fmt.Errorf("%d rotated elements of query heads of %d leave none to take into the latent", rd, c.QKHeadDim)
	}
	if err := readAttnTemp(f, p, c); err != nil {
		return err
	}
	scale, err := mlaQueryScale(f, p, c)
	c.QueryScale = scale
	return err
}

// readAttnTemp reads Mistral Large 3's attention temperature
// (attention.temperature_scale, over positions of
// attention.temperature_length, which llama.cpp requires with it): the
// queries are scaled as mistral3's are (Config.AttnTemp).
func readAttnTemp(f *gguf.File, p string, c *Config) error {
	t, err := hyper(f, p+"attention.temperature_scale", 0, "a number from 0 to 10", func(v float64) bool { return v >= 0 && v <= 10 })
	if err != nil || t == 0 {
		return err
	}
	n, ok := f.Int(p + "attention.temperature_length")
	if !ok || n <= 0 || n > 1<<24 {
		return fmt.Errorf("%sattention.temperature_scale = %v needs %sattention.temperature_length, the positions a step of the temperature spans (this file's: %d, present: %v)",
			p, t, p, n, ok)
	}
	c.AttnTemp, c.AttnTempFloor = float32(t), int(n)
	return nil
}

// mlaQueryScale is llama.cpp's kq_scale for deepseek2: mscale²/√QKHeadDim,
// mscale the YaRN attention factor with the converter's scaling undone
// times 1 + 0.1·log multiplier·ln factor (1 without YaRN), in float32.
func mlaQueryScale(f *gguf.File, p string, c *Config) (float32, error) {
	attn, err := ropeAttnFactor(f, p)
	if err != nil {
		return 0, err
	}
	mscale := attn
	if typ := f.String(p + "rope.scaling.type"); typ == "yarn" {
		factor, err := hyper(f, p+"rope.scaling.factor", 0, "a factor above 0", func(v float64) bool { return v > 0 })
		if err != nil {
			return 0, err
		}
		lm, err := hyper(f, p+"rope.scaling.yarn_log_multiplier", 0, "a number from 0 to 100", func(v float64) bool { return v >= 0 && v <= 100 })
		if err != nil {
			return 0, err
		}
		freqScale := 1 / float32(factor)
		logMul, num := float32(lm)/0.1, float32(1)
		if logMul != 0 {
			num = logMul
		}
		org := yarnAttnFactor(freqScale, num, logMul) * attn * (1 + 0.1*logf(1/freqScale))
		mscale = org * (1 + 0.1*logMul*logf(1/freqScale))
	}
	return 1 * mscale * mscale / float32(math.Sqrt(float64(c.QKHeadDim))), nil
}
