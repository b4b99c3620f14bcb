package synth

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// runResult is the part of `llamaref run --full-logits` the tests read.
type runResult struct {
	Model struct {
		Architecture string `json:"architecture"`
		NVocab       int    `json:"n_vocab"`
	} `json:"model"`
	NextToken struct {
		Argmax int       `json:"argmax"`
		Logits []float64 `json:"logits"`
	} `json:"next_token"`
	Greedy struct {
		IDs []int `json:"ids"`
	} `json:"greedy"`
}

// llamaRun evaluates tokens with llama.cpp (F32 KV cache, no flash
// attention: the settings that add no rounding of their own) and returns
// the next-token logits and a greedy continuation of nPredict tokens.
func llamaRun(t *testing.T, path, tokens string, nPredict int) runResult {
	t.Helper()
	out := fixtures.RunLlamaref(t, "run", path, "--tokens", tokens, "--n-predict", strconv.Itoa(nPredict),
		"--kv-type", "f32", "--flash-attn", "off", "--threads", "2", "--compact", "--full-logits")
	var r runResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("llamaref run %s: %v", path, err)
	}
	return r
}

// checkLogits fails unless there are n logits, all finite and not all equal.
func checkLogits(t *testing.T, logits []float64, n int) {
	t.Helper()
	if len(logits) != n {
		t.Fatalf("%d logits, want %d", len(logits), n)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range logits {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("logit %d is %v", i, v)
		}
		lo, hi = min(lo, v), max(hi, v)
	}
	if hi-lo < 1 {
		t.Errorf("logits span only [%g, %g]: the model barely depends on its weights", lo, hi)
	}
}

// TestLlamaCppLoads runs the tiny preset of every architecture in llama.cpp.
func TestLlamaCppLoads(t *testing.T) {
	for _, arch := range Archs {
		if embeds(arch) {
			continue // no logits: TestLlamaCppEmbeds
		}
		for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0} {
			t.Run(arch+"/"+typ.String(), func(t *testing.T) {
				if (arch == "deepseek2" || arch == "mistral4") && typ != gguf.TypeF32 && hostHasAMX() {
					t.Skip("llama.cpp's AMX build (libggml-cpu-sapphirerapids) aborts on deepseek2's latent attention with quantized weights " +
						"(GGML_ASSERT(*cur_backend_id != -1) in ggml-backend.cpp); its other x86 builds run it")
				}
				r := llamaRun(t, writeTiny(t, arch, typ, 1, nil), "[1,5,6,7]", 4)
				if r.Model.Architecture != arch {
					t.Errorf("llama.cpp sees architecture %q, want %q", r.Model.Architecture, arch)
				}
				checkLogits(t, r.NextToken.Logits, 512)
				if len(r.Greedy.IDs) != 4 {
					t.Errorf("greedy gave %d tokens, want 4", len(r.Greedy.IDs))
				}
			})
		}
	}
	t.Run("llama-spm vocab", func(t *testing.T) {
		vocab, err := LoadVocab(fixtures.Model(t, "ggml-vocab-llama-spm.gguf"))
		if err != nil {
			t.Fatal(err)
		}
		path := writeTiny(t, "qwen3", gguf.TypeQ8_0, 1, func(c *Config) { c.Vocab, c.VocabSize = vocab, 0 })
		r := llamaRun(t, path, "[1,15043,3186,29892]", 2) // <s> Hello world,
		checkLogits(t, r.NextToken.Logits, 32000)
	})
}

// logitBounds are the largest relative RMS differences allowed between a
// quantized tiny model's logits and the F32 model's (seed 11), about twice
// those measured with llama.cpp 0.5.0-dev (ggml 0ad4a86): F16 0.00054,
// BF16 0.0040, Q8_0 0.0124, Q6_K 0.032, Q5_0 0.075, Q5_1 0.071, Q5_K 0.067,
// Q4_0 0.144, Q4_1 0.129, Q4_K 0.129, Q3_K 0.258, Q2_K 0.464, MXFP4 0.195, IQ4_NL 0.141,
// IQ4_XS 0.139. They include
// llama.cpp's rounding of the activations to the weights' dot-product type.
var logitBounds = map[gguf.TensorType]float64{
	gguf.TypeF16:    0.0015,
	gguf.TypeBF16:   0.01,
	gguf.TypeQ8_0:   0.025,
	gguf.TypeQ6_K:   0.065,
	gguf.TypeQ5_0:   0.15,
	gguf.TypeQ5_1:   0.15,
	gguf.TypeQ5_K:   0.15,
	gguf.TypeQ4_0:   0.28,
	gguf.TypeQ4_1:   0.28,
	gguf.TypeQ4_K:   0.28,
	gguf.TypeQ3_K:   0.5,
	gguf.TypeQ2_K:   0.9,
	gguf.TypeMXFP4:  0.4,
	gguf.TypeIQ4_NL: 0.28,
	gguf.TypeIQ4_XS: 0.28,
}

// TestQuantizedLogits checks that the files folio quantizes itself run in
// llama.cpp and give logits close to those of the F32 model of the same
// seed: relative RMS difference (over the centered F32 logits) within the
// type's bound, and the same top token where the F32 margin is clear.
func TestQuantizedLogits(t *testing.T) {
	const tokens = "[1,75,104,111,111,114,259,122,117,111,103,42]"
	ref := llamaRun(t, writeTiny(t, "llama", gguf.TypeF32, 11, nil), tokens, 1).NextToken.Logits
	checkLogits(t, ref, 512)
	var mean float64
	for _, v := range ref {
		mean += v / float64(len(ref))
	}
	var spread float64
	for _, v := range ref {
		spread += (v - mean) * (v - mean)
	}
	spread = math.Sqrt(spread / float64(len(ref)))
	sorted := slices.Sorted(slices.Values(ref))
	margin := sorted[len(sorted)-1] - sorted[len(sorted)-2]
	top := slices.Index(ref, sorted[len(sorted)-1])

	for _, typ := range []gguf.TensorType{gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ6_K,
		gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ5_K, gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ4_K,
		gguf.TypeQ3_K, gguf.TypeQ2_K, gguf.TypeMXFP4, gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		t.Run(typ.String(), func(t *testing.T) {
			got := llamaRun(t, writeTiny(t, "llama", typ, 11, nil), tokens, 1).NextToken.Logits
			checkLogits(t, got, 512)
			var d2, maxAbs float64
			for i := range ref {
				d := got[i] - ref[i]
				d2 += d * d
				maxAbs = max(maxAbs, math.Abs(d))
			}
			rms := math.Sqrt(d2 / float64(len(ref)))
			rel := rms / spread
			gotTop := slices.Index(got, slices.Max(got))
			t.Logf("%-5v logits vs F32: relative RMS %.5f, max abs %.4f (F32 spread %.3f); top %d vs F32 %d (F32 margin %.3f)",
				typ, rel, maxAbs, spread, gotTop, top, margin)
			if rel > logitBounds[typ] {
				t.Errorf("relative RMS difference %.5f, want below %g", rel, logitBounds[typ])
			}
			if margin > 4*rms && gotTop != top {
				t.Errorf("top token %d, F32 model's %d despite its margin %.3f (RMS difference %.4f)", gotTop, top, margin, rms)
			}
		})
	}
}

// hostHasAMX reports whether this machine's CPUs list amx_int8, where
// llama.cpp loads its AMX build.
func hostHasAMX() bool {
	b, err := os.ReadFile("/proc/cpuinfo")
	return err == nil && strings.Contains(string(b), " amx_int8")
}
