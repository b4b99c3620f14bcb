package gguf

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// residentBytes is the process's resident memory (/proc/self/statm).
func residentBytes(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("statm: %v", err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// Release takes a tensor's pages out of the process's resident memory
// and leaves its bytes as they were; on a File made by Parse from memory
// it touches nothing.
func TestRelease(t *testing.T) {
	const size = 32 << 20
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	w := NewWriter()
	w.Set("general.architecture", "llama")
	w.AddTensor("a.weight", TypeF32, []uint64{1 << 10, size / 4 >> 10}, data)
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "a.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ti, _ := f.Tensor("a.weight")
	if !bytes.Equal(f.TensorData(ti), data) { // reads every page in
		t.Fatal("tensor data differs from what was written")
	}
	before := residentBytes(t)
	f.Release(ti)
	if freed := before - residentBytes(t); freed < size/2 {
		t.Errorf("Release freed %d resident bytes of a %d-byte tensor", freed, size)
	}
	if !bytes.Equal(f.TensorData(ti), data) {
		t.Fatal("tensor data differs after Release")
	}

	mem, err := Parse("in memory", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	mt, _ := mem.Tensor("a.weight")
	mem.Release(mt)
	if !bytes.Equal(mem.TensorData(mt), data) {
		t.Fatal("Release changed a parsed file's bytes in memory")
	}
}
