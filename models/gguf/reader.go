package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"slices"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the alignment of tensor data when the file has no
// general.alignment key.
const DefaultAlignment = 32

const (
	maxDims       = 4  // GGML_MAX_DIMS
	maxNameLen    = 63 // GGML_MAX_NAME - 1: ggml keeps names in a 64-byte field
	maxArrayDepth = 16 // nested arrays deeper than this are refused
)

// ErrFormat is wrapped by every error about a malformed or unsupported file.
var ErrFormat = errors.New("gguf: invalid file")

// FormatError says which field of which file is wrong, and where.
type FormatError struct {
	File   string // path or name given to Open/Parse
	Field  string // e.g. "tensor_count", "kv[3] tokenizer.ggml.tokens", "tensor[7] blk.0.attn_q.weight"
	Offset int64  // byte offset in the file where the field starts
	Msg    string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("gguf: %s: %s at offset %d: %s", e.File, e.Field, e.Offset, e.Msg)
}

func (e *FormatError) Unwrap() error { return ErrFormat }

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string
	Shape  []uint64 // GGUF (ggml) order: Shape[0] is the number of elements in a row
	Type   TensorType
	Offset uint64 // relative to the start of the tensor data section
	Bytes  int64  // size of the tensor's data
}

// Elements returns the number of elements of t.
func (t *TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}

// File is a parsed GGUF file. Its tensor data stays in the file, mapped
// read-only into memory (never copied into the Go heap); slices returned by
// TensorData are valid until Close.
type File struct {
	Path       string
	Version    uint32
	KV         []KV
	Tensors    []TensorInfo
	Alignment  int64
	DataOffset int64 // absolute offset of the tensor data section
	Size       int64 // file size in bytes

	data    []byte
	keys    map[string]int // key -> index in KV
	tensors map[string]int // name -> index in Tensors
	unmap   func() error
	mapped  bool // data is Open's mapping of the file (Release may drop its pages)
}

// Open maps the file at path read-only and parses its header. The weights
// are not read: pages of tensor data load only when TensorData is used.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gguf: %s is not a regular file", path)
	}
	data, unmap, err := mapFile(fh, st.Size())
	if err != nil {
		return nil, fmt.Errorf("gguf: map %s: %w", path, err)
	}
	f, err := Parse(path, data)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap, f.mapped = unmap, true
	return f, nil
}

// Close unmaps the file. TensorData slices must not be used afterwards.
func (f *File) Close() error {
	if f.unmap == nil {
		return nil
	}
	err := f.unmap()
	f.unmap, f.data, f.mapped = nil, nil, false
	return err
}

// Get returns the value of a metadata key.
func (f *File) Get(key string) (any, bool) {
	i, ok := f.keys[key]
	if !ok {
		return nil, false
	}
	return f.KV[i].Value, true
}

// String returns a string metadata value, or "" when absent or not a string.
func (f *File) String(key string) string {
	v, _ := f.Get(key)
	s, _ := v.(string)
	return s
}

// Int returns an integer metadata value of any integer type.
func (f *File) Int(key string) (int64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return AsInt64(v)
}

// Float returns a numeric metadata value as float64.
func (f *File) Float(key string) (float64, bool) {
	v, ok := f.Get(key)
	if !ok {
		return 0, false
	}
	return AsFloat64(v)
}

