package server_test

import (
	"math"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"folio/gpu"
	"folio/models/tokenizer"
	"folio/runner"
	"folio/server"
)

// pooledOutput is a model's raw pooled output for text, computed here
// from the architecture's hidden states: the mean over the tokens of the
// final hidden states (after the output norm), not scaled.
func pooledOutput(t *testing.T, path, text string, opt runner.LoadOptions) []float64 {
	t.Helper()
	m, err := runner.Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ids := m.Tok.Encode(text, tokenizer.EncodeOptions{AddSpecial: true})
	spec := m.KV.Spec()
	table := make([]int32, spec.Blocks)
	for i := range table {
		table[i] = int32(i)
	}
	dim := m.Arch.Dim
	sum := make([]float64, dim)
	for from := 0; from < len(ids); {
		n := min(len(ids)-from, m.Opt.NumBatch)
		b := &gpu.Batch{BlockSize: spec.BlockSize, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: from, Blocks: table}}}
		h, err := m.Arch.Hidden(m.KV, b, ids[from:from+n])
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]float32, n*dim) // [n, Dim]
		m.Arch.Backend().Download(rows, h)
		for i, v := range rows {
			sum[i%dim] += float64(v)
		}
		from += n
	}
	for i := range sum {
		sum[i] /= float64(len(ids))
	}
	return sum
}

// relErr is |got - want| / |want|.
func relErr[T float32 | float64](got []T, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var d, w float64
	for i := range want {
		d += (float64(got[i]) - want[i]) * (float64(got[i]) - want[i])
		w += want[i] * want[i]
	}
	return math.Sqrt(d / w)
}

// TestEmbeddingsRawAndNormalized: the legacy /api/embeddings answers the
// model's pooled output as it is (Ollama's legacy endpoint does not
// normalize); /api/embed and /v1/embeddings answer it scaled to unit
// length.
func TestEmbeddingsRawAndNormalized(t *testing.T) {
	dir := newTestLibrary(t)
	opt := runner.LoadOptions{NumCtx: 512}
	reg := server.NewLibraryRegistry(nil)
	reg.Dirs = []string{dir}
	srv := server.New(server.Config{Registry: reg, Load: opt})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })

	const text = "The quick brown fox jumps over the lazy dog."
	raw := pooledOutput(t, filepath.Join(dir, "tiny-qwen2.gguf"), text, opt)
	var norm float64
	for _, v := range raw {
		norm += v * v
	}
	norm = math.Sqrt(norm)
	if math.Abs(norm-1) < 0.05 {
		t.Fatalf("the pooled output's length is %.3f: too near 1 to tell raw from normalized", norm)
	}
	unit := make([]float64, len(raw))
	for i, v := range raw {
		unit[i] = v / norm
	}

	var legacy struct {
		Embedding []float64 `json:"embedding"`
	}
	postJSON(t, hs.URL+"/api/embeddings", `{"model":"tiny-qwen2","prompt":"`+text+`"}`, &legacy)
	if e := relErr(legacy.Embedding, raw); e > 1e-4 {
		t.Errorf("/api/embeddings: relative error %.2g from the raw pooled output (length %.3f); want the vector as the model pools it", e, norm)
	}
	var embed struct {
		Embeddings [][]float32 `json:"embeddings"`
	}
	postJSON(t, hs.URL+"/api/embed", `{"model":"tiny-qwen2","input":"`+text+`"}`, &embed)
	if len(embed.Embeddings) != 1 {
		t.Fatalf("/api/embed: %d vectors; want 1", len(embed.Embeddings))
	}
	if e := relErr(embed.Embeddings[0], unit); e > 1e-4 {
		t.Errorf("/api/embed: relative error %.2g from the unit-length pooled output", e)
	}
	var oai struct {
		Data []struct {
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	postJSON(t, hs.URL+"/v1/embeddings", `{"model":"tiny-qwen2","input":"`+text+`"}`, &oai)
	if len(oai.Data) != 1 {
		t.Fatalf("/v1/embeddings: %d vectors; want 1", len(oai.Data))
	}
	if e := relErr(oai.Data[0].Embedding, unit); e > 1e-4 {
		t.Errorf("/v1/embeddings: relative error %.2g from the unit-length pooled output", e)
	}
}
