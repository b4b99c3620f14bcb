package arch_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// EXAONE 4's windows are llama.cpp's: on three layers of four of the
// 64-layer model (4096 tokens without the key), none on the others
// whatever the file says; multi-token-prediction layers are refused.
func TestExaone4Windows(t *testing.T) {
	for _, c := range []struct {
		layers int
		window uint32
		want   []int // the first four layers' windows
	}{{64, 0, []int{4096, 4096, 4096, 0}}, {64, 512, []int{512, 512, 512, 0}}, {30, 512, nil}} {
		m := loadEdited(t, synth.Config{Arch: "exaone4", Embd: 64, Layers: c.layers, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256},
			func(w *gguf.Writer) {
				if c.window > 0 {
					w.Set("exaone4.attention.sliding_window", c.window)
				}
			})
		got := m.Windows
		if got != nil {
			got = got[:4]
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%d layers, window key %d: windows %v…, want %v…", c.layers, c.window, got, c.want)
		}
	}
	refused(t, synth.Config{Arch: "exaone4", Embd: 64, Layers: 2, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256},
		func(w *gguf.Writer) { w.Set("exaone4.nextn_predict_layers", uint32(1)) }, "multi-token-prediction layers are not supported")
}

// GLM-4's rope pairs adjacent elements, or split halves where the file has
// M-RoPE sections (GLM-4.1V's text model); multi-token-prediction layers
// are refused.
func TestGlm4RopePairing(t *testing.T) {
	for _, sections := range []bool{false, true} {
		m := loadEdited(t, synth.Config{Arch: "glm4", Embd: 64, Layers: 2, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256, RopeDims: 16},
			func(w *gguf.Writer) {
				if sections {
					w.Set("glm4.rope.dimension_sections", gguf.Array{Elem: gguf.ValueInt32, Values: []int32{2, 3, 3, 0}})
				}
			})
		if m.Rope.Neox != sections || m.Rope.Dims != 16 {
			t.Errorf("sections %v: rope neox %v over %d elements, want %v over 16", sections, m.Rope.Neox, m.Rope.Dims, sections)
		}
	}
	refused(t, synth.Config{Arch: "glm4", Embd: 64, Layers: 2, Heads: 2, HeadsKV: 1, FFN: 128, Ctx: 256, RopeDims: 16},
		func(w *gguf.Writer) { w.Set("glm4.nextn_predict_layers", uint32(1)) }, "multi-token-prediction layers are not supported")
}

// loadEdited loads onto the CPU the synthetic model of cfg with edit's
// changes to its file.
func loadEdited(t *testing.T, cfg synth.Config, edit func(w *gguf.Writer)) *arch.Model {
	t.Helper()
	sm, err := synth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := sm.Writer()
	edit(w)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	t.Cleanup(func() { be.Close(); f.Close() })
	m, err := arch.Load(f, be, arch.Options{MaxRows: 8})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// GLM-4.5's keys: its experts weighted by sigmoid unless
// expert_gating_func says softmax, normalized and scaled as the file says,
// a dense first layer, shared experts counted in experts, and the
// multi-token-prediction layers left out of the layers run; values
// llama.cpp would not load are refused, naming the key.
func TestGlm4moeKeys(t *testing.T) {
	cfg, err := synth.ArchPreset("glm4moe", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextN = 1
	m := loadEdited(t, cfg, func(w *gguf.Writer) {})
	if m.Layers != 3 || m.Gating != arch.GatingSigmoid || m.DenseLead != 1 || m.SharedFFN != 256 ||
		m.ExpertWeightsScale != 2.5 || !m.ExpertWeightsNorm {
		t.Errorf("read %d layers, gating %v, %d dense, shared %d, scale %v, norm %v; want 3, sigmoid, 1, 256, 2.5, true",
			m.Layers, m.Gating, m.DenseLead, m.SharedFFN, m.ExpertWeightsScale, m.ExpertWeightsNorm)
	}
	m = loadEdited(t, cfg, func(w *gguf.Writer) { w.Set("glm4moe.expert_gating_func", uint32(1)) })
	if m.Gating != arch.GatingSoftmax {
		t.Errorf("expert_gating_func 1: gating %v, want softmax", m.Gating)
	}
	for key, v := range map[string]any{
		"glm4moe.expert_gating_func":        uint32(4),
		"glm4moe.nextn_predict_layers":      uint32(4),
		"glm4moe.leading_dense_block_count": uint32(4),
		"glm4moe.expert_weights_norm":       "yes",
		"glm4moe.expert_weights_scale":      float32(-1),
	} {
		refused(t, cfg, func(w *gguf.Writer) { w.Set(key, v) }, key)
	}
}

// ERNIE 4.5's MoE keys: the dense first layer and the shared expert's
// width as the file says, softmax weights renormalized; experts every
// other layer, which llama.cpp cannot run either, are refused.
func TestErnieMoEKeys(t *testing.T) {
	cfg, err := synth.ArchPreset("ernie4_5-moe", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) {})
	if m.DenseLead != 1 || m.SharedFFN != 512 || m.Gating != arch.GatingSoftmax || !m.ExpertWeightsNorm || m.ExpertWeightsScale != 0 {
		t.Errorf("read %d dense, shared %d, gating %v, norm %v, scale %v; want 1, 512, softmax, true, 0",
			m.DenseLead, m.SharedFFN, m.Gating, m.ExpertWeightsNorm, m.ExpertWeightsScale)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Set("ernie4_5-moe.interleave_moe_layer_step", uint32(2)) }, "interleave_moe_layer_step is 2")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("ernie4_5-moe.leading_dense_block_count", uint32(9)) }, "leading_dense_block_count = 9")
}

