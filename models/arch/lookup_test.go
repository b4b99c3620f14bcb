package arch

import (
	"fmt"
	"path/filepath"
	"testing"

	"folio/gpu/cpu"
	"folio/models/gguf"
	"folio/models/synth"
)

// Untied token embeddings are only looked up (Embed): the CPU keeps them
// without a repacked copy (gpu.LookupWeighter) and the loader leaves their
// pages alone; tied ones are the output matrix too and get the copy.
func TestLookupOnlyEmbeddings(t *testing.T) {
	if cpu.RepackedBytes(gguf.TypeQ8_0, 512, 256) == 0 {
		t.Skip("no repacked Q8_0 weights at this SIMD level")
	}
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tiny.gguf")
			if err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 0, func(c *synth.Config) { c.Tied = tied }); err != nil {
				t.Fatal(err)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if LookupOnly(f, "token_embd.weight") == tied || LookupOnly(f, "output.weight") {
				t.Fatalf("tied %v: LookupOnly(token_embd) = %v, (output) = %v", tied, LookupOnly(f, "token_embd.weight"), LookupOnly(f, "output.weight"))
			}
			be := cpu.New(2)
			defer be.Close()
			m, err := Load(f, be, Options{MaxRows: 16})
			if err != nil {
				t.Fatal(err)
			}
			if got := m.tokEmbd.(*cpu.Tensor).Repacked(); got != tied {
				t.Errorf("tied %v: token embeddings repacked: %v", tied, got)
			}
			if !m.output.(*cpu.Tensor).Repacked() {
				t.Errorf("tied %v: the output matrix is not repacked", tied)
			}
		})
	}
}
