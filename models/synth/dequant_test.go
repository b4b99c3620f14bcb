package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// dequantBounds are the largest per-tensor relative RMS errors allowed
// between a tensor quantized by llama.cpp, decoded by gguf.Dequantize, and
// the F32 original: about 1.3 times the worst tensor measured on the tiny
// preset (seed 13) with llama.cpp 0.5.0-dev (ggml 0ad4a86). The data are
// near-normal, so these are the types' usual errors; a layout bug (swapped
// nibbles, a misplaced scale) gives errors of order 1.
var dequantBounds = map[gguf.TensorType]float64{
	gguf.TypeF16:    0.0003, // measured 0.00021
	gguf.TypeBF16:   0.0022, // 0.00168
	gguf.TypeQ8_0:   0.0065, // 0.00509
	gguf.TypeQ6_K:   0.022,  // 0.01709
	gguf.TypeQ5_0:   0.053,  // 0.04086
	gguf.TypeQ5_1:   0.048,  // 0.03673
	gguf.TypeQ5_K:   0.046,  // 0.03505
	gguf.TypeQ4_0:   0.105,  // 0.08217
	gguf.TypeQ4_1:   0.095,  // 0.07590
	gguf.TypeQ4_K:   0.09,   // 0.06921
	gguf.TypeQ3_K:   0.19,   // 0.14682
	gguf.TypeQ2_K:   0.37,   // 0.28890
	gguf.TypeIQ4_NL: 1,      // measured below
	gguf.TypeIQ4_XS: 0.095,  // 0.07455
}

// quantizeResult is the part of `llamaref quantize` the test reads.
type quantizeResult struct {
	FallbackTensors int `json:"fallback_tensors"`
}

// TestDequantizeLlamaCpp quantizes a synthetic F32 model with llama.cpp to
// every type folio reads and checks that gguf.Dequantize gives back the F32
// weights within the type's error: the proof that folio's decoders agree
// with ggml's block layouts. Each tensor is checked against the type it
// actually has, since llama.cpp may fall back to another even with --pure.
// It also checks that gguf.Quantize encodes every tensor byte for byte as
// llama.cpp does: both follow ggml's reference quantizers (llama.cpp uses
// them when there is no importance matrix), so a difference is a bug in
// one of folio's quantizers or a change in the pinned llama.cpp.
func TestDequantizeLlamaCpp(t *testing.T) {
	src := writeTiny(t, "llama", gguf.TypeF32, 13, nil)
	f32 := open(t, src)
	worst := map[gguf.TensorType]float64{}
	for _, name := range []string{"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1",
		"Q2_K", "Q3_K_S", "Q4_K_S", "Q5_K_S", "Q6_K", "IQ4_NL", "IQ4_XS"} {
		t.Run(name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), name+".gguf")
			var res quantizeResult
			out := fixtures.RunLlamaref(t, "quantize", src, dst, name, "--pure", "--threads", "2")
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("llamaref quantize: %v\n%s", err, out)
			}
			q := open(t, dst)
			if len(q.Tensors) != len(f32.Tensors) {
				t.Fatalf("%d tensors, want %d", len(q.Tensors), len(f32.Tensors))
			}
			var same, quantized int
			for i := range q.Tensors {
				ti := &q.Tensors[i]
				want := values(t, f32, ti.Name)
				got := values(t, q, ti.Name)
				e := relRMS(got, want)
				if ti.Type == gguf.TypeF32 {
					if e != 0 {
						t.Errorf("%s: kept as F32 but changed (relative RMS %g)", ti.Name, e)
					}
					continue
				}
				worst[ti.Type] = max(worst[ti.Type], e)
				bound, ok := dequantBounds[ti.Type]
				if !ok {
					t.Errorf("%s: llama.cpp chose %v, which this test has no bound for", ti.Name, ti.Type)
					continue
				}
				if e > bound {
					t.Errorf("%s (%v): relative RMS error %.5f, want below %g", ti.Name, ti.Type, e, bound)
				}
				quantized++
				if ours := ourQuantize(t, ti, want); bytes.Equal(ours, q.TensorData(ti)) {
					same++
				} else {
					t.Errorf("%s (%v): gguf.Quantize encodes it differently from llama.cpp", ti.Name, ti.Type)
				}
			}
			t.Logf("%-6s: %d fallback tensors; folio's encoding equals llama.cpp's for %d of %d tensors",
				name, res.FallbackTensors, same, quantized)
		})
	}
	for typ, e := range worst {
		t.Logf("%-5v worst relative RMS error %.5f (bound %g)", typ, e, dequantBounds[typ])
	}
}

// ourQuantize encodes values as ti's type with gguf.Quantize, row by row.
func ourQuantize(t *testing.T, ti *gguf.TensorInfo, values []float32) []byte {
	t.Helper()
	rowLen := int(ti.Shape[0])
	rowBytes := int(ti.Type.RowBytes(int64(rowLen)))
	out := make([]byte, len(values)/rowLen*rowBytes)
	for r := range len(values) / rowLen {
		if err := gguf.Quantize(ti.Type, values[r*rowLen:(r+1)*rowLen], out[r*rowBytes:(r+1)*rowBytes]); err != nil {
			t.Fatal(fmt.Errorf("%s: %w", ti.Name, err))
		}
	}
	return out
}