// Hunyuan-A13B's shared expert is as wide as
// expert_shared_feed_forward_length says, feed_forward_length without
// the key; a width of 0 is refused.
func TestHunyuanMoEKeys(t *testing.T) {
	cfg, err := synth.ArchPreset("hunyuan-moe", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.FFN, cfg.SharedFFN = 256, 512
	if m := loadEdited(t, cfg, func(w *gguf.Writer) {}); m.SharedFFN != 512 || m.ExpertFFN != 256 {
		t.Errorf("shared %d, experts %d wide; want 512 and 256", m.SharedFFN, m.ExpertFFN)
	}
	cfg.SharedFFN = 256
	m := loadEdited(t, cfg, func(w *gguf.Writer) { w.Delete("hunyuan-moe.expert_shared_feed_forward_length") })
	if m.SharedFFN != 256 {
		t.Errorf("without the key: shared %d wide, want feed_forward_length's 256", m.SharedFFN)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Set("hunyuan-moe.expert_shared_feed_forward_length", uint32(0)) }, "expert_shared_feed_forward_length = 0")
}

// MiniMax-M2's keys: experts by sigmoid (softmax where
// expert_gating_func says 1), always normalized, feed_forward_length wide
// whatever expert_feed_forward_length says, and the keys llama.cpp does
// not read for this family (a weight scale, shared experts, dense layers)
// left unread; a file without expert_gating_func, which llama.cpp cannot
// run, is refused.
func TestMinimaxM2Keys(t *testing.T) {
	cfg, err := synth.ArchPreset("minimax-m2", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) {
		w.Set("minimax-m2.expert_weights_scale", float32(2.5))
		w.Set("minimax-m2.expert_shared_count", uint32(1))
		w.Set("minimax-m2.leading_dense_block_count", uint32(1))
	})
	if m.Gating != arch.GatingSigmoid || !m.ExpertWeightsNorm || m.ExpertWeightsScale != 0 || m.SharedFFN != 0 || m.DenseLead != 0 ||
		m.ExpertFFN != m.FFN || m.Rope.Dims != m.HeadDim/2 {
		t.Errorf("gating %v, norm %v, scale %v, shared %d, dense %d, experts %d wide of ffn %d, rope %d of %d; want sigmoid, true, 0, 0, 0, ffn, half",
			m.Gating, m.ExpertWeightsNorm, m.ExpertWeightsScale, m.SharedFFN, m.DenseLead, m.ExpertFFN, m.FFN, m.Rope.Dims, m.HeadDim)
	}
	if m := loadEdited(t, cfg, func(w *gguf.Writer) { w.Set("minimax-m2.expert_gating_func", uint32(1)) }); m.Gating != arch.GatingSoftmax {
		t.Errorf("expert_gating_func 1: gating %v, want softmax", m.Gating)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("minimax-m2.expert_gating_func") }, "llama.cpp requires it")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("minimax-m2.expert_gating_func", uint32(3)) }, "expert_gating_func = 3")
}

// dots.llm1's keys: glm4moe's, read as the file says; the gating and the
// shared experts' count, which llama.cpp requires, and fewer KV heads
// than heads, which its loader cannot size, are refused.
func TestDots1Keys(t *testing.T) {
	cfg, err := synth.ArchPreset("dots1", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) {})
	if m.Gating != arch.GatingSigmoid || !m.ExpertWeightsNorm || m.ExpertWeightsScale != 2.5 || m.SharedFFN != 512 || m.DenseLead != 1 {
		t.Errorf("gating %v, norm %v, scale %v, shared %d, dense %d; want sigmoid, true, 2.5, 512, 1",
			m.Gating, m.ExpertWeightsNorm, m.ExpertWeightsScale, m.SharedFFN, m.DenseLead)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("dots1.expert_gating_func") }, "llama.cpp requires it")
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("dots1.expert_shared_count") }, "llama.cpp requires it")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("dots1.attention.head_count_kv", uint32(2)) }, "2 KV heads of 4")
}

