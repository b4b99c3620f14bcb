package cmd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"folio/models/gguf"
	"folio/models/synth"
)

// tinySynth writes the tiny synthetic llama (256 wide, 2 layers, vocab
// 512) and returns its path.
func tinySynth(t *testing.T) string { return tinySynthCtx(t, 0) }

// tinySynthCtx is tinySynth with a context of ctx tokens (0: the preset's).
func tinySynthCtx(t *testing.T, ctx int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	err := synth.WriteTiny(path, "llama", gguf.TypeQ8_0, 3, func(c *synth.Config) {
		if ctx > 0 {
			c.Ctx = ctx
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// benchJSON runs a bench command with --json and decodes its output.
func benchJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	out, err := execute(t, append(args, "--json")...)
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("%v printed invalid JSON: %v\n%.300s", args, err, out)
	}
}

type serveJSON struct {
	Throughput    *float64  `json:"throughput_tps"`
	Single        *float64  `json:"single_tps"`
	SingleRuns    []float64 `json:"single_runs_tps"`
	TTFTP50       *float64  `json:"ttft_p50_ms"`
	TTFTP99       *float64  `json:"ttft_p99_ms"`
	ITLP50        *float64  `json:"itl_p50_ms"`
	PrefixHitRate *float64  `json:"prefix_hit_rate"`
	PeakBlocks    *int      `json:"peak_blocks"`
	OutputTokens  int       `json:"output_tokens"`
	PromptTokens  int       `json:"prompt_tokens"`
	Requests      int       `json:"requests"`
}

// check asserts the fields every serve report has; the prefix-hit rate is
// checked by the caller.
func (r serveJSON) check(t *testing.T) {
	t.Helper()
	for name, v := range map[string]*float64{"throughput_tps": r.Throughput, "single_tps": r.Single,
		"ttft_p50_ms": r.TTFTP50, "ttft_p99_ms": r.TTFTP99, "itl_p50_ms": r.ITLP50} {
		if v == nil || *v <= 0 {
			t.Errorf("%s: %v, want a positive number", name, v)
		}
	}
	if r.TTFTP50 != nil && r.TTFTP99 != nil && *r.TTFTP99 < *r.TTFTP50 {
		t.Errorf("ttft p99 %v < p50 %v", *r.TTFTP99, *r.TTFTP50)
	}
	if r.PeakBlocks == nil || r.OutputTokens <= 0 || r.PromptTokens <= 0 || r.Requests != 8 {
		t.Errorf("peak_blocks %v, output_tokens %d, prompt_tokens %d, requests %d", r.PeakBlocks, r.OutputTokens, r.PromptTokens, r.Requests)
	}
}

func TestBenchServeInProcess(t *testing.T) {
	model := tinySynth(t)
	var r serveJSON
	benchJSON(t, &r, "bench", "serve", "--model", model, "-c", "4", "-n", "8", "--prompt-mean", "40",
		"--output-mean", "8", "--shared-prefix", "32", "--temperature", "0.7", "--num-ctx", "512")
	r.check(t)
	// Every prompt starts with the same 32 tokens: two blocks of 16 are
	// reused by all requests but the first ones, never more than the prompts.
	if r.PrefixHitRate == nil || *r.PrefixHitRate <= 0 || *r.PrefixHitRate >= 1 {
		t.Errorf("prefix_hit_rate %v, want in (0, 1) with a shared prefix", r.PrefixHitRate)
	}
	if r.PeakBlocks == nil || *r.PeakBlocks <= 0 {
		t.Errorf("peak_blocks %v in process", r.PeakBlocks)
	}
}

// TestBenchServeHTTP runs serve against a fake Ollama /api/generate that
// streams one chunk per token and reports cached prompt tokens.
func TestBenchServeHTTP(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model   string `json:"model"`
			Prompt  string `json:"prompt"`
			Raw     bool   `json:"raw"`
			Stream  bool   `json:"stream"`
			Options struct {
				NumPredict  int      `json:"num_predict"`
				Seed        *int64   `json:"seed"`
				Temperature *float64 `json:"temperature"`
			} `json:"options"`
		}
		if r.URL.Path != "/api/generate" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "tiny" ||
			!req.Raw || !req.Stream || req.Options.NumPredict < 1 || req.Options.Seed == nil || req.Options.Temperature == nil {
			http.Error(w, fmt.Sprintf("bad request %s %+v", r.URL.Path, req), http.StatusBadRequest)
			return
		}
		calls.Add(1)
		words := len(strings.Fields(req.Prompt))
		for i := range req.Options.NumPredict {
			fmt.Fprintf(w, "{\"response\":\" w%d\",\"done\":false}\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprintf(w, "{\"response\":\"\",\"done\":true,\"eval_count\":%d,\"prompt_eval_count\":%d,\"prompt_cached_count\":%d}\n",
			req.Options.NumPredict, words, words/4)
	}))
	defer srv.Close()
	var r serveJSON
	benchJSON(t, &r, "bench", "serve", "--host", srv.URL, "--model", "tiny", "-c", "4", "-n", "8", "--output-mean", "8")
	r.check(t)
	if r.PrefixHitRate == nil || *r.PrefixHitRate <= 0 || *r.PrefixHitRate > 0.25 {
		t.Errorf("prefix_hit_rate %v, want the server's quarter (rounded down)", r.PrefixHitRate)
	}
	if calls.Load() != 15 {
		t.Errorf("%d requests reached the server, want a warm-up, 3 alone, 8 and 3 alone", calls.Load())
	}
	if len(r.SingleRuns) != 6 || !slices.IsSorted(r.SingleRuns) || *r.Single != r.SingleRuns[3] {
		t.Errorf("single_tps %v of runs %v: want the upper median of 6 runs, slowest first", *r.Single, r.SingleRuns)
	}
	if _, err := execute(t, "bench", "serve", "--host", srv.URL, "--model", "other"); err == nil || !strings.Contains(err.Error(), "400 Bad Request") {
		t.Errorf("a refused request: got %v", err)
	}
}

