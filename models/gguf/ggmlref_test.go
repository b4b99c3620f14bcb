package gguf

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// ggmlRef pins folio's kernels to llama.cpp's, bit for bit. The digests were
// computed from the output of the prebuilt libggml-base.so that llamaref
// installs (node-llama-cpp 3.22.1, under ~/.cache/llamaref), by a small C
// program calling its quantize_row_<type>_ref and dequantize_row_<type> on
// the same inputs as below:
//
//   - quant: SHA-256 of quantize_row_<type>_ref on 16Ki standard normal
//     values, PCG(42, 0) and NormFloat64 as normalData generates them;
//   - dequant: SHA-256 of the little-endian float32s dequantize_row_<type>
//     gives for 16Ki elements' worth of random bytes, PCG(7, type id), one
//     byte per Uint32, every NaN written as 0x7fc00000 (NaN payloads
//     depend on operand order, which no one promises).
//
// IQ4_NL and IQ4_XS have no _ref quantizer that llama-quantize runs: their
// quant digests are of quantize_iq4_nl and quantize_iq4_xs (one row, no
// importance matrix), llama-quantize's path, computed by
// testdata/ggmlref/iq4.c from the inputs this test writes to
// $FOLIO_GGMLREF_DUMP.
//
// The same run found folio's F32ToF16 and F32ToBF16 equal to
// ggml_fp32_to_fp16 and ggml_fp32_to_bf16 for all 2^32 - 2^24 non-NaN
// float32s, and F16ToF32 and BF16ToF32 equal to theirs for all 65536 inputs.
var ggmlRef = []struct {
	t              TensorType
	quant, dequant string
}{
	{TypeQ8_0, "0aefab45dcacf7e1ab14cf9b8407d501bb5f4a48592619a4e23369847e916e0a", "5b890694e6ec889a41c768f52878e143c21cca4b41e8378666c4c0f74fbbceee"},
	{TypeQ4_0, "8e25aff473248bfc710a9648f32b016884ee0962c226c417dba91bb5a3ab1b0f", "7fff23c2596fd12f1203a8393e0edd515257bb8979dec26131cae98e01909f68"},
	{TypeQ4_1, "70d3337adaab56072b993dc2871839e4927bf8d680d19c0eac681c52c2974daa", "bcd0aa5b1319e3faa058133aba7f0d9a6d071efbe92a337e8f48eb18c9724b4f"},
	{TypeQ5_0, "7b3b844f8c1e89278cd67d309eaa1a276f8ee515e5f660387f91c87625baefda", "c59a039a0ded5953a46b900a253fe71efb66e64645b31cb15af487eca89341e7"},
	{TypeQ5_1, "018ded4a009ac87cb160ab3a65b67553a229f426d20f7d0c62be5ae95014768e", "dcaa601fccc70476f55f98b73ab2bd24716a2f8769e8d43bfde753ec156643fc"},
	{TypeQ2_K, "e69c91f2d7f8baa09ac1df16774f83c9961d8db0b1331e14118ed39bac4e8f20", "5c52a70920a2acf969741915bfadd51a9c4b7a7ae286df49af409305598fc4f9"},
	{TypeQ3_K, "deb264fd81a5c13df9fdf311be83bd2f22e13576d9986d3794b1992a7a5eb17e", "dc9d3eae57c500cb8ed731e0e2eac9dff6f014c3b29e3dab65aec2e768722968"},
	{TypeQ4_K, "9d97adc70a592b0cc5cce1f1af1a5103eedf36e6d7a994a2c5b219dcdadb8be2", "cdccb20d809fcafaae18d06333ca7361b789cb1571fbe58ad92fb928565a0bbf"},
	{TypeQ5_K, "3ed14c0971fe289e73307985ab7edda3437c5d7e62f6a2d35d1685926f913f0e", "51f67986e7fff94fc9229c777b414d78238cd5cadda6b980d42835f32d31fab9"},
	{TypeQ6_K, "0fa66f7839e520afc1d7985179fa90d86d2d4db112a95d73cac819d97cf9b228", "793fda5cbc39f20157682c6dd1506a592002371b608850afff03987c428cf091"},
	{TypeIQ4_NL, "d52a80983524e3cf0bca6716d0ad84071a59b363f606ecf7f600b441153c616c", "5a2c9a7e0ea7d2b228bf3853f88492283830587f399a1803d151daeee812016a"},
	{TypeIQ4_XS, "c0bfdd65d528b7d0953b33f0725f7495f6d01e3683a2e19bc3c9d4d8bf9aa37b", "47692b365e754e22e0d06344ca42322babbec54747b769dc49d15620e535e534"},
}

func TestMatchesGGML(t *testing.T) {
	const n = 1 << 14
	x := normalData(n, 42)
	dump := os.Getenv("FOLIO_GGMLREF_DUMP")
	if dump != "" {
		writeDump(t, dump, "normal.f32", f32Bytes(x))
	}
	for _, ref := range ggmlRef {
		t.Run(ref.t.String(), func(t *testing.T) {
			q := make([]byte, ref.t.RowBytes(n))
			if err := Quantize(ref.t, x, q); err != nil {
				t.Fatal(err)
			}
			if got := sha256.Sum256(q); hex.EncodeToString(got[:]) != ref.quant {
				t.Errorf("Quantize output differs from ggml's %s quantizer (sha256 %x)", ref.t, got)
			}

			src := make([]byte, ref.t.RowBytes(n))
			rng := rand.New(rand.NewPCG(7, uint64(ref.t)))
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			if dump != "" {
				writeDump(t, dump, "random-"+ref.t.String()+".q", src)
			}
			y := make([]float32, n)
			if err := Dequantize(ref.t, src, y); err != nil {
				t.Fatal(err)
			}
			raw := make([]byte, 4*n)
			for i, v := range y {
				bits := math.Float32bits(v)
				if v != v {
					bits = 0x7fc00000
				}
				binary.LittleEndian.PutUint32(raw[4*i:], bits)
			}
			if got := sha256.Sum256(raw); hex.EncodeToString(got[:]) != ref.dequant {
				t.Errorf("Dequantize output differs from dequantize_row_%s (sha256 %x)", ref.t, got)
			}
		})
	}
}

func f32Bytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// writeDump writes one of TestMatchesGGML's inputs for the C programs in
// testdata/ggmlref.
func writeDump(t *testing.T, dir, name string, b []byte) {
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