// K-EXAONE's keys: glm4moe's experts as the file says, the shared
// expert as wide as expert_shared_feed_forward_length (else the
// experts), three layers of four windowed (128 tokens without
// attention.sliding_window); a file without expert_gating_func, which
// llama.cpp requires, is refused.
func TestExaoneMoEKeys(t *testing.T) {
	cfg, err := synth.ArchPreset("exaone-moe", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) {})
	if m.Gating != arch.GatingSigmoid || !m.ExpertWeightsNorm || m.ExpertWeightsScale != 2.5 || m.SharedFFN != 256 || m.DenseLead != 1 ||
		fmt.Sprint(m.Windows) != "[16 16 16 0]" {
		t.Errorf("gating %v, norm %v, scale %v, shared %d, dense %d, windows %v; want sigmoid, true, 2.5, 256, 1, [16 16 16 0]",
			m.Gating, m.ExpertWeightsNorm, m.ExpertWeightsScale, m.SharedFFN, m.DenseLead, m.Windows)
	}
	m = loadEdited(t, cfg, func(w *gguf.Writer) {
		w.Delete("exaone-moe.expert_shared_feed_forward_length")
		w.Delete("exaone-moe.attention.sliding_window")
		w.Delete("exaone-moe.attention.sliding_window_pattern")
	})
	if m.SharedFFN != m.ExpertFFN || fmt.Sprint(m.Windows) != "[128 128 128 0]" {
		t.Errorf("without the keys: shared %d (experts %d), windows %v; want the experts' width, [128 128 128 0]", m.SharedFFN, m.ExpertFFN, m.Windows)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("exaone-moe.expert_gating_func") }, "llama.cpp requires it")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("exaone-moe.attention.sliding_window", uint32(0)) }, "out of range")
}

// Trinity's keys: experts by sigmoid without expert_gating_func, the µP
// embedding scale, windows on three layers of four where the file has
// attention.sliding_window (none without it); a file without
// expert_shared_count, which llama.cpp requires, is refused.
func TestAfmoeKeys(t *testing.T) {
	cfg, err := synth.ArchPreset("afmoe", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(w *gguf.Writer) { w.Delete("afmoe.expert_gating_func") })
	if m.Gating != arch.GatingSigmoid || !m.AttnGate || m.EmbedScale != 16 || m.SharedFFN != 256 || fmt.Sprint(m.Windows) != "[16 16 16 0]" {
		t.Errorf("gating %v, gate %v, embedding scale %v, shared %d, windows %v; want sigmoid, true, 16, 256, [16 16 16 0]",
			m.Gating, m.AttnGate, m.EmbedScale, m.SharedFFN, m.Windows)
	}
	if m := loadEdited(t, cfg, func(w *gguf.Writer) { w.Delete("afmoe.attention.sliding_window") }); m.Windows != nil {
		t.Errorf("without a window: windows %v, want none", m.Windows)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("afmoe.expert_shared_count") }, "llama.cpp requires it")
}

func TestLlama4Keys(t *testing.T) {
	cfg, err := synth.ArchPreset("llama4", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(*gguf.Writer) {})
	if m.Gating != arch.GatingLogitsSigmoid || !m.ExpertWeightsIn || m.ExpertWeightsNorm || m.SharedFFN != 256 || m.MoEEvery != 2 ||
		m.AttnChunk != 8192 || fmt.Sprint(m.Windows) != "[8192 8192 8192 0]" || m.AttnTemp != 0.1 || m.AttnTempOffset != 1 ||
		m.LocalRope.Base != m.Rope.Base {
		t.Errorf("gating %v, weights in %v, normalized %v, shared %d, experts every %d, chunk %d on %v, temperature %v+%v, local base %v; "+
			"want logits-sigmoid, true, false, 256, 2, 8192 on [8192 8192 8192 0], 0.1+1, %v",
			m.Gating, m.ExpertWeightsIn, m.ExpertWeightsNorm, m.SharedFFN, m.MoEEvery, m.AttnChunk, m.Windows, m.AttnTemp, m.AttnTempOffset,
			m.LocalRope.Base, m.Rope.Base)
	}
	m = loadEdited(t, cfg, func(w *gguf.Writer) {
		w.Set("llama4.rope.freq_base_swa", float32(5000))
		w.Set("llama4.attention.sliding_window_pattern", uint32(2))
	})
	if m.LocalRope.Base != 5000 || fmt.Sprint(m.Windows) != "[8192 0 8192 0]" {
		t.Errorf("chunked layers' rope base %v, windows %v; want 5000, [8192 0 8192 0]", m.LocalRope.Base, m.Windows)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("llama4.expert_feed_forward_length") }, "llama.cpp requires it")
	refused(t, cfg, func(w *gguf.Writer) { w.Delete("llama4.interleave_moe_layer_step") }, "which layers have experts")
	refused(t, cfg, func(w *gguf.Writer) { w.Set("llama4.attention.sliding_window", uint32(0)) }, "MobileLLM")
}

