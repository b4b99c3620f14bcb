package synth

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"runtime"
	"strings"
	"sync"

	"folio/models/gguf"
)

// tensorSpec is the recipe of one tensor: value = mean + std*z, z a
// zero-mean unit-variance draw from the row's generator.
type tensorSpec struct {
	name  string
	shape []uint64 // GGUF order: shape[0] is the row length
	typ   gguf.TensorType
	mean  float32
	std   float32
	seed  uint64 // from Config.Seed and name
	// values: the tensor's values as they are (F32 rope factors); nil:
	// drawn from mean and std
	values []float32
}

func (t *tensorSpec) elements() int64 {
	n := int64(1)
	for _, d := range t.shape {
		n *= int64(d)
	}
	return n
}

// planTensors lists the tensors in llama.cpp's names and order. Scales keep
// a forward pass sane: a matrix with fan-in n has std 1/sqrt(n), so unit
// variance inputs give unit variance outputs; the two matrices that write
// into the residual stream are halved; the output matrix gives logits of
// std about 2. Norm weights are 1 with a little noise.
func (m *Model) planTensors() {
	c := m.Config
	qDim := c.Heads * c.HeadDim
	invSqrt := func(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
	outStd := 2 * invSqrt(c.Embd)

	add := func(name string, typ gguf.TensorType, mean, std float32, shape ...int) {
		t := tensorSpec{name: name, typ: typ, mean: mean, std: std, seed: tensorSeed(c.Seed, name)}
		for _, d := range shape {
			t.shape = append(t.shape, uint64(d))
		}
		m.tensors = append(m.tensors, t)
	}
	// weight is a 2-D matrix of Config.Type, [rowLen, rows] in GGUF order.
	weight := func(name string, rowLen, rows int, std float32) {
		add(name, m.weightType(name, rowLen), 0, std, rowLen, rows)
	}
	norm := func(name string, n int) { add(name, gguf.TypeF32, 1, 0.05, n) }
	bias := func(name string, n int) { add(name, gguf.TypeF32, 0, 0.1, n) }
	// typed adds a weight of Config.Type (addWeight) or an F32 tensor of any shape.
	typed := func(name string, typ addType, mean, std float32, shape ...int) {
		t := gguf.TypeF32
		if typ == addWeight {
			t = m.weightType(name, shape[0])
		}
		add(name, t, mean, std, shape...)
	}
	if enc, ok := encoders[c.Arch]; ok {
		f32 := func(name string, rowLen, rows int, std float32) { add(name, gguf.TypeF32, 0, std, rowLen, rows) }
		enc.tensors(c, tensorPlan{weight: weight, f32: f32, norm: norm, bias: bias})
		return
	}

	// resid scales what each layer adds to the residual stream: the first
	// Gemma's √Embd-scaled tied embeddings (no post-norms) would otherwise
	// drown every layer, and a random model would only echo its input.
	resid := float32(1)
	if c.Arch == "gemma" {
		resid = float32(math.Sqrt(float64(c.Embd)))
	}
	embdStd := float32(1)
	if c.Tied {
		embdStd = outStd // token_embd doubles as the output matrix
	}
	weight("token_embd.weight", c.Embd, c.VocabSize, embdStd) // [embd, vocab]
	if c.Arch == "gemma4" {
		m.tensors = append(m.tensors, tensorSpec{name: "rope_freqs.weight", shape: []uint64{uint64(c.HeadDim / 2)},
			typ: gguf.TypeF32, values: gemma4RopeFreqs(c)})
		if c.PLEDim > 0 { // the per-layer embeddings' model-wide tensors
			weight("per_layer_token_embd.weight", c.PLEDim*c.Layers, c.VocabSize, 1)
			weight("per_layer_model_proj.weight", c.Embd, c.PLEDim*c.Layers, invSqrt(c.Embd))
			norm("per_layer_proj_norm.weight", c.PLEDim)
		}
	}
	if c.Arch == "gemma3n" {
		m.gemma3nTensors(plan{weight, norm, bias}, typed)
	}
	if c.Arch == "phi3" {
		m.phi3Tensors(func(name string, mean, std float32, n int) { add(name, gguf.TypeF32, mean, std, n) })
	}
	for l := range c.Layers + c.NextN {
		p := fmt.Sprintf("blk.%d.", l)
		if l >= c.Layers { // a multi-token-prediction layer's own tensors, before its layer's
			weight(p+"nextn.eh_proj.weight", 2*c.Embd, c.Embd, invSqrt(2*c.Embd))
			norm(p+"nextn.enorm.weight", c.Embd)
			norm(p+"nextn.hnorm.weight", c.Embd)
			norm(p+"nextn.shared_head_norm.weight", c.Embd)
		}
		if c.Arch == "olmo2" {
			olmo2Block(p, c, weight, norm)
			continue
		}
		if c.Arch == "gemma4" {
			m.gemma4Layer(l, p, plan{weight, norm, bias}, typed)
			continue
		}
		if c.Arch == "gemma3n" {
			m.gemma3nLayer(p, plan{weight, norm, bias}, typed)
			continue
		}
		if planLayer, ok := layerPlans[c.Arch]; ok {
			planLayer(p, c, plan{weight, norm, bias})
			continue
		}
		if c.latent() {
			deepseek2Attention(p, c, plan{weight, norm, bias}, func(name string, mean, std float32, shape ...int) {
				add(name, m.weightType(name, shape[0]), mean, std, shape...)
			})
		} else if c.Arch == "bailingmoe2" {
			bailingMoE2Attention(p, c, plan{weight, norm, bias})
		} else {
			m.attentionTensors(p, resid, plan{weight, norm, bias})
		}
		if c.Arch == "gpt-oss" {
			norm(p+"post_attention_norm.weight", c.Embd) // gpt-oss's ffn_norm, by its name
			m.gptossTensors(p, qDim, func(name string, mean, std float32, shape ...int) { add(name, gguf.TypeF32, mean, std, shape...) })
		} else if c.Arch == "glm4moe" {
			norm(p+"post_attention_norm.weight", c.Embd) // glm4moe's ffn_norm, by its name
		} else {
			norm(p+"ffn_norm.weight", c.Embd)
		}
		if c.Arch == "afmoe" {
			norm(p+"post_ffw_norm.weight", c.Embd) // of the feed-forward output, experts or not
		}
		if c.moeLayer(l) {
			m.moeTensors(p, typed, invSqrt)
			continue
		}
		if c.Arch == "phi3" {
			weight(p+"ffn_up.weight", c.Embd, 2*c.FFN, invSqrt(c.Embd)) // [embd, gate | up]
		} else {
			weight(p+"ffn_gate.weight", c.Embd, c.FFN, invSqrt(c.Embd)) // [embd, ffn]
			weight(p+"ffn_up.weight", c.Embd, c.FFN, invSqrt(c.Embd))
		}
		weight(p+"ffn_down.weight", c.FFN, c.Embd, resid*invSqrt(c.FFN)/2) // [ffn, embd]
		if c.Biases && c.Arch != "ernie4_5" && c.Arch != "ernie4_5-moe" {  // ernie4_5's loader takes none there
			bias(p+"ffn_gate.bias", c.FFN)
			bias(p+"ffn_up.bias", c.FFN)
			bias(p+"ffn_down.bias", c.Embd)
		}
		if isGemma(c.Arch) {
			norm(p+"post_ffw_norm.weight", c.Embd) // of the feed-forward output
		}
	}
	norm("output_norm.weight", c.Embd)
	if c.Arch == "starcoder2" || c.Arch == "phi2" || c.Arch == "stablelm" {
		bias("output_norm.bias", c.Embd)
	}
	if !c.Tied {
		weight("output.weight", c.Embd, c.VocabSize, outStd) // [embd, vocab]
		if c.Arch == "phi2" {
			bias("output.bias", c.VocabSize)
		}
	}
	if c.Dense > 0 { // of the pooled embedding: [embd, dense] then [dense, embd]
		weight("dense_2.weight", c.Embd, c.Dense, invSqrt(c.Embd))
		weight("dense_3.weight", c.Dense, c.Embd, invSqrt(c.Dense))
	}
}

// weightType is Config.Type when rowLen fills its blocks, else Q8_0 (as
// llama.cpp falls back for K-quants), else F16; fallbacks are recorded.
// A gpt-oss file in MXFP4 has its experts in MXFP4 and its other 2-D
// weights in BF16, as llama.cpp's converter writes gpt-oss's release (its
// experts arrive in MXFP4, the rest in BF16, kept so by --outtype auto).
func (m *Model) weightType(name string, rowLen int) gguf.TensorType {
	if m.Config.Arch == "gpt-oss" && m.Config.Type == gguf.TypeMXFP4 && !strings.Contains(name, "_exps.") {
		return gguf.TypeBF16
	}
	for _, t := range []gguf.TensorType{m.Config.Type, gguf.TypeQ8_0, gguf.TypeF16} {
		if rowLen%t.BlockSize() == 0 {
			if t != m.Config.Type {
				m.Fallbacks = append(m.Fallbacks, Fallback{Tensor: name, RowLen: rowLen, Type: t})
			}
			return t
		}
	}
	panic("unreachable: F16 has block size 1")
}

// tensorSeed derives a tensor's seed from the model seed and its name, so
// adding a tensor never changes the values of another.
func tensorSeed(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return mix64(seed ^ mix64(h.Sum64()))
}

// mix64 is splitmix64's finalizer: a bijection that spreads every input bit.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

const golden = 0x9e3779b97f4a7c15 // splitmix64's increment

// fillRow writes row r of t into dst (len(dst) == shape[0]). z is the sum
// of four 16-bit uniforms from one splitmix64 draw (Irwin-Hall, close to a
// normal, bounded at ±3.5 std), centered and scaled to unit variance. Every
// float32 operation is rounded explicitly, so no platform may fuse them and
// the values are the same everywhere.
func (t *tensorSpec) fillRow(r int, dst []float32) {
	const (
		center = 2 * 65535                    // mean of the sum
		unit   = 1.7320508075688772 / 65536.0 // 1/std of the sum: sqrt(12/4)/65536
	)
	if t.values != nil {
		copy(dst, t.values[r*len(dst):])
		return
	}
	scale := float32(float64(t.std) * unit)
	state := mix64(t.seed + uint64(r+1)*golden)
	for j := range dst {
		state += golden
		x := mix64(state)
		s := x&0xffff + x>>16&0xffff + x>>32&0xffff + x>>48
		z := float32(float32(int64(s)-center) * scale)
		dst[j] = float32(t.mean + z)
	}
}

// batchBytes is the encoded size a batch of rows aims at: large enough to
// share out among cores, small enough to keep memory low.
const batchBytes = 4 << 20

// write generates, encodes and writes t a batch of rows at a time, the
// rows of a batch shared out among the cores.
func (t *tensorSpec) write(w io.Writer) error {
	rowLen := int(t.shape[0])
	rows := int(t.elements() / int64(rowLen))
	rowBytes := int(t.typ.RowBytes(int64(rowLen)))
	perBatch := max(1, batchBytes/rowBytes)
	workers := min(runtime.GOMAXPROCS(0), perBatch)
	buf := make([]byte, min(perBatch, rows)*rowBytes)
	scratch := make([][]float32, workers)
	for i := range scratch {
		scratch[i] = make([]float32, rowLen)
	}
	for first := 0; first < rows; first += perBatch {
		n := min(perBatch, rows-first)
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for k := range workers {
			lo, hi := n*k/workers, n*(k+1)/workers
			wg.Go(func() {
				for r := lo; r < hi; r++ {
					t.fillRow(first+r, scratch[k])
					if err := gguf.Quantize(t.typ, scratch[k], buf[r*rowBytes:(r+1)*rowBytes]); err != nil {
						errs[k] = err
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if _, err := w.Write(buf[:n*rowBytes]); err != nil {
			return err
		}
	}
	return nil
}

// Row returns row r of the named tensor as F32, exactly the values the
// file's tensor encodes (before quantization).
func (m *Model) Row(name string, r int) ([]float32, error) {
	for i := range m.tensors {
		t := &m.tensors[i]
		if t.name != name {
			continue
		}
		rows := int(t.elements() / int64(t.shape[0]))
		if r < 0 || r >= rows {
			return nil, fmt.Errorf("synth: tensor %s has %d rows, not %d", name, rows, r)
		}
		dst := make([]float32, t.shape[0])
		t.fillRow(r, dst)
		return dst, nil
	}
	return nil, fmt.Errorf("synth: no tensor %s", name)
}

// attentionTensors plans layer p's attention as llama's and the families
// like it have it (its norm first; Gemma's post-norm last), resid scaling
// what it adds to the residual stream.
func (m *Model) attentionTensors(p string, resid float32, pl plan) {
	c := m.Config
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	pl.norm(p+"attn_norm.weight", c.Embd)
	if c.Arch == "phi3" {
		pl.weight(p+"attn_qkv.weight", c.Embd, qDim+2*kvDim, invSqrt(c.Embd)) // [embd, q | k | v]
	} else {
		pl.weight(p+"attn_q.weight", c.Embd, qDim, invSqrt(c.Embd)) // [embd, heads*head_dim]
		pl.weight(p+"attn_k.weight", c.Embd, kvDim, invSqrt(c.Embd))
		pl.weight(p+"attn_v.weight", c.Embd, kvDim, invSqrt(c.Embd))
	}
	if c.Arch == "qwen2" || c.Arch == "qwen2moe" || c.Arch == "qwen2vl" || c.Arch == "glm4moe" || c.Biases {
		pl.bias(p+"attn_q.bias", qDim)
		pl.bias(p+"attn_k.bias", kvDim)
		pl.bias(p+"attn_v.bias", kvDim)
	}
	if c.Arch == "qwen3" || c.Arch == "qwen3moe" || c.Arch == "qwen3vl" || c.Arch == "qwen3vlmoe" || c.Arch == "gemma3" || c.Arch == "gemma-embedding" || c.Arch == "hunyuan-dense" || c.Arch == "hunyuan-moe" || c.Arch == "dots1" || c.Arch == "exaone-moe" || c.Arch == "afmoe" || c.QKNorm {
		pl.norm(p+"attn_q_norm.weight", c.HeadDim) // per head, shared by all heads
		pl.norm(p+"attn_k_norm.weight", c.HeadDim)
	}
	if c.Arch == "olmoe" || c.Arch == "minimax-m2" {
		pl.norm(p+"attn_q_norm.weight", qDim) // over the whole projection
		pl.norm(p+"attn_k_norm.weight", kvDim)
	}
	pl.weight(p+"attn_output.weight", qDim, c.Embd, resid*invSqrt(qDim)/2) // [heads*head_dim, embd]
	if c.Biases {
		pl.bias(p+"attn_output.bias", c.Embd)
	}
	if c.Arch == "afmoe" {
		pl.weight(p+"attn_gate.weight", c.Embd, qDim, invSqrt(c.Embd)) // the output's gate, from the normed input
	}
	if isGemma(c.Arch) || c.Arch == "afmoe" {
		pl.norm(p+"post_attention_norm.weight", c.Embd) // of the attention output, before the residual add
	}
}
