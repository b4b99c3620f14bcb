package gguf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Writer assembles a GGUF v3 file: metadata in the order it was set, then
// tensor infos and tensor data in the order tensors were added, each tensor
// at an offset aligned to the file's alignment (general.alignment, else 32).
// Tensor data can be given as bytes or produced while writing, so files
// larger than memory can be written.
type Writer struct {
	kv      []KV
	keys    map[string]int
	tensors []writerTensor
	names   map[string]bool
	err     error // first error of Set or AddTensor, reported by WriteTo
}

type writerTensor struct {
	info  TensorInfo
	write func(io.Writer) error
}

// NewWriter returns an empty writer.
func NewWriter() *Writer {
	return &Writer{keys: map[string]int{}, names: map[string]bool{}}
}

// NewWriterFrom returns a writer holding all metadata and tensors of f, with
// tensor data read from f's mapping: WriteTo then reproduces f.
func NewWriterFrom(f *File) *Writer {
	w := NewWriter()
	for _, kv := range f.KV {
		w.Set(kv.Key, kv.Value)
	}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		w.AddTensor(t.Name, t.Type, t.Shape, f.TensorData(t))
	}
	return w
}

// Set sets a metadata key, replacing an earlier value in place. value must
// have a GGUF type (see TypeOf); plain slices are stored as arrays.
func (w *Writer) Set(key string, value any) {
	typ, ok := TypeOf(value)
	if !ok {
		w.setErr(fmt.Errorf("gguf: metadata %s: value of Go type %T has no GGUF type; use a sized type such as uint32 or int32", key, value))
		return
	}
	if typ == ValueArray {
		if a, isSlice := sliceArray(value); isSlice {
			value = a
		}
		if err := checkArray(value.(Array)); err != nil {
			w.setErr(fmt.Errorf("gguf: metadata %s: %w", key, err))
			return
		}
	}
	if key == "general.alignment" {
		a, isU32 := value.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			w.setErr(fmt.Errorf("gguf: general.alignment must be a uint32 power of two, got %v (%T)", value, value))
			return
		}
	}
	if i, ok := w.keys[key]; ok {
		w.kv[i].Value = value
		return
	}
	w.keys[key] = len(w.kv)
	w.kv = append(w.kv, KV{Key: key, Value: value})
}

// Delete removes a metadata key if present.
func (w *Writer) Delete(key string) {
	i, ok := w.keys[key]
	if !ok {
		return
	}
	w.kv = append(w.kv[:i], w.kv[i+1:]...)
	delete(w.keys, key)
	for j := i; j < len(w.kv); j++ {
		w.keys[w.kv[j].Key] = j
	}
}

// checkArray verifies that a.Values is the slice type a.Elem calls for.
func checkArray(a Array) error {
	s, ok := sliceArray(a.Values)
	if !ok || s.Elem != a.Elem {
		return fmt.Errorf("array of %s holds %T", a.Elem, a.Values)
	}
	if a.Elem == ValueArray {
		for _, sub := range a.Values.([]Array) {
			if err := checkArray(sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddTensor adds a tensor whose data is in memory. shape is in GGUF order
// (row length first); len(data) must equal the size the type and shape imply.
func (w *Writer) AddTensor(name string, typ TensorType, shape []uint64, data []byte) {
	w.AddTensorFunc(name, typ, shape, func(out io.Writer) error {
		_, err := out.Write(data)
		return err
	})
	if w.err == nil && int64(len(data)) != w.tensors[len(w.tensors)-1].info.Bytes {
		w.setErr(fmt.Errorf("gguf: tensor %s: %d bytes of data, want %d for %s %v",
			name, len(data), w.tensors[len(w.tensors)-1].info.Bytes, typ, shape))
	}
}

// AddTensorFunc adds a tensor whose data is produced by write at WriteTo
// time. write must write exactly the number of bytes the type and shape imply.
func (w *Writer) AddTensorFunc(name string, typ TensorType, shape []uint64, write func(io.Writer) error) {
	switch {
	case name == "" || len(name) > maxNameLen:
		w.setErr(fmt.Errorf("gguf: tensor name %q must be 1..%d bytes", name, maxNameLen))
		return
	case w.names[name]:
		w.setErr(fmt.Errorf("gguf: tensor %s added twice", name))
		return
	case !typ.Known():
		w.setErr(fmt.Errorf("gguf: tensor %s: unknown type %s", name, typ))
		return
	case len(shape) == 0 || len(shape) > maxDims:
		w.setErr(fmt.Errorf("gguf: tensor %s: %d dimensions, must be 1..%d", name, len(shape), maxDims))
		return
	case shape[0]%uint64(typ.BlockSize()) != 0:
		w.setErr(fmt.Errorf("gguf: tensor %s: row length %d is not a multiple of the %s block size %d",
			name, shape[0], typ, typ.BlockSize()))
		return
	}
	rows := int64(1)
	for _, d := range shape[1:] {
		rows *= int64(d)
	}
	info := TensorInfo{Name: name, Shape: append([]uint64(nil), shape...), Type: typ,
		Bytes: typ.RowBytes(int64(shape[0])) * rows}
	w.names[name] = true
	w.tensors = append(w.tensors, writerTensor{info: info, write: write})
}

func (w *Writer) setErr(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *Writer) alignment() int64 {
	if i, ok := w.keys["general.alignment"]; ok {
		return int64(w.kv[i].Value.(uint32))
	}
	return DefaultAlignment
}

// WriteTo writes the file to out.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	if w.err != nil {
		return 0, w.err
	}
	cw := &countingWriter{w: bufio.NewWriterSize(out, 1<<20)}
	e := encoder{w: cw}
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(w.tensors)))
	e.u64(uint64(len(w.kv)))
	for _, kv := range w.kv {
		e.str(kv.Key)
		typ, _ := TypeOf(kv.Value)
		e.u32(uint32(typ))
		e.value(kv.Value)
	}
	align := w.alignment()
	var offset int64
	for i := range w.tensors {
		t := &w.tensors[i].info
		t.Offset = uint64(offset)
		e.str(t.Name)
		e.u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(t.Offset)
		offset = alignUp(offset+t.Bytes, align)
	}
	if len(w.tensors) > 0 {
		e.pad(align) // a file without tensors ends right after its infos, as ggml writes it
	}
	dataStart := cw.n
	for i := range w.tensors {
		t := &w.tensors[i]
		if e.err != nil {
			break
		}
		start := cw.n
		if err := t.write(cw); err != nil {
			return cw.n, fmt.Errorf("gguf: write tensor %s: %w", t.info.Name, err)
		}
		if cw.err != nil {
			return cw.n, fmt.Errorf("gguf: write tensor %s: %w", t.info.Name, cw.err)
		}
		if got := cw.n - start; got != t.info.Bytes {
			return cw.n, fmt.Errorf("gguf: tensor %s: wrote %d bytes, want %d", t.info.Name, got, t.info.Bytes)
		}
		e.padFrom(dataStart, align) // ggml pads after every tensor, the last included
	}
	if e.err == nil {
		e.err = cw.w.(*bufio.Writer).Flush()
	}
	if e.err != nil {
		return cw.n, fmt.Errorf("gguf: write: %w", e.err)
	}
	return cw.n, nil
}

