package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// raw builds GGUF bytes field by field, so tests can write files that the
// Writer would refuse to produce.
type raw struct{ bytes.Buffer }

func (r *raw) u32(v uint32) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) u64(v uint64) *raw { binary.Write(&r.Buffer, binary.LittleEndian, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.WriteString(s); return r }
func (r *raw) pad(a int) *raw {
	for r.Len()%a != 0 {
		r.WriteByte(0)
	}
	return r
}

// rawTensor is one tensor info for rawFile.
type rawTensor struct {
	name   string
	shape  []uint64
	typ    uint32
	offset uint64
}

// rawFile writes a v3 header with the given key/values (already encoded
// after the key: type + payload) and tensor infos, pads to 32 and appends
// dataLen zero bytes.
func rawFile(kvs func(r *raw) int, tensors []rawTensor, dataLen int) []byte {
	var body raw
	nkv := 0
	if kvs != nil {
		nkv = kvs(&body)
	}
	r := &raw{}
	r.WriteString("GGUF")
	r.u32(3).u64(uint64(len(tensors))).u64(uint64(nkv))
	r.Write(body.Bytes())
	for _, t := range tensors {
		r.str(t.name).u32(uint32(len(t.shape)))
		for _, d := range t.shape {
			r.u64(d)
		}
		r.u32(t.typ).u64(t.offset)
	}
	r.pad(32)
	r.Write(make([]byte, dataLen))
	return r.Bytes()
}

func oneKV(key string, typ ValueType, payload func(r *raw)) func(r *raw) int {
	return func(r *raw) int {
		r.str(key).u32(uint32(typ))
		payload(r)
		return 1
	}
}

var w32x2 = rawTensor{"w", []uint64{32, 2}, uint32(TypeF32), 0} // 256 bytes

func TestParseValid(t *testing.T) {
	data := rawFile(oneKV("general.name", ValueString, func(r *raw) { r.str("tiny") }),
		[]rawTensor{w32x2, {"b", []uint64{64}, uint32(TypeQ8_0), 256}}, 256+68)
	f, err := Parse("valid.gguf", data)
	if err != nil {
		t.Fatal(err)
	}
	if f.String("general.name") != "tiny" || len(f.Tensors) != 2 {
		t.Fatalf("got name %q, %d tensors", f.String("general.name"), len(f.Tensors))
	}
	b, _ := f.Tensor("b")
	if b.Bytes != 68 || b.Elements() != 64 || len(f.TensorData(b)) != 68 {
		t.Fatalf("tensor b: %+v", b)
	}
}

func TestParseErrors(t *testing.T) {
	valid := rawFile(nil, []rawTensor{w32x2}, 256)
	patch := func(off int, b ...byte) []byte {
		d := bytes.Clone(valid)
		copy(d[off:], b)
		return d
	}
	tests := []struct {
		name  string
		data  []byte
		field string // must appear in the error
		msg   string // must appear in the error
	}{
		{"empty", nil, "magic", "truncated"},
		{"magic", patch(0, 'G', 'G', 'M', 'L'), "magic", "not a GGUF file"},
		{"version 1", patch(4, 1, 0, 0, 0), "version", "v1 is not supported"},
		{"version 9", patch(4, 9, 0, 0, 0), "version", "unsupported version 9"},
		{"big endian", patch(4, 0, 0, 0, 3), "version", "big-endian"},
		{"tensor count", patch(8, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0), "tensor_count", "only"},
		{"kv count", patch(16, 0, 0, 0, 0x10), "kv_count", "only"},
		{"string length", rawFile(func(r *raw) int { r.u64(1 << 40).u64(0).u64(0); return 1 }, nil, 0),
			"kv[0].key", "exceeds"},
		{"value type", rawFile(oneKV("k", 13, func(r *raw) {}), nil, 0), "kv[0] k", "unknown value type 13"},
		{"bool", rawFile(oneKV("k", ValueBool, func(r *raw) { r.WriteByte(2) }), nil, 0), "kv[0] k", "must be 0 or 1"},
		{"array elem type", rawFile(oneKV("k", ValueArray, func(r *raw) { r.u32(99).u64(1) }), nil, 0),
			"kv[0] k", "unknown array element type 99"},
		{"array count", rawFile(oneKV("k", ValueArray, func(r *raw) { r.u32(uint32(ValueUint64)).u64(1 << 60) }), nil, 0),
			"kv[0] k count", "only"},
		{"string array count", rawFile(oneKV("k", ValueArray, func(r *raw) { r.u32(uint32(ValueString)).u64(1 << 20) }), nil, 0),
			"kv[0] k count", "only"},
		{"nested too deep", rawFile(oneKV("k", ValueArray, func(r *raw) {
			for range 40 {
				r.u32(uint32(ValueArray)).u64(1)
			}
			r.u32(uint32(ValueUint8)).u64(0)
		}), nil, 0), "kv[0] k", "nested deeper"},
		{"duplicate key", rawFile(func(r *raw) int {
			r.str("a").u32(uint32(ValueUint8)).WriteByte(1)
			r.str("a").u32(uint32(ValueUint8)).WriteByte(2)
			return 2
		}, nil, 0), "kv[1] a", "duplicate key"},
		{"alignment type", rawFile(oneKV("general.alignment", ValueUint64, func(r *raw) { r.u64(32) }), nil, 0),
			"general.alignment", "power of two"},
		{"alignment value", rawFile(oneKV("general.alignment", ValueUint32, func(r *raw) { r.u32(24) }), nil, 0),
			"general.alignment", "power of two"},
		{"n_dims 0", rawFile(nil, []rawTensor{{"w", nil, 0, 0}}, 0), "tensor[0] w n_dims", "must be 1..4"},
		{"n_dims 5", rawFile(nil, []rawTensor{{"w", []uint64{1, 1, 1, 1, 1}, 0, 0}}, 0), "tensor[0] w n_dims", "must be 1..4"},
		{"dims overflow", rawFile(nil, []rawTensor{{"w", []uint64{1 << 32, 1 << 32}, 0, 0}}, 0),
			"tensor[0] w shape", "overflows"},
		{"negative dim", rawFile(nil, []rawTensor{{"w", []uint64{1 << 63}, 0, 0}}, 0),
			"tensor[0] w shape", "overflows"},
		{"bytes overflow", rawFile(nil, []rawTensor{{"w", []uint64{1 << 61, 2}, 0, 0}}, 0),
			"tensor[0] w shape", "too large"},
		{"tensor type", rawFile(nil, []rawTensor{{"w", []uint64{32}, 4, 0}}, 128), "tensor[0] w type", "unknown tensor type 4"},
		{"block size", rawFile(nil, []rawTensor{{"w", []uint64{33}, uint32(TypeQ8_0), 0}}, 128),
			"tensor[0] w shape", "not a multiple of the Q8_0 block size 32"},
		{"unaligned", rawFile(nil, []rawTensor{{"w", []uint64{8}, 0, 8}}, 64), "tensor[0] w offset", "not a multiple"},
		{"out of bounds", rawFile(nil, []rawTensor{w32x2}, 255), "tensor[0] w offset", "outside"},
		{"offset huge", rawFile(nil, []rawTensor{{"w", []uint64{8}, 0, 1 << 63}}, 64), "tensor[0] w offset", "outside"},
		{"overlap", rawFile(nil, []rawTensor{w32x2, {"v", []uint64{32}, 0, 128}}, 512),
			"tensor[1] v offset", "overlaps tensor w"},
		{"duplicate tensor", rawFile(nil, []rawTensor{w32x2, {"w", []uint64{8}, 0, 256}}, 512),
			"tensor[1] w", "duplicate tensor name"},
		{"empty name", rawFile(nil, []rawTensor{{"", []uint64{8}, 0, 0}}, 64), "tensor[0]", "empty tensor name"},
		{"long name", rawFile(nil, []rawTensor{{strings.Repeat("x", 64), []uint64{8}, 0, 0}}, 64),
			"tensor[0]", "at most 63"},
		{"no data section", rawFile(nil, []rawTensor{w32x2}, 0)[:100], "tensor", "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.gguf", tc.data)
			if err == nil {
				t.Fatal("parsed without error")
			}
			var fe *FormatError
			if !errors.Is(err, ErrFormat) || !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError wrapping ErrFormat", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "bad.gguf") || !strings.Contains(msg, tc.field) ||
				!strings.Contains(msg, tc.msg) || !strings.Contains(msg, "at offset") {
				t.Fatalf("error %q should name the file, %q and contain %q", msg, tc.field, tc.msg)
			}
		})
	}
}