// Tensor returns the info of the named tensor.
func (f *File) Tensor(name string) (*TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Release tells the system that t's bytes will not be read again soon (a
// backend keeps its own copy of the tensor, as the CPU's repacked
// weights): on Linux their pages leave the process's resident memory and
// stay in the page cache. TensorData(t) stays valid and unchanged; reading
// it faults the pages back in. It does nothing to a File that Parse made
// from bytes in memory.
func (f *File) Release(t *TensorInfo) {
	if f.mapped && f.data != nil {
		dropPages(f.TensorData(t))
	}
}

// TensorData returns the bytes of t, a slice of the mapped file.
func (f *File) TensorData(t *TensorInfo) []byte {
	start := f.DataOffset + int64(t.Offset)
	return f.data[start : start+t.Bytes : start+t.Bytes]
}

// Parse parses a whole GGUF file held in data. name is used in errors.
// Every count and length is checked against the bytes that remain before
// anything is allocated, so no allocation exceeds what the file can justify.
func Parse(name string, data []byte) (*File, error) {
	d := &decoder{name: name, data: data}
	f := &File{Path: name, data: data, Size: int64(len(data))}

	magic := d.bytes("magic", 4)
	if d.err != nil {
		return nil, d.err
	}
	if string(magic) != Magic {
		// never the bytes found: the file may be a secret its name pointed at
		return nil, d.fail("magic", 0, "not a GGUF file (bad magic: a GGUF file starts with \""+Magic+"\")")
	}
	f.Version = d.u32("version")
	switch {
	case d.err != nil:
		return nil, d.err
	case f.Version == 2 || f.Version == 3:
	case f.Version == 1:
		return nil, d.fail("version", 4, "GGUF v1 is not supported; convert the model again with a current llama.cpp")
	case bits.ReverseBytes32(f.Version) == 2 || bits.ReverseBytes32(f.Version) == 3:
		return nil, d.fail("version", 4, "big-endian GGUF is not supported; use a little-endian file")
	default:
		return nil, d.fail("version", 4, fmt.Sprintf("unsupported version %d (folio reads versions 2 and 3)", f.Version))
	}
	tensorCount := d.count("tensor_count", 24)
	kvCount := d.count("kv_count", 13)
	if d.err != nil {
		return nil, d.err
	}

	f.KV = make([]KV, 0, kvCount)
	f.keys = make(map[string]int, kvCount)
	for i := range kvCount {
		at := d.off
		key := d.str(fmt.Sprintf("kv[%d].key", i))
		if d.err != nil {
			return nil, d.err
		}
		field := fmt.Sprintf("kv[%d] %s", i, key)
		if _, dup := f.keys[key]; dup {
			return nil, d.fail(field, at, "duplicate key")
		}
		typ := ValueType(d.u32(field + " type"))
		v := d.value(field, typ, 0)
		if d.err != nil {
			return nil, d.err
		}
		f.keys[key] = len(f.KV)
		f.KV = append(f.KV, KV{Key: key, Value: v})
	}

	f.Alignment = DefaultAlignment
	if v, ok := f.Get("general.alignment"); ok {
		a, isU32 := v.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, d.fail("general.alignment", 0,
				fmt.Sprintf("must be a uint32 power of two, got %v (%T)", v, v))
		}
		f.Alignment = int64(a)
	}

	f.Tensors = make([]TensorInfo, 0, tensorCount)
	f.tensors = make(map[string]int, tensorCount)
	infoAt := make([]int64, 0, tensorCount)
	for i := range tensorCount {
		at := d.off
		t := d.tensorInfo(i)
		if d.err != nil {
			return nil, d.err
		}
		if _, dup := f.tensors[t.Name]; dup {
			return nil, d.fail(fmt.Sprintf("tensor[%d] %s", i, t.Name), at, "duplicate tensor name")
		}
		f.tensors[t.Name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
		infoAt = append(infoAt, at)
	}

	f.DataOffset = alignUp(d.off, f.Alignment)
	if err := f.checkTensorData(d, infoAt); err != nil {
		return nil, err
	}
	return f, nil
}

// checkTensorData verifies that every tensor is aligned, lies inside the
// file and overlaps no other tensor.
func (f *File) checkTensorData(d *decoder, infoAt []int64) error {
	dataSize := f.Size - f.DataOffset
	if len(f.Tensors) > 0 && dataSize < 0 {
		return d.fail("tensor data", f.Size, fmt.Sprintf(
			"file ends before the tensor data section at offset %d; the file is truncated", f.DataOffset))
	}
	order := make([]int, len(f.Tensors))
	for i := range order {
		order[i] = i
	}
	for _, i := range order {
		t := &f.Tensors[i]
		field := fmt.Sprintf("tensor[%d] %s offset", i, t.Name)
		if int64(t.Offset%uint64(f.Alignment)) != 0 {
			return d.fail(field, infoAt[i], fmt.Sprintf("data offset %d is not a multiple of the alignment %d", t.Offset, f.Alignment))
		}
		if t.Offset > uint64(dataSize) || uint64(t.Bytes) > uint64(dataSize)-t.Offset {
			return d.fail(field, infoAt[i], fmt.Sprintf(
				"data [%d, %d) lies outside the %d bytes of tensor data; the file is truncated or corrupt",
				t.Offset, t.Offset+uint64(t.Bytes), dataSize))
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmpU64(f.Tensors[a].Offset, f.Tensors[b].Offset)
	})
	for k := 1; k < len(order); k++ {
		p, q := &f.Tensors[order[k-1]], &f.Tensors[order[k]]
		if p.Bytes > 0 && q.Bytes > 0 && p.Offset+uint64(p.Bytes) > q.Offset {
			return d.fail(fmt.Sprintf("tensor[%d] %s offset", order[k], q.Name), infoAt[order[k]],
				fmt.Sprintf("data at %d overlaps tensor %s [%d, %d)", q.Offset, p.Name, p.Offset, p.Offset+uint64(p.Bytes)))
		}
	}
	return nil
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// decoder reads little-endian fields from data. After the first error every
// read returns a zero value and d.err keeps that first error.
type decoder struct {
	name string
	data []byte
	off  int64
	err  error
}

func (d *decoder) fail(field string, at int64, msg string) error {
	if d.err == nil {
		d.err = &FormatError{File: d.name, Field: field, Offset: at, Msg: msg}
	}
	return d.err
}

func (d *decoder) remaining() int64 { return int64(len(d.data)) - d.off }

func (d *decoder) bytes(field string, n int64) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > d.remaining() {
		d.fail(field, d.off, fmt.Sprintf("needs %d bytes but only %d remain; the file is truncated", n, d.remaining()))
		return nil
	}
	b := d.data[d.off : d.off+n]
	d.off += n
	return b
}

func (d *decoder) u8(field string) uint8 {
	if b := d.bytes(field, 1); b != nil {
		return b[0]
	}
	return 0
}

func (d *decoder) u16(field string) uint16 {
	if b := d.bytes(field, 2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (d *decoder) u32(field string) uint32 {
	if b := d.bytes(field, 4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64(field string) uint64 {
	if b := d.bytes(field, 8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a uint64 count of items each at least minSize bytes long and
// refuses counts the rest of the file cannot hold.
func (d *decoder) count(field string, minSize int64) int64 {
	at := d.off
	n := d.u64(field)
	if d.err != nil {
		return 0
	}
	if n > uint64(d.remaining()/minSize) {
		d.fail(field, at, fmt.Sprintf("count %d needs at least %d bytes each but only %d bytes remain",
			n, minSize, d.remaining()))
		return 0
	}
	return int64(n)
}

func (d *decoder) str(field string) string {
	at := d.off
	n := d.u64(field + " length")
	if d.err != nil {
		return ""
	}
	if n > uint64(d.remaining()) {
		d.fail(field, at, fmt.Sprintf("string length %d exceeds the %d bytes that remain", n, d.remaining()))
		return ""
	}
	return string(d.bytes(field, int64(n)))
}

func (d *decoder) value(field string, typ ValueType, depth int) any {
	at := d.off
	switch typ {
	case ValueUint8:
		return d.u8(field)
	case ValueInt8:
		return int8(d.u8(field))
	case ValueUint16:
		return d.u16(field)
	case ValueInt16:
		return int16(d.u16(field))
	case ValueUint32:
		return d.u32(field)
	case ValueInt32:
		return int32(d.u32(field))
	case ValueFloat32:
		return math.Float32frombits(d.u32(field))
	case ValueUint64:
		return d.u64(field)
	case ValueInt64:
		return int64(d.u64(field))
	case ValueFloat64:
		return math.Float64frombits(d.u64(field))
	case ValueBool:
		b := d.u8(field)
		if b > 1 {
			d.fail(field, at, fmt.Sprintf("bool byte is %d, must be 0 or 1", b))
		}
		return b == 1
	case ValueString:
		return d.str(field)
	case ValueArray:
		return d.array(field, depth)
	}
	d.fail(field, at-4, fmt.Sprintf("unknown value type %d (valid types are 0..12)", uint32(typ)))
	return nil
}

func (d *decoder) array(field string, depth int) Array {
	at := d.off
	if depth >= maxArrayDepth {
		d.fail(field, at, fmt.Sprintf("arrays nested deeper than %d levels", maxArrayDepth))
		return Array{}
	}
	elem := ValueType(d.u32(field + " element type"))
	if d.err != nil {
		return Array{}
	}
	size := elem.size()
	if size == 0 {
		d.fail(field, at, fmt.Sprintf("unknown array element type %d (valid types are 0..12)", uint32(elem)))
		return Array{}
	}
	n := d.count(field+" count", size)
	if d.err != nil {
		return Array{}
	}
	a := Array{Elem: elem}
	switch elem {
	case ValueUint8:
		a.Values = decodeFixed(d, field, n, 1, func(b []byte) uint8 { return b[0] })
	case ValueInt8:
		a.Values = decodeFixed(d, field, n, 1, func(b []byte) int8 { return int8(b[0]) })
	case ValueUint16:
		a.Values = decodeFixed(d, field, n, 2, binary.LittleEndian.Uint16)
	case ValueInt16:
		a.Values = decodeFixed(d, field, n, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case ValueUint32:
		a.Values = decodeFixed(d, field, n, 4, binary.LittleEndian.Uint32)
	case ValueInt32:
		a.Values = decodeFixed(d, field, n, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case ValueFloat32:
		a.Values = decodeFixed(d, field, n, 4, func(b []byte) float32 {
			return math.Float32frombits(binary.LittleEndian.Uint32(b))
		})
	case ValueUint64:
		a.Values = decodeFixed(d, field, n, 8, binary.LittleEndian.Uint64)
	case ValueInt64:
		a.Values = decodeFixed(d, field, n, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case ValueFloat64:
		a.Values = decodeFixed(d, field, n, 8, func(b []byte) float64 {
			return math.Float64frombits(binary.LittleEndian.Uint64(b))
		})
	case ValueBool:
		vs := make([]bool, n)
		for i := range vs {
			vs[i] = d.value(field, ValueBool, depth).(bool)
		}
		a.Values = vs
	case ValueString:
		vs := make([]string, n)
		for i := range vs {
			vs[i] = d.str(field)
		}
		a.Values = vs
	case ValueArray:
		vs := make([]Array, n)
		for i := range vs {
			vs[i] = d.array(fmt.Sprintf("%s[%d]", field, i), depth+1)
		}
		a.Values = vs
	}
	if d.err != nil {
		return Array{}
	}
	return a
}

// decodeFixed decodes n fixed-size elements; count has already checked that
// the file holds n*size bytes.
func decodeFixed[T any](d *decoder, field string, n, size int64, get func([]byte) T) []T {
	b := d.bytes(field, n*size)
	if b == nil {
		return nil
	}
	vs := make([]T, n)
	for i := range vs {
		vs[i] = get(b[int64(i)*size:])
	}
	return vs
}

func (d *decoder) tensorInfo(i int64) TensorInfo {
	var t TensorInfo
	at := d.off
	t.Name = d.str(fmt.Sprintf("tensor[%d].name", i))
	if d.err != nil {
		return t
	}
	field := fmt.Sprintf("tensor[%d] %s", i, t.Name)
	switch {
	case t.Name == "":
		d.fail(field, at, "empty tensor name")
		return t
	case len(t.Name) > maxNameLen:
		d.fail(field, at, fmt.Sprintf("name is %d bytes; ggml allows at most %d", len(t.Name), maxNameLen))
		return t
	}
	nDims := d.u32(field + " n_dims")
	if d.err != nil {
		return t
	}
	if nDims == 0 || nDims > maxDims {
		d.fail(field+" n_dims", d.off-4, fmt.Sprintf("%d dimensions; must be 1..%d", nDims, maxDims))
		return t
	}
	dimsAt := d.off
	t.Shape = make([]uint64, nDims)
	elems := uint64(1)
	for j := range t.Shape {
		t.Shape[j] = d.u64(field + " shape")
		if d.err != nil {
			return t
		}
		hi, lo := bits.Mul64(elems, t.Shape[j])
		if t.Shape[j] > math.MaxInt64 || hi != 0 || lo > math.MaxInt64 {
			d.fail(field+" shape", dimsAt, fmt.Sprintf("shape %v overflows the element count", t.Shape[:j+1]))
			return t
		}
		elems = lo
	}
	typeAt := d.off
	t.Type = TensorType(d.u32(field + " type"))
	t.Offset = d.u64(field + " offset")
	if d.err != nil {
		return t
	}
	if !t.Type.Known() {
		d.fail(field+" type", typeAt, fmt.Sprintf("unknown tensor type %d; this file needs a newer folio", uint32(t.Type)))
		return t
	}
	if bs := uint64(t.Type.BlockSize()); t.Shape[0]%bs != 0 {
		d.fail(field+" shape", dimsAt, fmt.Sprintf("row length %d is not a multiple of the %s block size %d",
			t.Shape[0], t.Type, bs))
		return t
	}
	// The row length is a multiple of the block size, so the whole tensor is too.
	blocks, blockBytes := int64(elems)/int64(t.Type.BlockSize()), int64(t.Type.TypeSize())
	if blocks > math.MaxInt64/blockBytes {
		d.fail(field+" shape", dimsAt, fmt.Sprintf("shape %v is too large in bytes", t.Shape))
		return t
	}
	t.Bytes = blocks * blockBytes
	return t
}
