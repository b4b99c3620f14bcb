package gguf

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// writeSparse1GB writes a model header for one 1 GiB F32 tensor and extends
// the file to its full size without writing the data, so no data page is in
// the page cache until someone reads it.
func writeSparse1GB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.gguf")
	w := NewWriter()
	w.Set("general.architecture", "llama")
	const n = 1 << 28 // elements: 1 GiB of F32
	w.AddTensorFunc("big.weight", TypeF32, []uint64{1 << 14, n >> 14}, func(out io.Writer) error {
		f := out.(*countingWriter)
		f.n += 4 * n // skipped: the file is extended below
		return nil
	})
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := w.WriteTo(fh); err != nil {
		t.Fatal(err)
	}
	info := w.tensors[0].info
	if err := fh.Truncate(dataOffset(t, fh) + int64(info.Offset) + info.Bytes); err != nil {
		t.Fatal(err)
	}
	return path
}

// dataOffset returns the data offset of a file written by writeSparse1GB:
// the bytes actually written before the skipped tensor.
func dataOffset(t testing.TB, fh *os.File) int64 {
	st, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// residentPages counts the pages under b that are in memory (mincore).
func residentPages(t *testing.T, b []byte) int {
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(&b[0])) &^ (page - 1) // mincore wants a page-aligned address
	length := uintptr(unsafe.Pointer(&b[0])) + uintptr(len(b)) - start
	vec := make([]byte, (length+page-1)/page)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, length, uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Skipf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// Opening a model and summarizing it reads the header only: the weights stay
// on disk until a tensor is used.
func TestOpenDoesNotReadWeights(t *testing.T) {
	path := writeSparse1GB(t)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Summary()
	if s.TensorBytes != 1<<30 {
		t.Fatalf("tensor bytes %d", s.TensorBytes)
	}
	data := f.TensorData(&f.Tensors[0])
	pages := len(data) / os.Getpagesize()
	if got := residentPages(t, data); got > pages/100 {
		t.Fatalf("%d of %d weight pages are in memory after Open+Summary; the header parse touched the weights", got, pages)
	}
	sink = data[len(data)/2] // reading one weight brings in (at least) its page
	if got := residentPages(t, data); got == 0 {
		t.Fatal("mincore reports no resident page after a read; the check above proves nothing")
	}
}

var sink byte

func BenchmarkOpenSummary1GB(b *testing.B) {
	path := writeSparse1GB(b)
	for b.Loop() {
		f, err := Open(path)
		if err != nil {
			b.Fatal(err)
		}
		_ = f.Summary()
		f.Close()
	}
}
