package gguf

import (
	"encoding/json"
	"math"
	"strconv"
)

// JSONValue converts a metadata value into something encoding/json prints
// faithfully: float32 values in their shortest float32 form, NaN and
// infinities as strings, and arrays longer than maxArray (when maxArray > 0)
// as {"length": N, "head": [first maxArray items]}.
func JSONValue(v any, maxArray int) any {
	switch x := v.(type) {
	case float32:
		return jsonFloat(float64(x), 32)
	case float64:
		return jsonFloat(x, 64)
	case Array:
		n := x.Len()
		limit := n
		if maxArray > 0 && n > maxArray {
			limit = maxArray
		}
		items := make([]any, limit)
		for i := range limit {
			items[i] = JSONValue(arrayItem(x, i), maxArray)
		}
		if limit < n {
			return map[string]any{"length": n, "head": items}
		}
		return items
	}
	return v
}

func jsonFloat(f float64, bits int) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, bits)
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
}

// arrayItem returns element i of a as a metadata value.
func arrayItem(a Array, i int) any {
	switch s := a.Values.(type) {
	case []uint8:
		return s[i]
	case []int8:
		return s[i]
	case []uint16:
		return s[i]
	case []int16:
		return s[i]
	case []uint32:
		return s[i]
	case []int32:
		return s[i]
	case []float32:
		return s[i]
	case []bool:
		return s[i]
	case []string:
		return s[i]
	case []uint64:
		return s[i]
	case []int64:
		return s[i]
	case []float64:
		return s[i]
	case []Array:
		return s[i]
	}
	return nil
}
