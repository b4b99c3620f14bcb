package gguf

import (
	"encoding/binary"
	"math"
)

// F32 layout: one IEEE 754 binary32 per element, 4 bytes, little-endian.

// dequantizeF32 copies len(dst) float32s out of src (4 bytes each).
func dequantizeF32(src []byte, dst []float32) {
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
}

// quantizeF32 copies src into dst (4 bytes each).
func quantizeF32(src []float32, dst []byte) {
	for i, v := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
	}
}
