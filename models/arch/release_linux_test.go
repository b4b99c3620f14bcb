package arch_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/models/synth"
)

// mappedRSS is the resident memory of the process's mappings of path
// (/proc/self/smaps).
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("smaps: %v", err)
	}
	defer f.Close()
	var rss int64
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if fields := strings.Fields(line); len(fields) > 0 && strings.Contains(fields[0], "-") {
			in = strings.HasSuffix(line, " "+path)
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			rss += kb << 10
		}
	}
	return rss
}

// TestMoEReleasesRepackedExperts: once the CPU has repacked every
// expert's slice of a 3-D tensor, the file's pages of it leave the
// process's resident memory, as a whole repacked weight's do: the
// mapping keeps a small part of the experts' bytes resident, not all.
func TestMoEReleasesRepackedExperts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "qwen3moe.gguf")
	err := synth.WriteTiny(path, "qwen3moe", gguf.TypeQ4_K, 5, func(c *synth.Config) { c.ExpertFFN = 1024 })
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	be := cpu.New(1)
	defer be.Close()
	var experts int64
	for _, ti := range f.Tensors {
		if strings.HasSuffix(ti.Name, "_exps.weight") {
			experts += ti.Bytes
		}
	}
	probe, _ := f.Tensor("blk.0.ffn_up_exps.weight")
	w, err := be.Weight("probe", probe.Type, 1024, 256, f.TensorData(probe)[:probe.Type.RowBytes(256)*1024])
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := w.(gpu.RepackedWeight); !ok || !r.Repacked() {
		t.Skip("this CPU does not repack Q4_K weights: the file's pages are its kernels' data")
	}
	if _, err := arch.Load(f, be, arch.Options{MaxRows: 8}); err != nil {
		t.Fatal(err)
	}
	rss := mappedRSS(t, path)
	t.Logf("experts %d bytes; the file's resident mapping after loading: %d bytes", experts, rss)
	if rss > experts/4 {
		t.Errorf("%d bytes of the file stay resident after its %d bytes of experts were repacked", rss, experts)
	}
}

// TestRunLeavesFilePages: a model whose weights the CPU holds copies of
// (the 2-D ones repacked, the F32 norms copied) reads nothing from the
// file as it runs, Embed's rows of the token embeddings tied to the
// output included: after a prompt and decode steps, no more of the file's
// mapping is resident than its header (the tokenizer and metadata) and a
// few pages. Norms read in place once mapped the page cache's neighbours
// of them at each first read (fault-around, large folios), and Embed the
// pages of the rows it looked up: the released weights, held twice.
func TestRunLeavesFilePages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama.gguf")
	err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 11, func(c *synth.Config) {
		c.Embd, c.FFN, c.Layers, c.Tied, c.VocabSize = 512, 1536, 4, true, 4096
	})
	if err != nil {
		t.Fatal(err)
	}
	be := cpu.New(1)
	defer be.Close()
	w, err := be.Weight("probe", gguf.TypeQ8_0, 16, 32, make([]byte, 16*34))
	if err != nil {
		t.Fatal(err)
	}
	if rw, ok := w.(gpu.RepackedWeight); !ok || !rw.Repacked() {
		t.Skip("this CPU does not repack Q8_0 weights: the file's pages are its kernels' data")
	}
	r := openRig(t, path, 16, gguf.TypeF16)
	ids := make([]int32, 200)
	for i := range ids {
		ids[i] = int32(3 + i*19%4000) // rows all over the embeddings
	}
	r.prompt(t, ids[:100])
	r.greedy(t, ids[100:], 8)
	var tensors int64
	for _, ti := range r.f.Tensors {
		tensors += ti.Bytes
	}
	// A page two tensors share stays (Release drops a tensor's whole pages).
	rss, limit := mappedRSS(t, path), r.f.DataOffset+int64(2*os.Getpagesize()*len(r.f.Tensors))+64<<10
	t.Logf("header %d bytes, tensors %d; the file's resident mapping after running: %d bytes", r.f.DataOffset, tensors, rss)
	if rss > limit {
		t.Errorf("%d bytes of the file resident after running, more than its %d-byte header, the pages its %d tensors share and 64 KiB",
			rss, r.f.DataOffset, len(r.f.Tensors))
	}
}