// TestMagicNotEchoed: a file that is not GGUF is refused without its
// first bytes in the error: a model path may name a secret file, and
// the error goes back to whoever named it.
func TestMagicNotEchoed(t *testing.T) {
	for _, head := range []string{"root:x:0:0:root:/root:/bin/bash\n", "GGML", "\x00\x01\x02\x03ABCD", "GGUv3"} {
		_, err := Parse("secret", []byte(head))
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("%q: %v, want a format error", head, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, "not a GGUF file") && !strings.Contains(msg, "truncated") {
			t.Errorf("%q: error %q does not say the file is not GGUF", head, msg)
		}
		if first := strings.Trim(fmt.Sprintf("%q", head[:min(4, len(head))]), `"`); strings.Contains(msg, first) {
			t.Errorf("error %q echoes the file's first bytes %s", msg, first)
		}
	}
}

// Every prefix of a valid file that cuts into its content is an error, never
// a panic. (Only the zero padding after the last tensor may be missing.)
func TestParseTruncated(t *testing.T) {
	data := sampleFile(t)
	f, err := Parse("full.gguf", data)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Tensors[len(f.Tensors)-1]
	end := f.DataOffset + int64(last.Offset) + last.Bytes
	for n := range end {
		if _, err := Parse("cut.gguf", data[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes parsed without error", n, len(data))
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "missing.gguf")); err == nil || !strings.Contains(err.Error(), "missing.gguf") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
	empty := filepath.Join(dir, "empty.gguf")
	os.WriteFile(empty, nil, 0o644)
	if _, err := Open(empty); !errors.Is(err, ErrFormat) {
		t.Fatalf("empty file: %v", err)
	}
}

// sampleFile holds every metadata type, nested arrays, a custom alignment
// and tensors of several types.
func sampleFile(t testing.TB) []byte {
	w := NewWriter()
	w.Set("general.alignment", uint32(64))
	w.Set("u8", uint8(200))
	w.Set("i8", int8(-100))
	w.Set("u16", uint16(60000))
	w.Set("i16", int16(-30000))
	w.Set("u32", uint32(4000000000))
	w.Set("i32", int32(-2000000000))
	w.Set("f32", float32(math.Pi))
	w.Set("bool", true)
	w.Set("str", "héllo\x00world")
	w.Set("u64", uint64(math.MaxUint64))
	w.Set("i64", int64(math.MinInt64))
	w.Set("f64", math.Inf(-1))
	w.Set("strs", []string{"a", "", "<s>"})
	w.Set("f32s", []float32{1, float32(math.NaN()), -0})
	w.Set("bools", []bool{true, false})
	w.Set("empty", []int64{})
	w.Set("nested", Array{Elem: ValueArray, Values: []Array{
		{Elem: ValueInt32, Values: []int32{1, 2}},
		{Elem: ValueArray, Values: []Array{{Elem: ValueString, Values: []string{"deep"}}}},
	}})
	w.AddTensor("a", TypeF32, []uint64{4, 3}, bytes.Repeat([]byte{1, 2, 3, 4}, 12))
	w.AddTensor("b", TypeQ8_0, []uint64{64}, bytes.Repeat([]byte{7}, 68))
	w.AddTensor("c", TypeF16, []uint64{2, 1, 1, 3}, bytes.Repeat([]byte{9}, 12))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestRoundTripAllTypes(t *testing.T) {
	data := sampleFile(t)
	f, err := Parse("sample.gguf", data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Fatalf("alignment %d, data offset %d", f.Alignment, f.DataOffset)
	}
	for _, tn := range f.Tensors {
		if tn.Offset%64 != 0 {
			t.Errorf("tensor %s at unaligned offset %d", tn.Name, tn.Offset)
		}
	}
	if v, _ := f.Get("u64"); v != uint64(math.MaxUint64) {
		t.Errorf("u64 = %v", v)
	}
	nested, _ := f.Get("nested")
	deep := nested.(Array).Values.([]Array)[1].Values.([]Array)[0].Values.([]string)[0]
	if deep != "deep" {
		t.Errorf("nested value %q", deep)
	}
	var again bytes.Buffer
	if _, err := NewWriterFrom(f).WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), data) {
		t.Fatal("write(read(f)) differs from f")
	}
}

func TestWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		do   func(w *Writer)
		msg  string
	}{
		{"int value", func(w *Writer) { w.Set("k", 3) }, "no GGUF type"},
		{"bad array", func(w *Writer) { w.Set("k", Array{Elem: ValueString, Values: []int32{1}}) }, "array of string holds []int32"},
		{"alignment", func(w *Writer) { w.Set("general.alignment", uint32(3)) }, "power of two"},
		{"short data", func(w *Writer) { w.AddTensor("t", TypeF32, []uint64{4}, make([]byte, 15)) }, "15 bytes of data, want 16"},
		{"block", func(w *Writer) { w.AddTensor("t", TypeQ4_K, []uint64{128}, nil) }, "block size 256"},
		{"twice", func(w *Writer) {
			w.AddTensor("t", TypeF32, []uint64{1}, make([]byte, 4))
			w.AddTensor("t", TypeF32, []uint64{1}, make([]byte, 4))
		}, "added twice"},
		{"func short", func(w *Writer) {
			w.AddTensorFunc("t", TypeF32, []uint64{4}, func(out io.Writer) error { _, err := out.Write(make([]byte, 4)); return err })
		}, "wrote 4 bytes, want 16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWriter()
			tc.do(w)
			_, err := w.WriteTo(io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %v, want one containing %q", err, tc.msg)
			}
		})
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	w := NewWriter()
	w.Set("general.name", "m")
	if err := w.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	bad := NewWriter()
	bad.AddTensorFunc("t", TypeF32, []uint64{4}, func(io.Writer) error { return errors.New("boom") })
	if err := bad.WriteFile(path); err == nil {
		t.Fatal("failing tensor wrote a file")
	}
	f, err := Open(path)
	if err != nil {
		t.Fatalf("the earlier file was damaged: %v", err)
	}
	defer f.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left behind: %v", entries)
	}
}
