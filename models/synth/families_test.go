package synth

import (
	"math"
	"slices"
	"testing"

	"folio/models/gguf"
)

// TestFamilyStructure checks the tensors and keys phi3 and granite add to
// the llama layout, as llama.cpp's converter writes them, for the tiny
// preset of each (embd 256, 2 layers, 4 heads of 64, 2 KV heads, ffn 512).
func TestFamilyStructure(t *testing.T) {
	f32, q8 := gguf.TypeF32, gguf.TypeQ8_0
	for _, tc := range []struct {
		arch   string
		layer  []wantTensor // blk.0's, in order
		extra  []wantTensor // before blk.0, after token_embd
		keys   map[string]any
		absent []string // keys the file must not have
	}{
		{
			arch: "phi3",
			layer: []wantTensor{
				{"blk.0.attn_norm.weight", []uint64{256}, f32},
				{"blk.0.attn_qkv.weight", []uint64{256, 256 + 2*128}, q8},
				{"blk.0.attn_output.weight", []uint64{256, 256}, q8},
				{"blk.0.ffn_norm.weight", []uint64{256}, f32},
				{"blk.0.ffn_up.weight", []uint64{256, 2 * 512}, q8},
				{"blk.0.ffn_down.weight", []uint64{512, 256}, q8},
			},
			extra: []wantTensor{
				{"rope_factors_long.weight", []uint64{16}, f32},
				{"rope_factors_short.weight", []uint64{16}, f32},
			},
			keys: map[string]any{
				"phi3.rope.dimension_count":                 int64(32),
				"phi3.context_length":                       int64(4096),
				"phi3.rope.scaling.original_context_length": int64(512),
				"phi3.rope.scaling.attn_factor":             float64(float32(math.Sqrt(1 + math.Log(8)/math.Log(512)))),
				"phi3.attention.sliding_window":             int64(32),
				"general.name":                              "synth-phi-2x256-Q8_0",
			},
		},
		{
			arch: "granite",
			layer: []wantTensor{
				{"blk.0.attn_norm.weight", []uint64{256}, f32},
				{"blk.0.attn_q.weight", []uint64{256, 256}, q8},
				{"blk.0.attn_k.weight", []uint64{256, 128}, q8},
				{"blk.0.attn_v.weight", []uint64{256, 128}, q8},
				{"blk.0.attn_output.weight", []uint64{256, 256}, q8},
				{"blk.0.ffn_norm.weight", []uint64{256}, f32},
				{"blk.0.ffn_gate.weight", []uint64{256, 512}, q8},
				{"blk.0.ffn_up.weight", []uint64{256, 512}, q8},
				{"blk.0.ffn_down.weight", []uint64{512, 256}, q8},
			},
			keys: map[string]any{
				"granite.rope.dimension_count": int64(64),
				"granite.embedding_scale":      12.0,
				"granite.attention.scale":      0.03125,
				"granite.residual_scale":       float64(float32(0.22)),
				"granite.logit_scale":          2.0,
			},
			absent: []string{"granite.rope.scaling.original_context_length", "granite.attention.sliding_window"},
		},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			f := open(t, writeTiny(t, tc.arch, q8, 7, nil))
			var got []wantTensor
			for _, ti := range f.Tensors {
				got = append(got, wantTensor{ti.Name, ti.Shape, ti.Type})
			}
			want := append([]wantTensor{{"token_embd.weight", []uint64{256, 512}, q8}}, tc.extra...)
			want = append(want, tc.layer...)
			if len(got) < len(want) {
				t.Fatalf("%d tensors, want at least %d", len(got), len(want))
			}
			if !slices.EqualFunc(got[:len(want)], want, func(a, b wantTensor) bool {
				return a.name == b.name && a.typ == b.typ && slices.Equal(a.shape, b.shape)
			}) {
				t.Errorf("tensors:\n got %v\nwant %v", got[:len(want)], want)
			}
			if n := len(want) + len(tc.layer) + 2; len(got) != n { // blk.1, output_norm, output
				t.Errorf("%d tensors, want %d", len(got), n)
			}
			checkKeys(t, f, tc.keys)
			for _, key := range tc.absent {
				if _, ok := f.Get(key); ok {
					t.Errorf("%s is set", key)
				}
			}
			if tc.arch != "phi3" {
				return
			}
			for _, name := range []string{"rope_factors_long.weight", "rope_factors_short.weight"} {
				for i, v := range values(t, f, name) {
					if !(v > 0) {
						t.Errorf("%s[%d] = %v, want a positive factor", name, i, v)
					}
				}
			}
		})
	}
}

// TestFamilyPresets checks the real-shape presets of phi3, granite and
// gpt-oss plan the models they name (weights counted, nothing written).
func TestFamilyPresets(t *testing.T) {
	for _, tc := range []struct {
		preset string
		params float64 // in billions, as their model cards say
	}{{"phi4-mini", 3.84}, {"granite-3.3-2b", 2.53}, {"gpt-oss-20b", 20.91}} {
		cfg, err := ArchPreset("", tc.preset)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Type = gguf.TypeQ8_0
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p := float64(m.Params()) / 1e9; math.Abs(p-tc.params) > 0.02*tc.params {
			t.Errorf("%s: %.3fB parameters, want about %.2fB", tc.preset, p, tc.params)
		}
	}
}