// TestLlama4BlockSize: a K/V block size that does not divide Llama 4's
// chunk is refused before anything is computed, saying what to change.
func TestLlama4BlockSize(t *testing.T) {
	r := openRig(t, synthModel(t, "llama4", gguf.TypeF32), 48, gguf.TypeF32)
	b := &gpu.Batch{BlockSize: 48, Seqs: []gpu.Seq{{Len: 2, Blocks: r.table(0)}}}
	if _, err := r.m.Forward(r.kv, b, []int32{1, 2}, []int32{1}); err == nil || !strings.Contains(err.Error(), "power of 2") {
		t.Errorf("block size 48: err %v, want a refusal naming a power of 2", err)
	}
}

func TestGemma4Keys(t *testing.T) {
	cfg, err := synth.ArchPreset("gemma4", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m := loadEdited(t, cfg, func(*gguf.Writer) {})
	if m.HeadDim != 128 || m.KVHeads != 1 || m.SWAHeadDim != 64 || m.SWAKVHeads != 2 || fmt.Sprint(m.Windows) != "[16 16 16 0]" ||
		m.LocalRope.Dims != 32 || m.LocalRope.Base != 10000 || m.LocalRope.HeadDim != 64 || m.LocalRope.Factors != nil ||
		len(m.Rope.Factors) != 64 || m.Rope.Factors[16] != 1e30 || m.QueryScale != 1 || m.LogitCap != 30 || m.EmbedScale != 16 {
		t.Errorf("heads %d over %d, windowed %d over %d, windows %v, local rope %+v, global factors %d, scale %v, cap %v, embedding %v",
			m.HeadDim, m.KVHeads, m.SWAHeadDim, m.SWAKVHeads, m.Windows, m.LocalRope, len(m.Rope.Factors), m.QueryScale, m.LogitCap, m.EmbedScale)
	}
	if g := m.LayerGroups(); fmt.Sprint(g.KVHeads, g.HeadDims, g.Layers) != "[1 2] [128 64] [1 3]" {
		t.Errorf("groups' shapes %v %v of %v layers, want [1 2] [128 64] of [1 3]", g.KVHeads, g.HeadDims, g.Layers)
	}
	// layers 0-1 windowed: no global layer before the sharing ones
	refused(t, cfg, func(w *gguf.Writer) { w.Set("gemma4.attention.shared_kv_layers", uint32(2)) }, "a windowed one then a global one")
	refused(t, cfg, func(w *gguf.Writer) {
		w.Set("gemma4.attention.head_count_kv", gguf.Array{Elem: gguf.ValueUint32, Values: []uint32{2, 1, 2, 1}})
	}, "one K/V shape")
	cfg.Layers, cfg.SharedKV, cfg.PLEDim, cfg.DoubleWide = 8, 4, 64, true
	m = loadEdited(t, cfg, func(*gguf.Writer) {})
	if fmt.Sprint(m.KVFrom, m.FFNs, m.FFN, m.PLEDim) != "[-1 -1 -1 -1 2 2 2 3] [512 512 512 512 1024 1024 1024 1024] 1024 64" {
		t.Errorf("E4B's layout: K/V from %v, widths %v (widest %d), per-layer embeddings %d", m.KVFrom, m.FFNs, m.FFN, m.PLEDim)
	}
	if g := m.LayerGroups(); fmt.Sprint(g.Layers, g.Of, g.Index) != "[1 3] [1 1 1 0 1 1 1 0] [0 1 2 0 2 2 2 0]" {
		t.Errorf("E4B's groups: %v layers, of %v at %v", g.Layers, g.Of, g.Index)
	}
	refused(t, cfg, func(w *gguf.Writer) { w.Set("gemma4.attention.sliding_window_pattern", uint32(4)) }, "one bool per layer")
}

// TestGemma4NeedsGroups: a model whose layers' K/V have two shapes is
// refused one cache for every layer, saying what to do.
func TestGemma4NeedsGroups(t *testing.T) {
	r := openRig(t, synthModel(t, "gemma4", gguf.TypeF32), 16, gguf.TypeF32)
	b := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: 2, Blocks: r.table(0)}}}
	if _, err := r.m.Forward(r.kv, b, []int32{1, 2}, []int32{1}); err == nil || !strings.Contains(err.Error(), "layer groups") {
		t.Errorf("one cache for gemma4: err %v, want a refusal naming its layer groups", err)
	}
}
