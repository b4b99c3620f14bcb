package gguf

import (
	"fmt"
	"strings"
)

// TensorType is a ggml tensor type id as stored in a GGUF tensor info.
// The numbering is ggml's (ggml.h, enum ggml_type); gaps are ids ggml retired.
type TensorType uint32

const (
	TypeF32     TensorType = 0
	TypeF16     TensorType = 1
	TypeQ4_0    TensorType = 2
	TypeQ4_1    TensorType = 3
	TypeQ5_0    TensorType = 6
	TypeQ5_1    TensorType = 7
	TypeQ8_0    TensorType = 8
	TypeQ8_1    TensorType = 9
	TypeQ2_K    TensorType = 10
	TypeQ3_K    TensorType = 11
	TypeQ4_K    TensorType = 12
	TypeQ5_K    TensorType = 13
	TypeQ6_K    TensorType = 14
	TypeQ8_K    TensorType = 15
	TypeIQ2_XXS TensorType = 16
	TypeIQ2_XS  TensorType = 17
	TypeIQ3_XXS TensorType = 18
	TypeIQ1_S   TensorType = 19
	TypeIQ4_NL  TensorType = 20
	TypeIQ3_S   TensorType = 21
	TypeIQ2_S   TensorType = 22
	TypeIQ4_XS  TensorType = 23
	TypeI8      TensorType = 24
	TypeI16     TensorType = 25
	TypeI32     TensorType = 26
	TypeI64     TensorType = 27
	TypeF64     TensorType = 28
	TypeIQ1_M   TensorType = 29
	TypeBF16    TensorType = 30
	TypeTQ1_0   TensorType = 34
	TypeTQ2_0   TensorType = 35
	TypeMXFP4   TensorType = 39
)

// typeInfo is the storage layout of one tensor type: blockSize elements are
// stored in typeSize bytes, so a row of n elements (n a multiple of
// blockSize) takes n/blockSize*typeSize bytes.
type typeInfo struct {
	name      string
	blockSize int
	typeSize  int
}

// typeInfos lists every type whose layout folio knows, so files using it can
// be read and shown. Which of them folio can compute with is a separate
// question, answered by CanDequantize.
var typeInfos = map[TensorType]typeInfo{
	TypeF32:     {"F32", 1, 4},
	TypeF16:     {"F16", 1, 2},
	TypeQ4_0:    {"Q4_0", 32, 18},
	TypeQ4_1:    {"Q4_1", 32, 20},
	TypeQ5_0:    {"Q5_0", 32, 22},
	TypeQ5_1:    {"Q5_1", 32, 24},
	TypeQ8_0:    {"Q8_0", 32, 34},
	TypeQ8_1:    {"Q8_1", 32, 36},
	TypeQ2_K:    {"Q2_K", 256, 84},
	TypeQ3_K:    {"Q3_K", 256, 110},
	TypeQ4_K:    {"Q4_K", 256, 144},
	TypeQ5_K:    {"Q5_K", 256, 176},
	TypeQ6_K:    {"Q6_K", 256, 210},
	TypeQ8_K:    {"Q8_K", 256, 292},
	TypeIQ2_XXS: {"IQ2_XXS", 256, 66},
	TypeIQ2_XS:  {"IQ2_XS", 256, 74},
	TypeIQ3_XXS: {"IQ3_XXS", 256, 98},
	TypeIQ1_S:   {"IQ1_S", 256, 50},
	TypeIQ4_NL:  {"IQ4_NL", 32, 18},
	TypeIQ3_S:   {"IQ3_S", 256, 110},
	TypeIQ2_S:   {"IQ2_S", 256, 82},
	TypeIQ4_XS:  {"IQ4_XS", 256, 136},
	TypeI8:      {"I8", 1, 1},
	TypeI16:     {"I16", 1, 2},
	TypeI32:     {"I32", 1, 4},
	TypeI64:     {"I64", 1, 8},
	TypeF64:     {"F64", 1, 8},
	TypeIQ1_M:   {"IQ1_M", 256, 56},
	TypeBF16:    {"BF16", 1, 2},
	TypeTQ1_0:   {"TQ1_0", 256, 54},
	TypeTQ2_0:   {"TQ2_0", 256, 66},
	TypeMXFP4:   {"MXFP4", 32, 17},
}

// Known reports whether folio knows the storage layout of t.
func (t TensorType) Known() bool {
	_, ok := typeInfos[t]
	return ok
}

// String returns ggml's name for t ("Q4_K"), or "type(N)" for an unknown id.
func (t TensorType) String() string {
	if ti, ok := typeInfos[t]; ok {
		return ti.name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize is the number of elements in one block of t (1 for plain types).
func (t TensorType) BlockSize() int { return typeInfos[t].blockSize }

// TypeSize is the number of bytes of one block of t.
func (t TensorType) TypeSize() int { return typeInfos[t].typeSize }

// RowBytes returns the bytes taken by n consecutive elements of type t.
// n must be a multiple of t.BlockSize().
func (t TensorType) RowBytes(n int64) int64 {
	ti := typeInfos[t]
	return n / int64(ti.blockSize) * int64(ti.typeSize)
}

// ParseTensorType turns a name such as "q8_0" or "Q4_K" into a TensorType.
func ParseTensorType(name string) (TensorType, error) {
	for t, ti := range typeInfos {
		if strings.EqualFold(ti.name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown tensor type %q (try f32, f16, bf16, q8_0, q4_0, q4_k, q6_k)", name)
}
