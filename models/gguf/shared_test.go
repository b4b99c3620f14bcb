package gguf_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"folio/internal/fixtures"
	"folio/models/gguf"
)

// sharedGGUFs lists the real GGUF files in ../shared/models.
func sharedGGUFs(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(fixtures.Models(t), "*.gguf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no .gguf files in %s (%v)", fixtures.Models(t), err)
	}
	return paths
}

// write(read(f)) reproduces every real file byte for byte.
func TestSharedRoundTrip(t *testing.T) {
	for _, path := range sharedGGUFs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var buf bytes.Buffer
			if _, err := gguf.NewWriterFrom(f).WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), orig) {
				t.Fatalf("rewritten file differs: %d bytes, original %d", buf.Len(), len(orig))
			}
		})
	}
}

// refInfo is the part of `llamaref info` (@huggingface/gguf, a parser
// independent of ours and of llama.cpp) that we compare.
type refInfo struct {
	Version          int64               `json:"version"`
	TensorCount      int64               `json:"tensor_count"`
	KVCount          int64               `json:"kv_count"`
	TensorDataOffset int64               `json:"tensor_data_offset"`
	ParameterCount   int64               `json:"parameter_count"`
	Metadata         map[string]refValue `json:"metadata"`
	Tensors          []refTensor         `json:"tensors"`
}

type refValue struct {
	Type     string `json:"type"`
	ElemType string `json:"elem_type"`
	Value    any    `json:"value"`
}

type refTensor struct {
	Name   string   `json:"name"`
	Shape  []uint64 `json:"shape"`
	TypeID uint32   `json:"type_id"`
	Bytes  int64    `json:"bytes"`
	Offset uint64   `json:"offset"`
}

// Our metadata and tensor lists equal what the independent parser reports.
func TestSharedAgainstLlamaref(t *testing.T) {
	for _, path := range sharedGGUFs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			out := fixtures.RunLlamaref(t, "info", path, "--max-array", "100000000", "--compact")
			dec := json.NewDecoder(bytes.NewReader(out))
			dec.UseNumber()
			var ref refInfo
			if err := dec.Decode(&ref); err != nil {
				t.Fatalf("decode llamaref output: %v", err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s := f.Summary()
			got := [5]int64{int64(f.Version), int64(len(f.Tensors)), int64(len(f.KV)), f.DataOffset, s.Parameters}
			want := [5]int64{ref.Version, ref.TensorCount, ref.KVCount, ref.TensorDataOffset, ref.ParameterCount}
			if got != want {
				t.Errorf("version, tensors, kvs, data offset, parameters = %v, llamaref %v", got, want)
			}
			if len(ref.Metadata) != len(f.KV) {
				t.Errorf("%d metadata keys, llamaref %d", len(f.KV), len(ref.Metadata))
			}
			for _, kv := range f.KV {
				rv, ok := ref.Metadata[kv.Key]
				if !ok {
					t.Errorf("key %s missing in llamaref output", kv.Key)
					continue
				}
				typ, _ := gguf.TypeOf(kv.Value)
				if !strings.EqualFold(rv.Type, typ.String()) {
					t.Errorf("%s: type %s, llamaref %s", kv.Key, typ, rv.Type)
				}
				if a, ok := kv.Value.(gguf.Array); ok && !strings.EqualFold(rv.ElemType, a.Elem.String()) {
					t.Errorf("%s: element type %s, llamaref %s", kv.Key, a.Elem, rv.ElemType)
				}
				if err := sameValue(kv.Value, rv.Value); err != nil {
					t.Errorf("%s: %v", kv.Key, err)
				}
			}
			if len(ref.Tensors) != len(f.Tensors) {
				t.Fatalf("%d tensors, llamaref %d", len(f.Tensors), len(ref.Tensors))
			}
			for i, tn := range f.Tensors {
				r := ref.Tensors[i]
				if tn.Name != r.Name || fmt.Sprint(tn.Shape) != fmt.Sprint(r.Shape) || uint32(tn.Type) != r.TypeID ||
					tn.Bytes != r.Bytes || tn.Offset != r.Offset {
					t.Errorf("tensor %d: ours %s %v type %d %d bytes at %d; llamaref %+v",
						i, tn.Name, tn.Shape, tn.Type, tn.Bytes, tn.Offset, r)
				}
			}
		})
	}
}

// sameValue compares one of our metadata values with its JSON form from
// llamaref (numbers as json.Number; NaN, infinities and integers beyond
// 2^53 as strings).
func sameValue(ours, theirs any) error {
	switch x := ours.(type) {
	case gguf.Array:
		items, ok := theirs.([]any)
		if !ok {
			return fmt.Errorf("array vs %T", theirs)
		}
		if len(items) != x.Len() {
			return fmt.Errorf("array of %d, llamaref %d", x.Len(), len(items))
		}
		vals := reflect.ValueOf(x.Values)
		for i := range items {
			if err := sameValue(vals.Index(i).Interface(), items[i]); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	case string:
		// @huggingface/gguf decodes strings with TextDecoder, which drops a
		// leading byte order mark: Llama 2's token 30143 is "\ufeff" in the
		// file (our byte-exact round trip proves it) and "" in its output.
		if strings.HasPrefix(x, "\ufeff") && theirs == strings.TrimPrefix(x, "\ufeff") {
			return nil
		}
		if theirs != x {
			return fmt.Errorf("%q, llamaref %v", x, theirs)
		}
		return nil
	case bool:
		if theirs != x {
			return fmt.Errorf("%v, llamaref %v", x, theirs)
		}
		return nil
	case float32, float64:
		f, _ := gguf.AsFloat64(ours)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			want := map[bool]string{true: "NaN"}[math.IsNaN(f)]
			if math.IsInf(f, 1) {
				want = "Infinity"
			} else if math.IsInf(f, -1) {
				want = "-Infinity"
			}
			if theirs != want {
				return fmt.Errorf("%v, llamaref %v", f, theirs)
			}
			return nil
		}
		n, ok := theirs.(json.Number)
		if !ok {
			return fmt.Errorf("%v, llamaref %v", f, theirs)
		}
		if g, err := n.Float64(); err != nil || g != f {
			return fmt.Errorf("%v, llamaref %v", f, n)
		}
		return nil
	}
	// Integers of every width: compare decimal text.
	want := fmt.Sprint(ours)
	var got string
	switch v := theirs.(type) {
	case json.Number:
		got = v.String()
	case string:
		got = v
	default:
		return fmt.Errorf("%v (%T), llamaref %v (%T)", ours, ours, theirs, theirs)
	}
	if got != want {
		return fmt.Errorf("%s, llamaref %s", want, got)
	}
	return nil
}
