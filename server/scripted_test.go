package server_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// scripted describes a model whose greedy reply is known: a llama-shaped
// model whose blocks add nothing (their output projections are zero), so
// the logits at a position depend on its token alone, and whose output
// matrix makes each token of a chain predict the next. After the prompt's
// last token (start), it writes reply, one vocabulary token per piece,
// then end. Rendered through a family's chat template, it drives /api/chat
// end to end with a reply chosen by the test (a tool call in the family's
// own tokens), which random weights cannot.
type scripted struct {
	name     string   // general.name; "": "scripted"
	template string   // tokenizer.chat_template
	bos, eos string   // their texts; control tokens
	specials []string // the template's other control tokens
	start    string   // the prompt's last token: a special, or one byte ("\n")
	reply    []string // the reply's tokens: specials, or plain text (a space as ▁)
	end      string   // the token after the reply, a special; "": eos
}

// write writes the model to path: an SPM vocabulary of <unk>, bos, eos,
// the 256 byte tokens, ▁, the specials and the reply's plain pieces.
func (s scripted) write(t *testing.T, path string) {
	t.Helper()
	tokens := []string{"<unk>", s.bos, s.eos}
	types := []int32{2, 3, 3}
	ids := map[string]int{}
	add := func(text string, typ int32) {
		if _, dup := ids[text]; dup {
			return
		}
		ids[text] = len(tokens)
		tokens, types = append(tokens, text), append(types, typ)
	}
	ids[s.bos], ids[s.eos] = 1, 2
	for b := range 256 {
		add(fmt.Sprintf("<0x%02X>", b), 6)
	}
	add("\u2581", 1)
	for _, sp := range s.specials {
		add(sp, 3)
	}
	for _, p := range s.reply {
		add(p, 1)
	}
	id := func(text string) int {
		if i, ok := ids[text]; ok {
			return i
		}
		if len(text) == 1 {
			return ids[fmt.Sprintf("<0x%02X>", text[0])]
		}
		t.Fatalf("scripted: %q is not a token", text)
		return 0
	}
	// The chain: start → reply[0] → … → eos; each token once.
	chain := []int{id(s.start)}
	for _, p := range s.reply {
		chain = append(chain, id(p))
	}
	end := s.eos
	if s.end != "" {
		end = s.end
	}
	chain = append(chain, id(end))
	seen := map[int]bool{}
	for _, c := range chain[:len(chain)-1] {
		if seen[c] {
			t.Fatalf("scripted: token %q comes twice in the chain; the reply must not repeat a token", tokens[c])
		}
		seen[c] = true
	}

	const embd, heads, headsKV, ffn = 128, 4, 2, 128
	vocab := len(tokens)
	w := gguf.NewWriter()
	set := w.Set
	set("general.architecture", "llama")
	name := s.name
	if name == "" {
		name = "scripted"
	}
	set("general.name", name)
	set("general.file_type", uint32(0))
	set("llama.vocab_size", uint32(vocab))
	set("llama.context_length", uint32(8192))
	set("llama.embedding_length", uint32(embd))
	set("llama.block_count", uint32(1))
	set("llama.feed_forward_length", uint32(ffn))
	set("llama.attention.head_count", uint32(heads))
	set("llama.attention.head_count_kv", uint32(headsKV))
	set("llama.rope.dimension_count", uint32(embd/heads))
	set("llama.rope.freq_base", float32(10000))
	set("llama.attention.layer_norm_rms_epsilon", float32(1e-5))
	set("tokenizer.ggml.model", "llama")
	set("tokenizer.ggml.pre", "default")
	set("tokenizer.ggml.tokens", gguf.Array{Elem: gguf.ValueString, Values: tokens})
	set("tokenizer.ggml.scores", gguf.Array{Elem: gguf.ValueFloat32, Values: make([]float32, vocab)})
	set("tokenizer.ggml.token_type", gguf.Array{Elem: gguf.ValueInt32, Values: types})
	set("tokenizer.ggml.bos_token_id", uint32(1))
	set("tokenizer.ggml.eos_token_id", uint32(2))
	set("tokenizer.ggml.unknown_token_id", uint32(0))
	set("tokenizer.ggml.add_bos_token", false)
	set("tokenizer.ggml.add_space_prefix", false)
	set("tokenizer.chat_template", s.template)

	// Unit embeddings; row j of the output matrix is the embedding of the
	// token that predicts j, so that token's logit for j is √embd (after
	// the final RMS norm) against noise of about 1 for the others.
	rng := rand.New(rand.NewPCG(1, 2))
	emb := make([]float32, vocab*embd)
	for r := range vocab {
		row := emb[r*embd : (r+1)*embd]
		var ss float64
		for i := range row {
			row[i] = float32(rng.NormFloat64())
			ss += float64(row[i] * row[i])
		}
		for i := range row {
			row[i] /= float32(math.Sqrt(ss))
		}
	}
	out := make([]float32, vocab*embd)
	for i := 0; i+1 < len(chain); i++ {
		copy(out[chain[i+1]*embd:(chain[i+1]+1)*embd], emb[chain[i]*embd:(chain[i]+1)*embd])
	}
	ones := make([]float32, embd)
	for i := range ones {
		ones[i] = 1
	}
	tensor := func(name string, v []float32, shape ...uint64) {
		data := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
		}
		w.AddTensor(name, gguf.TypeF32, shape, data)
	}
	zeros := func(n int) []float32 { return make([]float32, n) }
	headDim := embd / heads
	tensor("token_embd.weight", emb, embd, uint64(vocab))
	tensor("blk.0.attn_norm.weight", ones, embd)
	tensor("blk.0.attn_q.weight", zeros(embd*embd), embd, embd)
	tensor("blk.0.attn_k.weight", zeros(embd*headsKV*headDim), embd, uint64(headsKV*headDim))
	tensor("blk.0.attn_v.weight", zeros(embd*headsKV*headDim), embd, uint64(headsKV*headDim))
	tensor("blk.0.attn_output.weight", zeros(embd*embd), embd, embd)
	tensor("blk.0.ffn_norm.weight", ones, embd)
	tensor("blk.0.ffn_gate.weight", zeros(embd*ffn), embd, ffn)
	tensor("blk.0.ffn_up.weight", zeros(embd*ffn), embd, ffn)
	tensor("blk.0.ffn_down.weight", zeros(ffn*embd), ffn, embd)
	tensor("output_norm.weight", ones, embd)
	tensor("output.weight", out, embd, uint64(vocab))
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}