func TestBenchMultiturn(t *testing.T) {
	var got struct {
		Turn1TTFT     *float64 `json:"turn1_ttft_ms"`
		Turn2TTFT     *float64 `json:"turn2_ttft_ms"`
		Turn1Computed int      `json:"turn1_computed"`
		Turn2Prompt   int      `json:"turn2_prompt"`
		Turn2Computed int      `json:"turn2_computed"`
		Turn2Cached   int      `json:"turn2_cached"`
	}
	benchJSON(t, &got, "bench", "multiturn", "--model", tinySynth(t), "--history", "300", "--num-ctx", "512")
	if got.Turn1TTFT == nil || got.Turn2TTFT == nil || *got.Turn1TTFT <= 0 || *got.Turn2TTFT <= 0 {
		t.Fatalf("ttfts %v %v", got.Turn1TTFT, got.Turn2TTFT)
	}
	// Turn 2 is 300 + up to 16 answer + 20 new tokens; all full blocks of
	// turn 1's computed tokens come from the cache.
	if got.Turn1Computed != 300 || got.Turn2Prompt < 320 || got.Turn2Cached < 288 || got.Turn2Computed+got.Turn2Cached != got.Turn2Prompt {
		t.Errorf("turn 1 computed %d; turn 2 prompt %d, computed %d, cached %d", got.Turn1Computed, got.Turn2Prompt, got.Turn2Computed, got.Turn2Cached)
	}
}

func TestBenchExtraction(t *testing.T) {
	type run struct {
		TotalS   float64 `json:"total_s"`
		Computed int     `json:"computed"`
		Cached   int     `json:"cached"`
	}
	var got struct {
		TotalS        *float64 `json:"total_s"`
		NoCacheTotalS *float64 `json:"no_cache_total_s"`
		Speedup       *float64 `json:"speedup"`
		WarmTotalS    *float64 `json:"warm_total_s"`
		Cache, Warm   run
		NoCache       run `json:"no_cache"`
	}
	benchJSON(t, &got, "bench", "extraction", "--model", tinySynth(t), "--doc-tokens", "200", "--questions", "6",
		"--question-tokens", "8", "--answer", "4", "-c", "2", "--num-ctx", "512")
	if got.TotalS == nil || got.NoCacheTotalS == nil || got.Speedup == nil || got.WarmTotalS == nil ||
		*got.TotalS <= 0 || *got.NoCacheTotalS <= 0 || *got.Speedup <= 0 {
		t.Fatalf("total_s %v, no_cache_total_s %v, speedup %v, warm_total_s %v", got.TotalS, got.NoCacheTotalS, got.Speedup, got.WarmTotalS)
	}
	// 6 prompts of 208 tokens; with the cache, the 5 after the first
	// warm one reuse the document's 12 full blocks (192 tokens) each.
	if got.NoCache.Cached != 0 || got.NoCache.Computed != 6*208 {
		t.Errorf("without the cache: computed %d, cached %d; want %d, 0", got.NoCache.Computed, got.NoCache.Cached, 6*208)
	}
	if got.Warm.Cached != 5*192 || got.Cache.Cached <= 0 || got.Cache.Cached+got.Cache.Computed != 6*208 {
		t.Errorf("with the cache: %+v; first alone: %+v", got.Cache, got.Warm)
	}
}

