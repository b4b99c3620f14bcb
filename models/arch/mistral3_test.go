package arch_test

import (
	"path/filepath"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// TestAttnTempHostPath: Ministral 3's attention temperature gives the same
// logits bit for bit through the backend's ExpertSum (the CPU's) and on
// the host (a backend without gpu.Experts, as Vulkan's): three prompts in
// one batch whose rows span five of its steps (an original context of 16),
// then a batched decode step. The golden case mistral3-temp checks the
// values against llama.cpp's.
func TestAttnTempHostPath(t *testing.T) {
	cfg, err := synth.ArchPreset("mistral3", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Type, cfg.Seed, cfg.Ctx, cfg.AttnTemp = gguf.TypeQ8_0, 13, 256, 0.1
	cfg.Rope = synth.RopeScaling{Type: "yarn", Factor: 8, OrigCtx: 16}
	m, err := synth.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m3.gguf")
	if err := m.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	var got [2][][]float32
	for i := range got {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		inner := cpu.New(2)
		var be gpu.Backend = inner
		if i == 1 {
			be = struct{ gpu.Backend }{inner} // no gpu.Experts
		}
		am, err := arch.Load(f, be, arch.Options{MaxRows: 256, MaxOut: 8})
		if err != nil {
			t.Fatal(err)
		}
		if am.AttnTemp != 0.1 || am.AttnTempFloor != 16 {
			t.Fatalf("attention temperature %v from %d, want 0.1 from 16", am.AttnTemp, am.AttnTempFloor)
		}
		kv, err := be.NewKVCache(am.KVSpec(64, 16, gguf.TypeF32))
		if err != nil {
			t.Fatal(err)
		}
		r := &rig{f: f, m: am, kv: kv, bs: 16}
		prompts := [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(75, 3)}
		var seqs []seqRun
		for j, p := range prompts {
			seqs = append(seqs, seqRun{ids: p, table: r.table(j)})
		}
		got[i] = r.run(t, seqs)
		for j := range seqs {
			seqs[j] = seqRun{ids: []int32{int32(40 + j)}, pos: len(prompts[j]), table: seqs[j].table}
		}
		got[i] = append(got[i], r.run(t, seqs)...)
		inner.Close()
		f.Close()
	}
	for j := range got[0] {
		for v := range got[0][j] {
			if got[0][j][v] != got[1][j][v] {
				t.Fatalf("logits %d: element %d is %v through ExpertSum, %v on the host", j, v, got[0][j][v], got[1][j][v])
			}
		}
	}
}