// writeGptoss writes the scripted model as a tiny gpt-oss: synth's random
// blocks (Q/K/V/O biases, sinks, a window of 16 on every other layer,
// YaRN, MXFP4 experts with biases and SwiGLUOAI, the rest BF16) over the
// scripted vocabulary, template, embeddings and output matrix. The
// embeddings are scaled by 16 so that the blocks' outputs perturb the
// chain's logits without deciding them; the test checks that llama.cpp
// continues the prompt with the reply too.
func (s scripted) writeGptoss(t *testing.T, path string) {
	t.Helper()
	donor := path + ".llama"
	s.write(t, donor)
	defer os.Remove(donor)
	v, err := synth.LoadVocab(donor)
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Tiny("gpt-oss", gguf.TypeMXFP4, 7, func(c *synth.Config) {
		c.Vocab, c.VocabSize, c.Embd, c.HeadDim, c.Ctx = v, 0, 128, 64, 8192
	})
	if err != nil {
		t.Fatal(err)
	}
	blocks := path + ".blocks"
	if err := m.WriteFile(blocks); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(blocks)
	fd, err := gguf.Open(donor)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	fb, err := gguf.Open(blocks)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	w := gguf.NewWriter()
	for _, kv := range fb.KV {
		w.Set(kv.Key, kv.Value)
	}
	w.Set("general.name", s.name)
	for _, ti := range fb.Tensors {
		data := fb.TensorData(&ti)
		if ti.Name == "token_embd.weight" || ti.Name == "output.weight" { // the donor's, F32
			d, _ := fd.Tensor(ti.Name)
			data, ti = slices.Clone(fd.TensorData(d)), *d
		}
		if ti.Name == "token_embd.weight" {
			for i := 0; i < len(data); i += 4 {
				binary.LittleEndian.PutUint32(data[i:], math.Float32bits(16*math.Float32frombits(binary.LittleEndian.Uint32(data[i:]))))
			}
		}
		w.AddTensor(ti.Name, ti.Type, ti.Shape, data)
	}
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
}