// Without --num-ctx, bench extraction sizes the context to its document
// when that needs more than the default: an 8,000-token document
// otherwise failed on num_ctx 4096.
func TestBenchExtractionSizesContext(t *testing.T) {
	var got struct {
		TotalS *float64 `json:"total_s"`
	}
	benchJSON(t, &got, "bench", "extraction", "--model", tinySynthCtx(t, 8192), "--doc-tokens", "4200", "--questions", "2",
		"--question-tokens", "4", "--answer", "2", "-c", "1")
	if got.TotalS == nil || *got.TotalS <= 0 {
		t.Fatalf("total_s %v", got.TotalS)
	}
	if _, err := execute(t, "bench", "extraction", "--model", tinySynthCtx(t, 8192), "--doc-tokens", "4200", "--questions", "2",
		"--question-tokens", "4", "--answer", "2", "-c", "1", "--num-ctx", "4096"); err == nil || !strings.Contains(err.Error(), "raise num_ctx") {
		t.Errorf("a --num-ctx too small for the document: got %v", err)
	}
}

// TestBenchCPUDepthAndKVType: `folio bench --model` measures after --depth
// tokens in a cache of --kv-type and says so; a type without a cache is
// refused by name.
func TestBenchCPUDepthAndKVType(t *testing.T) {
	model := tinySynth(t)
	var r cpuReport
	benchJSON(t, &r, "bench", "--model", model, "--prompt", "16", "--gen", "4", "--repeat", "1", "--depth", "40", "--kv-type", "q8_0")
	if r.Depth != 40 || r.KVType != "q8_0" || r.PrefillTPS <= 0 || r.DecodeTPS <= 0 || len(r.DecodeRuns) != 1 {
		t.Errorf("report %+v: want depth 40, a q8_0 cache and one run of each", r)
	}
	if _, err := execute(t, "bench", "--model", model, "--kv-type", "q4_0"); err == nil || !strings.Contains(err.Error(), "--kv-type") {
		t.Errorf("--kv-type q4_0: %v, want an error naming the flag", err)
	}
	if _, err := execute(t, "bench", "--model", model, "--depth", "-1"); err == nil || !strings.Contains(err.Error(), "--depth -1") {
		t.Errorf("--depth -1: %v, want an error naming it", err)
	}
}

// A model with sliding-window layers benches: its cache, sized by the
// runner, has room for the full layers' context beside the windows (an
// exact-context size for every layer left the full layers no block).
func TestBenchCPUSlidingWindow(t *testing.T) {
	model := filepath.Join(t.TempDir(), "gemma3.gguf")
	if err := synth.WriteTiny(model, "gemma3", gguf.TypeQ8_0, 3); err != nil {
		t.Fatal(err)
	}
	var r cpuReport
	benchJSON(t, &r, "bench", "--model", model, "--prompt", "64", "--gen", "4", "--repeat", "1", "--depth", "40")
	if r.PrefillTPS <= 0 || r.DecodeTPS <= 0 {
		t.Errorf("report %+v: want a prefill and a decode rate", r)
	}
}

// A mixture of experts' decode reads its chosen experts only: bench
// counts the weight bytes of the decode steps' matmuls (the CPU's
// counters), and they are the weights less the unchosen experts' (tiny
// qwen3moe: 2 of 8 experts a layer; the token embeddings are looked
// up, the output matrix multiplied).
func TestBenchCPUMoEReadsActiveExperts(t *testing.T) {
	model := filepath.Join(t.TempDir(), "qwen3moe.gguf")
	if err := synth.WriteTiny(model, "qwen3moe", gguf.TypeQ8_0, 3); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(model)
	if err != nil {
		t.Fatal(err)
	}
	var all, experts int64
	for _, ti := range f.Tensors {
		if ti.Type == gguf.TypeF32 && len(ti.Shape) == 1 {
			continue // norms: not matmul weights
		}
		if ti.Name == "token_embd.weight" {
			continue // looked up by rows: the file has its own output matrix
		}
		all += ti.Bytes
		if strings.HasSuffix(ti.Name, "_exps.weight") {
			experts += ti.Bytes
		}
	}
	f.Close()
	var r cpuReport
	benchJSON(t, &r, "bench", "--model", model, "--prompt", "16", "--gen", "4", "--repeat", "1")
	active := all - experts*6/8
	t.Logf("weights %d bytes, experts %d; decode reads %d a token (counted), %d estimated", all, experts, r.DecodeReadBytes, r.ModelBytes)
	if r.DecodeReadBytes != active {
		t.Errorf("decode read %d weight bytes a token, want %d: all %d less 6 of 8 experts' %d", r.DecodeReadBytes, active, all, experts)
	}
	if r.ModelBytes >= all-experts/2 {
		t.Errorf("model bytes a token %d count more than the chosen experts (all %d, experts %d)", r.ModelBytes, all, experts)
	}
}
