package synth

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// writeTiny writes the tiny preset with the given arch, type and seed,
// after edit (if any) changes the configuration, and returns its path.
func writeTiny(t *testing.T, arch string, typ gguf.TensorType, seed uint64, edit func(*Config)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("tiny-%s-%s-%d.gguf", arch, typ, seed))
	if err := WriteTiny(path, arch, typ, seed, edit); err != nil {
		t.Fatal(err)
	}
	return path
}

func open(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// values returns a tensor of f decoded to F32.
func values(t *testing.T, f *gguf.File, name string) []float32 {
	t.Helper()
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("%s: no tensor %s", f.Path, name)
	}
	dst := make([]float32, ti.Elements())
	if err := gguf.Dequantize(ti.Type, f.TensorData(ti), dst); err != nil {
		t.Fatalf("%s: %s: %v", f.Path, name, err)
	}
	return dst
}

// relRMS is the RMS of got-want relative to the RMS of want.
func relRMS(got, want []float32) float64 {
	var d2, w2 float64
	for i := range want {
		d := float64(got[i]) - float64(want[i])
		d2 += d * d
		w2 += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(d2 / w2)
}

type wantTensor struct {
	name  string
	shape []uint64
	typ   gguf.TensorType
}

// checkTensors fails t unless f's tensors are want's, in order.
func checkTensors(t *testing.T, f *gguf.File, want []wantTensor) {
	t.Helper()
	var got []wantTensor
	for _, ti := range f.Tensors {
		got = append(got, wantTensor{ti.Name, ti.Shape, ti.Type})
	}
	if !slices.EqualFunc(got, want, func(a, b wantTensor) bool {
		return a.name == b.name && a.typ == b.typ && slices.Equal(a.shape, b.shape)
	}) {
		t.Errorf("tensors:\n got %v\nwant %v", got, want)
	}
}

// expectedTensors spells out llama.cpp's tensor list for the tiny preset
// (embd 256, 2 layers, 4 heads of 64, 2 KV heads, ffn 512, vocab 512).
func expectedTensors(arch string, typ gguf.TensorType) []wantTensor {
	f32 := gguf.TypeF32
	ts := []wantTensor{{"token_embd.weight", []uint64{256, 512}, typ}}
	for l := range 2 {
		p := fmt.Sprintf("blk.%d.", l)
		if arch == "olmo2" {
			ts = append(ts,
				wantTensor{p + "attn_q.weight", []uint64{256, 256}, typ},
				wantTensor{p + "attn_k.weight", []uint64{256, 128}, typ},
				wantTensor{p + "attn_v.weight", []uint64{256, 128}, typ},
				wantTensor{p + "attn_output.weight", []uint64{256, 256}, typ},
				wantTensor{p + "attn_q_norm.weight", []uint64{256}, f32}, // whole rows, not heads
				wantTensor{p + "attn_k_norm.weight", []uint64{128}, f32},
				wantTensor{p + "post_attention_norm.weight", []uint64{256}, f32},
				wantTensor{p + "ffn_gate.weight", []uint64{256, 512}, typ},
				wantTensor{p + "ffn_up.weight", []uint64{256, 512}, typ},
				wantTensor{p + "ffn_down.weight", []uint64{512, 256}, typ},
				wantTensor{p + "post_ffw_norm.weight", []uint64{256}, f32})
			continue
		}
		ts = append(ts,
			wantTensor{p + "attn_norm.weight", []uint64{256}, f32},
			wantTensor{p + "attn_q.weight", []uint64{256, 256}, typ},
			wantTensor{p + "attn_k.weight", []uint64{256, 128}, typ},
			wantTensor{p + "attn_v.weight", []uint64{256, 128}, typ})
		if arch == "qwen2" {
			ts = append(ts,
				wantTensor{p + "attn_q.bias", []uint64{256}, f32},
				wantTensor{p + "attn_k.bias", []uint64{128}, f32},
				wantTensor{p + "attn_v.bias", []uint64{128}, f32})
		}
		if arch == "qwen3" {
			ts = append(ts,
				wantTensor{p + "attn_q_norm.weight", []uint64{64}, f32},
				wantTensor{p + "attn_k_norm.weight", []uint64{64}, f32})
		}
		ts = append(ts,
			wantTensor{p + "attn_output.weight", []uint64{256, 256}, typ},
			wantTensor{p + "ffn_norm.weight", []uint64{256}, f32},
			wantTensor{p + "ffn_gate.weight", []uint64{256, 512}, typ},
			wantTensor{p + "ffn_up.weight", []uint64{256, 512}, typ},
			wantTensor{p + "ffn_down.weight", []uint64{512, 256}, typ})
	}
	return append(ts,
		wantTensor{"output_norm.weight", []uint64{256}, f32},
		wantTensor{"output.weight", []uint64{256, 512}, typ})
}

func TestStructure(t *testing.T) {
	types := []gguf.TensorType{gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0,
		gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ6_K}
	fileType := map[gguf.TensorType]int64{gguf.TypeF32: 0, gguf.TypeF16: 1, gguf.TypeBF16: 32,
		gguf.TypeQ8_0: 7, gguf.TypeQ4_0: 2, gguf.TypeQ4_K: 14, gguf.TypeQ6_K: 18}
	for _, arch := range []string{"llama", "qwen2", "qwen3"} { // the others: gemma_test.go, TestFamilyStructure, TestEncoderStructure
		for _, typ := range types {
			t.Run(arch+"/"+typ.String(), func(t *testing.T) {
				f := open(t, writeTiny(t, arch, typ, 7, nil))
				eps := 1e-6
				if arch == "llama" || arch == "mistral3" {
					eps = 1e-5
				}
				wantKV := map[string]any{
					"general.architecture":                     arch,
					"general.file_type":                        fileType[typ],
					"general.name":                             fmt.Sprintf("synth-%s-2x256-%s", arch, typ),
					arch + ".context_length":                   int64(2048),
					arch + ".embedding_length":                 int64(256),
					arch + ".block_count":                      int64(2),
					arch + ".feed_forward_length":              int64(512),
					arch + ".attention.head_count":             int64(4),
					arch + ".attention.head_count_kv":          int64(2),
					arch + ".rope.dimension_count":             int64(64),
					arch + ".vocab_size":                       int64(512),
					arch + ".rope.freq_base":                   10000.0,
					arch + ".attention.layer_norm_rms_epsilon": float64(float32(eps)),
					"tokenizer.ggml.model":                     "llama",
					"tokenizer.ggml.bos_token_id":              int64(1),
					"tokenizer.ggml.eos_token_id":              int64(2),
					"tokenizer.ggml.unknown_token_id":          int64(0),
				}
				checkKeys(t, f, wantKV)
				checkTensors(t, f, expectedTensors(arch, typ))
			})
		}
	}
}

func TestByteVocab(t *testing.T) {
	f := open(t, writeTiny(t, "llama", gguf.TypeQ8_0, 1, nil))
	v, _ := f.Get("tokenizer.ggml.tokens")
	tokens := v.(gguf.Array).Values.([]string)
	v, _ = f.Get("tokenizer.ggml.token_type")
	types := v.(gguf.Array).Values.([]int32)
	v, _ = f.Get("tokenizer.ggml.scores")
	scores := v.(gguf.Array).Values.([]float32)
	if len(tokens) != 512 || len(types) != 512 || len(scores) != 512 {
		t.Fatalf("%d tokens, %d types, %d scores, want 512 each", len(tokens), len(types), len(scores))
	}
	for i, want := range map[int]struct {
		text string
		typ  int32
	}{0: {"<unk>", 2}, 1: {"<s>", 3}, 2: {"</s>", 3}, 3: {"<0x00>", 6}, 3 + 0x41: {"<0x41>", 6},
		258: {"<0xFF>", 6}, 259: {"\u2581", 1}, 260: {"[PAD0]", 1}, 511: {"[PAD251]", 1}} {
		if tokens[i] != want.text || types[i] != want.typ {
			t.Errorf("token %d = %q type %d, want %q type %d", i, tokens[i], types[i], want.text, want.typ)
		}
	}
	if add, _ := f.Get("tokenizer.ggml.add_bos_token"); add != true {
		t.Errorf("add_bos_token = %v, want true", add)
	}
}

func TestVocabFromFile(t *testing.T) {
	vocab, err := LoadVocab(fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if vocab.Len() != 32000 {
		t.Fatalf("llama-spm vocabulary has %d tokens, want 32000", vocab.Len())
	}
	for _, tc := range []struct {
		name      string
		vocabSize int
		want      int
	}{{"own size", 0, 32000}, {"padded", 32010, 32010}} {
		t.Run(tc.name, func(t *testing.T) {
			f := open(t, writeTiny(t, "llama", gguf.TypeQ8_0, 1, func(c *Config) {
				c.Vocab, c.VocabSize, c.Layers = vocab, tc.vocabSize, 1
			}))
			if n, _ := f.Int("llama.vocab_size"); n != int64(tc.want) {
				t.Errorf("llama.vocab_size = %d, want %d", n, tc.want)
			}
			emb, _ := f.Tensor("token_embd.weight")
			if emb.Shape[1] != uint64(tc.want) {
				t.Errorf("token_embd shape %v, want [256 %d]", emb.Shape, tc.want)
			}
			for _, key := range []string{"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"} {
				v, _ := f.Get(key)
				if n := v.(gguf.Array).Len(); n != tc.want {
					t.Errorf("%s has %d entries, want %d", key, n, tc.want)
				}
			}
			v, _ := f.Get("tokenizer.ggml.tokens")
			tokens := v.(gguf.Array).Values.([]string)
			if tokens[1] != "<s>" {
				t.Errorf("token 1 = %q, want <s>", tokens[1])
			}
			if tc.want > 32000 && (tokens[32000] != "[PAD0]" || tokens[32009] != "[PAD9]") {
				t.Errorf("tokens 32000, 32009 = %q, %q, want [PAD0], [PAD9]", tokens[32000], tokens[32009])
			}
		})
	}
	if _, err := New(Config{Arch: "llama", Embd: 64, Layers: 1, Heads: 1, HeadsKV: 1, FFN: 64, Ctx: 64,
		Vocab: vocab, VocabSize: 100}); !errors.Is(err, ErrConfig) {
		t.Errorf("vocab size below the vocabulary's: err = %v, want ErrConfig", err)
	}
}

func TestDeterminism(t *testing.T) {
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ4_K} {
		a, err := os.ReadFile(writeTiny(t, "qwen2", typ, 3, nil))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(writeTiny(t, "qwen2", typ, 3, nil))
		c, _ := os.ReadFile(writeTiny(t, "qwen2", typ, 4, nil))
		if !bytes.Equal(a, b) {
			t.Errorf("%v: two writes with seed 3 differ", typ)
		}
		if bytes.Equal(a, c) {
			t.Errorf("%v: seeds 3 and 4 give the same file", typ)
		}
	}
	// Rows are shared out among the cores; their number must not matter.
	many, _ := os.ReadFile(writeTiny(t, "llama", gguf.TypeQ6_K, 3, nil))
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one, _ := os.ReadFile(writeTiny(t, "llama", gguf.TypeQ6_K, 3, nil))
	if !bytes.Equal(many, one) {
		t.Errorf("the file written on one core differs from the one written on all")
	}
}

// TestSameModelAcrossTypes checks that the seed fixes the F32 values: a Q8_0
// file decodes to the F32 file's values within Q8_0's rounding, norms and
// biases are identical, and Model.Row gives the F32 file's rows.
func TestSameModelAcrossTypes(t *testing.T) {
	f32 := open(t, writeTiny(t, "qwen2", gguf.TypeF32, 5, nil))
	q8 := open(t, writeTiny(t, "qwen2", gguf.TypeQ8_0, 5, nil))
	for _, ti := range f32.Tensors {
		want := values(t, f32, ti.Name)
		got := values(t, q8, ti.Name)
		if len(ti.Shape) == 1 {
			if !slices.Equal(got, want) {
				t.Errorf("%s: F32 vectors differ between the F32 and Q8_0 files", ti.Name)
			}
			continue
		}
		// Q8_0 rounds each value to a step d = amax/127 of its block of 32,
		// and d to fp16 (relative error 2^-11, up to 127 times over): 0.57 d.
		for b := 0; b < len(want); b += 32 {
			var amax float32
			for _, v := range want[b : b+32] {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			for j := b; j < b+32; j++ {
				if d := math.Abs(float64(got[j] - want[j])); d > float64(amax)/127*0.57+1e-7 {
					t.Fatalf("%s[%d]: Q8_0 %g, F32 %g: off by more than 0.57 of its step %g", ti.Name, j, got[j], want[j], amax/127)
				}
			}
		}
		if e := relRMS(got, want); e > 0.01 {
			t.Errorf("%s: Q8_0 relative RMS error %.4f, want < 0.01", ti.Name, e)
		}
	}

	m, err := New(Config{Arch: "qwen2", Embd: 256, Layers: 2, Heads: 4, HeadsKV: 2, FFN: 512, Ctx: 2048,
		VocabSize: 512, RopeBase: 10000, Type: gguf.TypeQ8_0, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	ffn := values(t, f32, "blk.1.ffn_down.weight")
	row, err := m.Row("blk.1.ffn_down.weight", 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(row, ffn[3*512:4*512]) {
		t.Errorf("Model.Row differs from the file's row")
	}
}

// TestWeightScales checks the scales that keep a forward pass sane.
func TestWeightScales(t *testing.T) {
	f := open(t, writeTiny(t, "llama", gguf.TypeF32, 1, nil))
	for _, tc := range []struct {
		name      string
		mean, std float64
	}{
		{"token_embd.weight", 0, 1},
		{"blk.0.attn_q.weight", 0, 1 / 16.0},
		{"blk.0.attn_output.weight", 0, 1 / 32.0},
		{"blk.1.ffn_down.weight", 0, 0.5 / math.Sqrt(512)},
		{"output.weight", 0, 2 / 16.0},
		{"blk.0.attn_norm.weight", 1, 0.05},
	} {
		v := values(t, f, tc.name)
		var s, s2 float64
		for _, x := range v {
			s += float64(x)
			s2 += float64(x) * float64(x)
		}
		mean := s / float64(len(v))
		std := math.Sqrt(s2/float64(len(v)) - mean*mean)
		if math.Abs(mean-tc.mean) > 0.2*tc.std || math.Abs(std/tc.std-1) > 0.1 {
			t.Errorf("%s: mean %.4f std %.4f, want about %.4f and %.4f", tc.name, mean, std, tc.mean, tc.std)
		}
	}
}

func TestFallback(t *testing.T) {
	// embd 320 is a multiple of 32 but not of 256: Q4_K falls back to Q8_0
	// for every matrix whose rows have 320 values; ffn_down (rows of 512) keeps Q4_K.
	path := writeTiny(t, "llama", gguf.TypeQ4_K, 1, func(c *Config) { c.Embd, c.Heads, c.HeadsKV = 320, 5, 5 })
	f := open(t, path)
	for _, ti := range f.Tensors {
		want := gguf.TypeQ8_0
		switch {
		case len(ti.Shape) == 1:
			want = gguf.TypeF32
		case ti.Shape[0] == 512:
			want = gguf.TypeQ4_K
		}
		if ti.Type != want {
			t.Errorf("%s %v: type %v, want %v", ti.Name, ti.Shape, ti.Type, want)
		}
	}
	cfg, _ := Preset("smollm-135m")
	cfg.Type = gguf.TypeQ6_K
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Every matrix but the 30 ffn_down (rows of 1536) has rows of 576; tied, so no output.weight.
	if n := len(m.Fallbacks); n != 1+30*6 {
		t.Errorf("smollm-135m Q6_K: %d fallbacks, want %d", n, 1+30*6)
	}
}

func TestConfigErrors(t *testing.T) {
	base := Config{Arch: "llama", Embd: 64, Layers: 1, Heads: 4, HeadsKV: 2, FFN: 128, Ctx: 64, VocabSize: 300}
	for _, tc := range []struct {
		name string
		edit func(*Config)
	}{
		{"arch", func(c *Config) { c.Arch = "gpt2" }},
		{"heads", func(c *Config) { c.Heads = 3 }},
		{"kv heads", func(c *Config) { c.HeadsKV = 3 }},
		{"odd head size", func(c *Config) { c.HeadDim = 15 }},
		{"vocab size", func(c *Config) { c.VocabSize = 100 }},
		{"layers", func(c *Config) { c.Layers = 0 }},
		{"type", func(c *Config) { c.Type = gguf.TypeIQ2_XS }},
		{"rope scale", func(c *Config) { c.RopeScale = -2 }},
		{"gemma untied", func(c *Config) { c.Arch = "gemma2" }},
		{"gemma window", func(c *Config) { c.Arch, c.Tied, c.Window = "gemma3", true, -1 }},
		{"gemma3 attention soft-cap", func(c *Config) { c.Arch, c.Tied, c.AttnSoftcap = "gemma3", true, 50 }},
		{"odd rope dims", func(c *Config) { c.RopeDims = 7 }},
		{"rope dims above the head", func(c *Config) { c.RopeDims = 32 }},
		{"longrope on llama", func(c *Config) { c.OrigCtx = 32 }},
		{"longrope past ctx", func(c *Config) { c.Arch, c.OrigCtx = "phi3", 128 }},
		{"window on llama", func(c *Config) { c.Window = 16 }},
		{"negative phi3 window", func(c *Config) { c.Arch, c.Window = "phi3", -1 }},
	} {
		c := base
		tc.edit(&c)
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err = %v, want ErrConfig", tc.name, err)
		}
	}
	if _, err := New(base); err != nil {
		t.Errorf("base config: %v", err)
	}
	if _, err := Preset("nope"); !errors.Is(err, ErrConfig) {
		t.Errorf("unknown preset: err = %v", err)
	}
}

// checkKeys fails for each key of want whose value in f differs (a
// string, int64 or float64, as want's value is).
func checkKeys(t *testing.T, f *gguf.File, want map[string]any) {
	t.Helper()
	for key, w := range want {
		var got any
		switch w.(type) {
		case string:
			got = f.String(key)
		case int64:
			got, _ = f.Int(key)
		case float64:
			got, _ = f.Float(key)
		}
		if got != w {
			t.Errorf("%s = %v, want %v", key, got, w)
		}
	}
}