// WriteFile writes the file atomically: into a temporary file beside path,
// synced, then renamed over path.
func (w *Writer) WriteFile(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = w.WriteTo(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		return fmt.Errorf("gguf: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}

// encoder writes little-endian fields, keeping the first error.
type encoder struct {
	w   *countingWriter
	buf [8]byte
	err error
}

func (e *encoder) raw(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

func (e *encoder) u8(v uint8)   { e.raw([]byte{v}) }
func (e *encoder) u16(v uint16) { binary.LittleEndian.PutUint16(e.buf[:], v); e.raw(e.buf[:2]) }
func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.buf[:], v); e.raw(e.buf[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.buf[:], v); e.raw(e.buf[:8]) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	e.raw([]byte(s))
}

var zeros [256]byte

// pad writes zeros up to the next multiple of align from the file start.
func (e *encoder) pad(align int64) { e.padFrom(0, align) }

// padFrom writes zeros up to the next multiple of align counted from start.
func (e *encoder) padFrom(start, align int64) {
	n := alignUp(e.w.n-start, align) - (e.w.n - start)
	for n > 0 {
		k := min(n, int64(len(zeros)))
		e.raw(zeros[:k])
		n -= k
	}
}

func (e *encoder) value(v any) {
	switch x := v.(type) {
	case uint8:
		e.u8(x)
	case int8:
		e.u8(uint8(x))
	case uint16:
		e.u16(x)
	case int16:
		e.u16(uint16(x))
	case uint32:
		e.u32(x)
	case int32:
		e.u32(uint32(x))
	case float32:
		e.u32(math.Float32bits(x))
	case bool:
		if x {
			e.u8(1)
		} else {
			e.u8(0)
		}
	case string:
		e.str(x)
	case uint64:
		e.u64(x)
	case int64:
		e.u64(uint64(x))
	case float64:
		e.u64(math.Float64bits(x))
	case Array:
		e.u32(uint32(x.Elem))
		e.u64(uint64(x.Len()))
		e.arrayValues(x.Values)
	}
}

func (e *encoder) arrayValues(vs any) {
	switch s := vs.(type) {
	case []uint8:
		e.raw(s)
	case []int8:
		eachValue(e, s)
	case []uint16:
		eachValue(e, s)
	case []int16:
		eachValue(e, s)
	case []uint32:
		eachValue(e, s)
	case []int32:
		eachValue(e, s)
	case []float32:
		eachValue(e, s)
	case []bool:
		eachValue(e, s)
	case []string:
		eachValue(e, s)
	case []uint64:
		eachValue(e, s)
	case []int64:
		eachValue(e, s)
	case []float64:
		eachValue(e, s)
	case []Array:
		eachValue(e, s)
	}
}

func eachValue[T any](e *encoder, s []T) {
	for _, v := range s {
		e.value(v)
	}
}
