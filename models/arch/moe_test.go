package arch_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/internal/fixtures"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// llamaLogits is llama.cpp's next-token logits after tokens (F32 K/V, no
// flash attention) and its greedy next token.
func llamaLogits(t *testing.T, path string, tokens []int32) ([]float32, int32) {
	t.Helper()
	ids := strings.Trim(strings.ReplaceAll(fmt.Sprint(tokens), " ", ","), "[]")
	out := fixtures.RunLlamaref(t, "run", path, "--tokens", "["+ids+"]", "--n-predict", "1",
		"--kv-type", "f32", "--flash-attn", "off", "--threads", "2", "--compact", "--full-logits")
	var r struct {
		NextToken struct {
			Argmax int32     `json:"argmax"`
			Logits []float32 `json:"logits"`
		} `json:"next_token"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("llamaref run %s: %v", path, err)
	}
	return r.NextToken.Logits, r.NextToken.Argmax
}

// moePrompt is BOS and n-1 ordinary tokens of the byte vocabulary.
func moePrompt(n, salt int) []int32 {
	ids := []int32{1}
	for i := 1; i < n; i++ {
		ids = append(ids, int32(10+(i*37+salt*101)%480))
	}
	return ids
}

// TestQwen3moeLlamaCpp: the tiny qwen3moe (3 layers, 8 experts, top-2)
// against llama.cpp, through scrambled block tables: each prompt alone,
// three prompts in one batch (their rows share experts), and one decode
// step of the three in one batch.
func TestQwen3moeLlamaCpp(t *testing.T) {
	prompts := [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(57, 3)}
	for _, typ := range []gguf.TensorType{gguf.TypeF32, gguf.TypeQ8_0, gguf.TypeQ4_K} {
		t.Run(typ.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "qwen3moe.gguf")
			if err := synth.WriteTiny(path, "qwen3moe", typ, 7); err != nil {
				t.Fatal(err)
			}
			r := openRig(t, path, 16, gguf.TypeF32)
			compareWithLlamaCpp(t, r, path, prompts, tolerance(typ))
		})
	}
}

// countBackend counts the MatMuls of each weight: which experts a step
// reads. Its optional capabilities are hidden, so gate and up go through
// MatMul one by one.
type countBackend struct {
	gpu.Backend
	names map[gpu.Tensor]string
	seen  map[string]int
	reads map[string]int
}

func (b *countBackend) Weight(name string, typ gguf.TensorType, rows, cols int, data []byte) (gpu.Tensor, error) {
	w, err := b.Backend.Weight(name, typ, rows, cols, data)
	if err == nil {
		// an expert's slice is named by its 3-D tensor; the loader loads
		// them in order, so the k-th of a name is expert k
		b.names[w] = fmt.Sprintf("%s#%d", name, b.seen[name])
		b.seen[name]++
	}
	return w, err
}

func (b *countBackend) MatMul(dst, x, w gpu.Tensor) {
	b.reads[b.names[w]]++
	b.Backend.MatMul(dst, x, w)
}

// countExperts is countBackend with the CPU's Experts ops, which count
// each span's weights as multiplied.
type countExperts struct {
	*countBackend
	ex gpu.Experts
}

func (b *countExperts) ExpertMatMuls(dsts []gpu.Tensor, x gpu.Tensor, rows []int32, ws [][]gpu.Tensor, spans []gpu.ExpertSpan) {
	for _, l := range ws {
		for _, s := range spans {
			b.reads[b.names[l[s.Expert]]]++
		}
	}
	b.ex.ExpertMatMuls(dsts, x, rows, ws, spans)
}

func (b *countExperts) ExpertSum(dst, y gpu.Tensor, at []int32, weights []float32) {
	b.ex.ExpertSum(dst, y, at, weights)
}

// TestMoEReadsChosenExperts: a decode step multiplies by exactly
// ExpertsUsed experts' gate, up and down matrices in each layer, once
// each; a prompt's step multiplies by no expert's matrix more than once;
// the CPU's WeightBytesRead counts the bytes of the matrices multiplied.
// With the Experts ops and with the plain ones.
func TestMoEReadsChosenExperts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "qwen3moe.gguf")
	if err := synth.WriteTiny(path, "qwen3moe", gguf.TypeQ8_0, 3); err != nil {
		t.Fatal(err)
	}
	for _, withExperts := range []bool{true, false} {
		t.Run(fmt.Sprintf("experts ops %v", withExperts), func(t *testing.T) {
			readsChosenExperts(t, path, withExperts)
		})
	}
}

func readsChosenExperts(t *testing.T, path string, withExperts bool) {
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	inner := cpu.New(1)
	defer inner.Close()
	cb := &countBackend{Backend: inner, names: map[gpu.Tensor]string{}, seen: map[string]int{}, reads: map[string]int{}}
	var be gpu.Backend = cb
	if withExperts {
		be = &countExperts{countBackend: cb, ex: inner}
	}
	m, err := arch.Load(f, be, arch.Options{MaxRows: 64})
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int64{}
	for w, name := range cb.names {
		sizes[name] = int64(w.Rows()) * w.Type().RowBytes(int64(w.Cols()))
	}
	kv, err := be.NewKVCache(m.KVSpec(8, 16, gguf.TypeF32))
	if err != nil {
		t.Fatal(err)
	}
	prompt := moePrompt(30, 5)
	step := func(ids []int32, pos int) map[int]map[int]int {
		clear(cb.reads)
		before := inner.WeightBytesRead()
		b := &gpu.Batch{BlockSize: 16, Seqs: []gpu.Seq{{Len: len(ids), Pos: pos, Blocks: []int32{5, 2, 7}}}}
		if _, err := m.Forward(kv, b, ids, []int32{int32(len(ids) - 1)}); err != nil {
			t.Fatal(err)
		}
		experts := map[int]map[int]int{} // layer → expert → matmuls of its matrices
		var bytes int64
		for name, n := range cb.reads {
			bytes += int64(n) * sizes[name]
			var layer, e int
			var kind string
			if _, err := fmt.Sscanf(strings.NewReplacer(".", " ", "#", " ").Replace(name), "blk %d %s weight %d", &layer, &kind, &e); err != nil || !strings.HasSuffix(kind, "_exps") {
				continue
			}
			if experts[layer] == nil {
				experts[layer] = map[int]int{}
			}
			if n != 1 {
				t.Errorf("%s multiplied %d times in one step", name, n)
			}
			experts[layer][e] += n
		}
		if got := inner.WeightBytesRead() - before; got != bytes {
			t.Errorf("%d tokens at %d: WeightBytesRead counted %d bytes, the matrices multiplied hold %d", len(ids), pos, got, bytes)
		}
		return experts
	}
	pre := step(prompt, 0)
	dec := step([]int32{42}, len(prompt))
	for l := range m.Layers {
		t.Logf("layer %d: prompt of %d reads %d of %d experts, decode reads %v", l, len(prompt), len(pre[l]), m.Experts, dec[l])
		if len(dec[l]) != m.ExpertsUsed {
			t.Errorf("layer %d: decode read %d experts (%v), want %d", l, len(dec[l]), dec[l], m.ExpertsUsed)
		}
		for e, n := range dec[l] {
			if n != 3 {
				t.Errorf("layer %d: expert %d: %d of its gate, up and down matrices multiplied, want 3", l, e, n)
			}
		}
	}
}

// experts counts the CPU's ExpertMatMuls.
type experts struct {
	*cpu.Backend
	calls int
}

func (b *experts) ExpertMatMuls(dsts []gpu.Tensor, x gpu.Tensor, rows []int32, ws [][]gpu.Tensor, spans []gpu.ExpertSpan) {
	b.calls++
	b.Backend.ExpertMatMuls(dsts, x, rows, ws, spans)
}

// TestMoEExpertsOpsExact: through the CPU's Experts ops the tiny
// qwen3moe's logits are those of the plain ops (a Gather and MatMuls an
// expert, the sums on the host) bit for bit, on the SIMD kernels (Q8_0,
// Q4_K) and the Go ones (F32): three prompts in one batch, then a batched
// decode step; and qwen2moe's, whose gated shared expert joins either sum.
func TestMoEExpertsOpsExact(t *testing.T) {
	for _, tc := range []struct {
		arch string
		typ  gguf.TensorType
	}{{"qwen3moe", gguf.TypeF32}, {"qwen3moe", gguf.TypeQ8_0}, {"qwen3moe", gguf.TypeQ4_K}, {"qwen2moe", gguf.TypeQ8_0}} {
		family, typ := tc.arch, tc.typ
		t.Run(family+"/"+typ.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), family+".gguf")
			if err := synth.WriteTiny(path, family, typ, 7); err != nil {
				t.Fatal(err)
			}
			var got [2][][]float32
			calls := 0
			for i := range got {
				f, err := gguf.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				inner := cpu.New(2)
				ex := &experts{Backend: inner}
				var be gpu.Backend = ex
				if i == 1 {
					be = struct{ gpu.Backend }{inner} // the capability hidden
				}
				r := rigOn(t, f, be)
				got[i] = r.promptsThenStep(t, [][]int32{moePrompt(41, 1), moePrompt(23, 2), moePrompt(57, 3)})
				if i == 0 {
					calls = ex.calls
				}
				inner.Close()
				f.Close()
			}
			if want := 2 * 2 * 3; calls != want { // gate and up, down; each layer; two steps
				t.Errorf("%d ExpertMatMuls, want %d", calls, want)
			}
			sameLogits(t, got[0], got[1], "with the Experts ops", "without")
		})
	}
}

// rigOn loads the model in f onto be with a pool of 64 F32 blocks of 16.
func rigOn(t testing.TB, f *gguf.File, be gpu.Backend) *rig {
	t.Helper()
	m, err := arch.Load(f, be, arch.Options{MaxRows: 256, MaxOut: 8})
	if err != nil {
		t.Fatal(err)
	}
	return newRig(t, f, m, m.KVSpec(64, 16, gguf.TypeF32))
}

// promptsThenStep runs prompts in one batch, then a batched decode step
// of each (token 40 + its index), and returns both passes' logits.
func (r *rig) promptsThenStep(t testing.TB, prompts [][]int32) [][]float32 {
	t.Helper()
	var seqs []seqRun
	for j, p := range prompts {
		seqs = append(seqs, seqRun{ids: p, table: r.table(j)})
	}
	got := r.run(t, seqs)
	for j := range seqs {
		seqs[j] = seqRun{ids: []int32{int32(40 + j)}, pos: len(prompts[j]), table: seqs[j].table}
	}
	return append(got, r.run(t, seqs)...)
}

// sameLogits fails t unless a and b, the logits of two ways (named by wa
// and wb), are equal bit for bit.
func sameLogits(t testing.TB, a, b [][]float32, wa, wb string) {
	t.Helper()
	for j := range a {
		for v := range a[j] {
			if a[j][v] != b[j][v] {
				t.Fatalf("logits %d: element %d is %v %s, %v %s", j, v, a[j][v], wa, b[j][v], wb)
			}
		}
	}
}

// compareWithLlamaCpp checks r's logits for the model at path against
// llama.cpp's, to tol of the largest logit: each prompt alone, all of them
// in one batch (their rows share experts), then a batched decode step of
// each prompt's llama.cpp greedy token.
func compareWithLlamaCpp(t *testing.T, r *rig, path string, prompts [][]int32, tol float64) {
	t.Helper()
	check := func(what string, got, want []float32) {
		t.Helper()
		diff, scale := maxDiff(got, want)
		t.Logf("%s: max|diff| %.3g = %.3g × max|logit| %.3g", what, diff, diff/scale, scale)
		if diff > tol*scale {
			t.Errorf("%s: max|diff| %.4g exceeds %.0e × max|logit| %.4g", what, diff, tol, scale)
		}
	}
	var seqs []seqRun
	var want [][]float32
	var next []int32
	for i, p := range prompts {
		l, tok := llamaLogits(t, path, p)
		want, next = append(want, l), append(next, tok)
		check(fmt.Sprintf("prompt %d alone", i), r.run(t, []seqRun{{ids: p, table: r.table(i)}})[0], l)
		seqs = append(seqs, seqRun{ids: p, table: r.table(i)})
	}
	for i, got := range r.run(t, seqs) {
		check(fmt.Sprintf("prompt %d batched", i), got, want[i])
	}
	for i := range seqs {
		seqs[i] = seqRun{ids: next[i : i+1], pos: len(prompts[i]), table: seqs[i].table}
	}
	for i, got := range r.run(t, seqs) {
		l, _ := llamaLogits(t, path, append(append([]int32{}, prompts[i]...), next[i]))
		check(fmt.Sprintf("decode %d batched", i), got, l)
	}
}
