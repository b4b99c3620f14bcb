package gguf

import (
	"fmt"
	"sort"
)

// fileTypes names llama.cpp's general.file_type values (enum llama_ftype).
var fileTypes = map[int64]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0",
	37: "TQ2_0", 38: "MXFP4_MOE",
}

// FileTypeName returns llama.cpp's name for a general.file_type value.
func FileTypeName(ft int64) string {
	if s, ok := fileTypes[ft]; ok {
		return s
	}
	return fmt.Sprintf("file_type(%d)", ft)
}

// Summary is what a person wants to know about a model file at a glance.
type Summary struct {
	Architecture    string
	Name            string
	Parameters      int64 // elements of all tensors
	ContextLength   int64 // 0 when the file does not say
	EmbeddingLength int64
	BlockCount      int64
	HeadCount       int64
	HeadCountKV     int64
	Quantization    string // from general.file_type, else the type holding most bytes
	TypeBytes       map[TensorType]int64
	Tokenizer       string // tokenizer.ggml.model, with tokenizer.ggml.pre when set
	VocabSize       int
	TensorCount     int
	TensorBytes     int64
}

// ParamSize writes a parameter count as Ollama does: "8.0B", "135M", "260K".
func ParamSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0fK", float64(n)/1e3)
}

// Summary gathers the headline facts of f from its metadata and tensor infos;
// it reads no tensor data.
func (f *File) Summary() Summary {
	s := Summary{
		Architecture: f.String("general.architecture"),
		Name:         f.String("general.name"),
		TypeBytes:    map[TensorType]int64{},
		TensorCount:  len(f.Tensors),
	}
	arch := s.Architecture
	s.ContextLength, _ = f.Int(arch + ".context_length")
	s.EmbeddingLength, _ = f.Int(arch + ".embedding_length")
	s.BlockCount, _ = f.Int(arch + ".block_count")
	s.HeadCount, _ = f.Int(arch + ".attention.head_count")
	s.HeadCountKV, _ = f.Int(arch + ".attention.head_count_kv")
	for i := range f.Tensors {
		t := &f.Tensors[i]
		s.Parameters += t.Elements()
		s.TensorBytes += t.Bytes
		s.TypeBytes[t.Type] += t.Bytes
	}
	if ft, ok := f.Int("general.file_type"); ok {
		s.Quantization = FileTypeName(ft)
	} else if len(s.TypeBytes) > 0 {
		s.Quantization = s.DominantType().String()
	}
	if m := f.String("tokenizer.ggml.model"); m != "" {
		s.Tokenizer = m
		if pre := f.String("tokenizer.ggml.pre"); pre != "" {
			s.Tokenizer += " (" + pre + ")"
		}
	}
	if v, ok := f.Get("tokenizer.ggml.tokens"); ok {
		if a, ok := v.(Array); ok {
			s.VocabSize = a.Len()
		}
	}
	return s
}

// DominantType returns the tensor type holding the most bytes.
func (s Summary) DominantType() TensorType {
	types := make([]TensorType, 0, len(s.TypeBytes))
	for t := range s.TypeBytes {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		if s.TypeBytes[types[i]] != s.TypeBytes[types[j]] {
			return s.TypeBytes[types[i]] > s.TypeBytes[types[j]]
		}
		return types[i] < types[j]
	})
	if len(types) == 0 {
		return TypeF32
	}
	return types[0]
}
