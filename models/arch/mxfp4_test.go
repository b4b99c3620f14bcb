package arch_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// TestMXFP4LlamaCpp: tiny models whose 2-D weights synth writes as MXFP4
// (a llama; a qwen3moe, whose experts are then MXFP4 as gpt-oss's are)
// against llama.cpp, through scrambled block tables: two prompts alone and
// batched, within the quantized bound (2e-2 × max|logit|).
func TestMXFP4LlamaCpp(t *testing.T) {
	for _, arch := range []string{"llama", "qwen3moe"} {
		t.Run(arch, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), arch+".gguf")
			if err := synth.WriteTiny(path, arch, gguf.TypeMXFP4, 5); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if typ := weightType(f); typ != gguf.TypeMXFP4 {
				t.Fatalf("attn_output is %v, want MXFP4", typ)
			}
			f.Close()
			r := openRig(t, path, 16, gguf.TypeF32)
			prompts := [][]int32{moePrompt(45, 4), moePrompt(30, 5)}
			var seqs []seqRun
			var want [][]float32
			check := func(what string, got, want []float32) {
				t.Helper()
				diff, scale := maxDiff(got, want)
				t.Logf("%s: max|diff| %.3g = %.3g × max|logit| %.3g", what, diff, diff/scale, scale)
				if diff > tolerance(gguf.TypeMXFP4)*scale {
					t.Errorf("%s: max|diff| %.4g exceeds %.0e × max|logit| %.4g", what, diff, tolerance(gguf.TypeMXFP4), scale)
				}
			}
			for i, p := range prompts {
				l, _ := llamaLogits(t, path, p)
				want = append(want, l)
				check(fmt.Sprintf("prompt %d alone", i), r.run(t, []seqRun{{ids: p, table: r.table(i)}})[0], l)
				seqs = append(seqs, seqRun{ids: p, table: r.table(i)})
			}
			for i, got := range r.run(t, seqs) {
				check(fmt.Sprintf("prompt %d batched", i), got, want[i])
			}
		})
	}
}
