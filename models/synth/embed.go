package synth

import (
	"fmt"
	"math"

	"folio/models/gguf"
)

// Embedding models: encoders whose output is a pooled vector, not logits.
// Each has the tensors and keys llama.cpp's loader reads for it (its
// src/models/<arch>.cpp); none has an output matrix.

// encoder plans one embedding architecture.
type encoder struct {
	tensors  func(c Config, p tensorPlan)
	metadata func(c Config, set func(string, any))
}

// embeds reports whether arch is an embedding model: one of encoders, or
// gemma-embedding (Gemma 3's layers, planned with them, plus dense
// projections after pooling).
func embeds(arch string) bool {
	_, enc := encoders[arch]
	return enc || arch == "gemma-embedding"
}

// encoders are the BERT-shaped embedding architectures New writes.
var encoders = map[string]encoder{
	"bert":       {tensors: bertTensors, metadata: bertMetadata},
	"nomic-bert": {tensors: bertTensors, metadata: bertMetadata},
}

// tensorPlan adds tensors to a model's plan: a 2-D weight of Config.Type
// ([rowLen, rows] in GGUF order) or of F32, a norm's scale (about 1) or a
// bias (about 0), both F32.
type tensorPlan struct {
	weight     func(name string, rowLen, rows int, std float32)
	f32        func(name string, rowLen, rows int, std float32) // a 2-D weight kept F32
	norm, bias func(name string, n int)
}

// poolings are llama.cpp's enum llama_pooling_type by Config.Pooling.
var poolings = map[string]uint32{"none": 0, "mean": 1, "cls": 2, "last": 3}

// bertTokenTypes is the number of token types ("sentence A" and "B") of
// BERT models; llama.cpp adds the first one's row to every token.
const bertTokenTypes = 2

// bertTensors: BERT (all-MiniLM, bge, mxbai) and nomic-bert. Token, type
// and (bert) position embeddings summed and layer-normed; per layer
// attention and a feed-forward, each added to its input and layer-normed
// (post-norm). BERT has separate Q, K, V and a GELU feed-forward with
// biases everywhere; nomic-bert a fused QKV, rope, and a SwiGLU
// feed-forward without biases.
func bertTensors(c Config, p tensorPlan) {
	qDim, kvDim := c.Heads*c.HeadDim, c.HeadsKV*c.HeadDim
	inv := func(n int) float32 { return float32(1 / math.Sqrt(float64(n))) }
	nomic := c.Arch == "nomic-bert"
	p.weight("token_embd.weight", c.Embd, c.VocabSize, 1)    // [embd, vocab]
	p.f32("token_types.weight", c.Embd, bertTokenTypes, 0.5) // [embd, types]; F32: llama.cpp adds its first row as is
	if !nomic {
		p.weight("position_embd.weight", c.Embd, c.Ctx, 0.5) // [embd, ctx]
	}
	p.norm("token_embd_norm.weight", c.Embd)
	p.bias("token_embd_norm.bias", c.Embd)
	for l := range c.Layers {
		b := fmt.Sprintf("blk.%d.", l)
		if nomic {
			p.weight(b+"attn_qkv.weight", c.Embd, qDim+2*kvDim, inv(c.Embd)) // [embd, q+k+v]
		} else {
			p.weight(b+"attn_q.weight", c.Embd, qDim, inv(c.Embd))
			p.bias(b+"attn_q.bias", qDim)
			p.weight(b+"attn_k.weight", c.Embd, kvDim, inv(c.Embd))
			p.bias(b+"attn_k.bias", kvDim)
			p.weight(b+"attn_v.weight", c.Embd, kvDim, inv(c.Embd))
			p.bias(b+"attn_v.bias", kvDim)
		}
		p.weight(b+"attn_output.weight", qDim, c.Embd, inv(qDim)) // [q, embd]
		if !nomic {
			p.bias(b+"attn_output.bias", c.Embd)
		}
		p.norm(b+"attn_output_norm.weight", c.Embd)
		p.bias(b+"attn_output_norm.bias", c.Embd)
		p.weight(b+"ffn_up.weight", c.Embd, c.FFN, inv(c.Embd)) // [embd, ffn]
		if nomic {
			p.weight(b+"ffn_gate.weight", c.Embd, c.FFN, inv(c.Embd))
		} else {
			p.bias(b+"ffn_up.bias", c.FFN)
		}
		p.weight(b+"ffn_down.weight", c.FFN, c.Embd, inv(c.FFN)) // [ffn, embd]
		if !nomic {
			p.bias(b+"ffn_down.bias", c.Embd)
		}
		p.norm(b+"layer_output_norm.weight", c.Embd)
		p.bias(b+"layer_output_norm.bias", c.Embd)
	}
}

func bertMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"attention.layer_norm_epsilon", c.NormEps)
	set(a+"attention.causal", false)
	set(a+"pooling_type", poolings[c.Pooling])
	if c.Arch == "nomic-bert" {
		set(a+"rope.dimension_count", uint32(c.HeadDim))
		set(a+"rope.freq_base", c.RopeBase)
	}
	set("tokenizer.ggml.token_type_count", uint32(bertTokenTypes))
}

// EmbeddingGemma 300M: Gemma 3's layers (one KV head, heads of 256, a
// 512-token window on five of every six layers) as an encoder, mean
// pooling, then 768 → 3072 → 768.
var embeddingGemma300M = Config{Arch: "gemma-embedding", Embd: 768, Layers: 24, Heads: 3, HeadsKV: 1, HeadDim: 256,
	FFN: 1152, Ctx: 2048, VocabSize: 262144, Tied: true, RopeBase: 1000000, Window: 512, Dense: 3072, Pooling: "mean"}

// gemmaEmbeddingTiny: gemma3's tiny shape without its rope scaling, and
// dense projections of 512.
func gemmaEmbeddingTiny(c *Config) {
	gemma3Tiny(c)
	c.RopeScale, c.Dense = 0, 512
}

// gemmaEmbeddingMetadata: pooling_type and the widths of the dense
// projections, as llama.cpp's converter writes them (with
// --sentence-transformers-dense-modules).
func gemmaEmbeddingMetadata(c Config, set func(string, any)) {
	a := c.Arch + "."
	set(a+"pooling_type", poolings[c.Pooling])
	if c.Dense > 0 {
		set(a+"dense_2_feat_in", uint32(c.Embd))
		set(a+"dense_2_feat_out", uint32(c.Dense))
		set(a+"dense_3_feat_in", uint32(c.Dense))
		set(a+"dense_3_feat_out", uint32(c.Embd))
	}
}

// WordPieceVocab returns a small BERT vocabulary (tokenizer.ggml.model
// "bert"): [PAD], [UNK], [CLS], [SEP], [MASK], then each printable ASCII
// character as a word start ("▁c") and as a continuation ("c"). Lowercased
// ASCII text tokenizes to one token per character; anything else is [UNK].
func WordPieceVocab() *Vocab {
	tokens := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	types := []int32{tokenControl, tokenUnknown, tokenControl, tokenControl, tokenControl}
	for _, prefix := range []string{"\u2581", ""} {
		for c := '!'; c <= '~'; c++ {
			tokens = append(tokens, prefix+string(c))
			types = append(types, tokenNormal)
		}
	}
	scores := make([]float32, len(tokens))
	return &Vocab{tokens: len(tokens), kv: []gguf.KV{
		{Key: "tokenizer.ggml.model", Value: "bert"},
		{Key: "tokenizer.ggml.pre", Value: "default"},
		{Key: "tokenizer.ggml.tokens", Value: gguf.Array{Elem: gguf.ValueString, Values: tokens}},
		{Key: "tokenizer.ggml.scores", Value: gguf.Array{Elem: gguf.ValueFloat32, Values: scores}},
		{Key: "tokenizer.ggml.token_type", Value: gguf.Array{Elem: gguf.ValueInt32, Values: types}},
		{Key: "tokenizer.ggml.padding_token_id", Value: uint32(0)},
		{Key: "tokenizer.ggml.unknown_token_id", Value: uint32(1)},
		{Key: "tokenizer.ggml.bos_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.cls_token_id", Value: uint32(2)},
		{Key: "tokenizer.ggml.seperator_token_id", Value: uint32(3)},
		{Key: "tokenizer.ggml.mask_token_id", Value: uint32(4)},
	}}
}
