package gguf

import (
	"fmt"
	"math"
)

// ValueType is the type tag of a GGUF metadata value (gguf.h, enum gguf_type).
type ValueType uint32

const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32",
	"float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value_type(%d)", uint32(t))
}

// size is the encoded size of a scalar of type t, or the minimum encoded size
// of a string (its length prefix) or array (element type and count).
func (t ValueType) size() int64 {
	switch t {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64, ValueString:
		return 8
	case ValueArray:
		return 12
	}
	return 0
}

// Array is a GGUF array value. Values is a typed slice matching Elem:
// []uint8, []int8, []uint16, []int16, []uint32, []int32, []float32, []bool,
// []string, []uint64, []int64, []float64, or []Array for nested arrays.
type Array struct {
	Elem   ValueType
	Values any
}

// Len returns the number of elements of a.
func (a Array) Len() int {
	switch v := a.Values.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	case []Array:
		return len(v)
	}
	return 0
}

// KV is one metadata entry. Value holds a Go value whose type is the GGUF
// type: uint8, int8, uint16, int16, uint32, int32, float32, bool, string,
// uint64, int64, float64 or Array.
type KV struct {
	Key   string
	Value any
}

// TypeOf returns the GGUF type of a metadata value, or false when v has no
// GGUF encoding. Plain slices ([]string, []float32, ...) count as arrays.
func TypeOf(v any) (ValueType, bool) {
	switch v.(type) {
	case uint8:
		return ValueUint8, true
	case int8:
		return ValueInt8, true
	case uint16:
		return ValueUint16, true
	case int16:
		return ValueInt16, true
	case uint32:
		return ValueUint32, true
	case int32:
		return ValueInt32, true
	case float32:
		return ValueFloat32, true
	case bool:
		return ValueBool, true
	case string:
		return ValueString, true
	case uint64:
		return ValueUint64, true
	case int64:
		return ValueInt64, true
	case float64:
		return ValueFloat64, true
	case Array:
		return ValueArray, true
	}
	if _, ok := sliceArray(v); ok {
		return ValueArray, true
	}
	return 0, false
}

// sliceArray wraps a plain typed slice as an Array.
func sliceArray(v any) (Array, bool) {
	switch v.(type) {
	case []uint8:
		return Array{ValueUint8, v}, true
	case []int8:
		return Array{ValueInt8, v}, true
	case []uint16:
		return Array{ValueUint16, v}, true
	case []int16:
		return Array{ValueInt16, v}, true
	case []uint32:
		return Array{ValueUint32, v}, true
	case []int32:
		return Array{ValueInt32, v}, true
	case []float32:
		return Array{ValueFloat32, v}, true
	case []bool:
		return Array{ValueBool, v}, true
	case []string:
		return Array{ValueString, v}, true
	case []uint64:
		return Array{ValueUint64, v}, true
	case []int64:
		return Array{ValueInt64, v}, true
	case []float64:
		return Array{ValueFloat64, v}, true
	case []Array:
		return Array{ValueArray, v}, true
	}
	return Array{}, false
}

// AsInt64 converts any integer metadata value to int64. It reports false for
// other types and for uint64 values above math.MaxInt64.
func AsInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case uint8:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case int16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

// AsFloat64 converts any numeric metadata value to float64.
func AsFloat64(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	if i, ok := AsInt64(v); ok {
		return float64(i), true
	}
	if u, ok := v.(uint64); ok {
		return float64(u), true
	}
	return 0, false
}
