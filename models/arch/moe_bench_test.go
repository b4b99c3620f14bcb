package arch_test

import (
	"fmt"
	"os"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
)

// BenchmarkMoEDecode times one decode step of 1 and of 16 sequences (32
// tokens of context each, different tokens) of the mixture-of-experts
// model in $FOLIO_BENCH_MOE (e.g. `folio dev synth --preset qwen3moe-mini
// --type q4_k`) on 2 threads; skipped without it. tok/s is the step's
// rows over its time: 16 rows' over 1 row's is what batching gains at
// decode, before the scheduler; MB/step the weight bytes a step's
// matmuls read (cpu.Backend.WeightBytesRead). FOLIO_BENCH_PLAIN=1 hides the backend's
// Experts ops (the expert-by-expert path).
func BenchmarkMoEDecode(b *testing.B) {
	path := os.Getenv("FOLIO_BENCH_MOE")
	if path == "" {
		b.Skip("set FOLIO_BENCH_MOE to a mixture-of-experts GGUF file")
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	inner := cpu.New(2)
	defer inner.Close()
	var be gpu.Backend = inner
	if os.Getenv("FOLIO_BENCH_PLAIN") == "1" {
		be = struct{ gpu.Backend }{inner}
	}
	m, err := arch.Load(f, be, arch.Options{MaxRows: 512, MaxOut: 16, Context: 256})
	if err != nil {
		b.Fatal(err)
	}
	const seqs, ctx, bs = 16, 32, 16
	kv, err := be.NewKVCache(m.KVSpec(seqs*4, bs, gguf.TypeF16))
	if err != nil {
		b.Fatal(err)
	}
	table := func(s int) []int32 { return []int32{int32(4 * s), int32(4*s + 1), int32(4*s + 2), int32(4*s + 3)} }
	for s := range seqs { // each sequence's context
		ids := moePrompt(ctx, s)
		batch := &gpu.Batch{BlockSize: bs, Seqs: []gpu.Seq{{Len: ctx, Blocks: table(s)}}}
		if _, err := m.Forward(kv, batch, ids, []int32{ctx - 1}); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range []int{1, seqs} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			batch := &gpu.Batch{BlockSize: bs}
			var ids, out []int32
			for s := range n {
				batch.Seqs = append(batch.Seqs, gpu.Seq{Start: s, Len: 1, Pos: ctx, Blocks: table(s)})
				ids, out = append(ids, int32(100+37*s)), append(out, int32(s))
			}
			read := inner.WeightBytesRead()
			for b.Loop() {
				if _, err := m.Forward(kv, batch, ids, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			b.ReportMetric(float64(inner.WeightBytesRead()-read)/float64(b.N)/1e6, "MB/step")
		})
	}
}
