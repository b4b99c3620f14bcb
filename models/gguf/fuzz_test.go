package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the reader: it must return an error or a
// file whose tensors all lie inside the data, never panic or allocate more
// than the input justifies; and a file it accepts must survive a rewrite:
// write(parse(write(parse(x)))) == write(parse(x)).
//
// Seeds: files built here, and every GGUF in ../shared/models when present
// (FOLIO_SHARED overrides the folder, as in internal/fixtures).
func FuzzParse(f *testing.F) {
	f.Add(sampleFile(f))
	f.Add(rawFile(nil, []rawTensor{w32x2}, 256))
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	shared := os.Getenv("FOLIO_SHARED")
	if shared == "" {
		shared = filepath.Join("..", "..", "..", "shared")
	}
	paths, _ := filepath.Glob(filepath.Join(shared, "models", "*.gguf"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse("fuzz.gguf", data)
		if err != nil {
			return
		}
		for i := range file.Tensors {
			_ = file.TensorData(&file.Tensors[i])
		}
		var once bytes.Buffer
		if _, err := NewWriterFrom(file).WriteTo(&once); err != nil {
			t.Fatalf("rewrite of an accepted file failed: %v", err)
		}
		again, err := Parse("rewritten.gguf", once.Bytes())
		if err != nil {
			t.Fatalf("rewritten file does not parse: %v", err)
		}
		var twice bytes.Buffer
		if _, err := NewWriterFrom(again).WriteTo(&twice); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("rewriting is not stable")
		}
	})
}
