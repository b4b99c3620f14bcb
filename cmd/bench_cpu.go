package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"folio/gpu"
	"folio/gpu/cpu"
	"folio/internal/envconfig"
	"folio/internal/loadgen"
	"folio/models/arch"
	"folio/models/gguf"
	"folio/runner"
)

// cpuReport is what `folio bench --model FILE` measures: prefill and decode
// speed on the CPU backend as llama-bench measures pp and tg, the same
// measurement of llama.cpp on the same file (with --vs-llamacpp), and the
// machine's read bandwidth, the ceiling of decode.
type cpuReport struct {
	Model        string         `json:"model"`
	ModelBytes   int64          `json:"model_bytes"` // weight bytes one decode step reads
	Threads      int            `json:"threads"`
	Prompt       int            `json:"prompt"`
	Gen          int            `json:"gen"`
	Depth        int            `json:"depth"`   // tokens in the cache before each prefill and decode
	KVType       string         `json:"kv_type"` // the K/V cache's type
	Repeat       int            `json:"repeat"`
	SIMD         string         `json:"simd"`
	PrefillTPS   float64        `json:"prefill_tps"` // medians over the repeats
	DecodeTPS    float64        `json:"decode_tps"`
	PrefillRuns  []float64      `json:"prefill_runs"`
	DecodeRuns   []float64      `json:"decode_runs"`
	LlamaCpp     *llamaCppSpeed `json:"llamacpp,omitempty"`
	PrefillRatio float64        `json:"prefill_ratio,omitempty"`
	DecodeRatio  float64        `json:"decode_ratio,omitempty"`
	BandwidthGBs float64        `json:"bandwidth_gbs"`
	// DecodeOfCeiling is decode_tps × model_bytes ÷ bandwidth: the share of
	// the memory-bound ceiling decode reaches.
	DecodeOfCeiling float64 `json:"decode_of_ceiling"`
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
	// DecodeReadBytes is the weight bytes the kernels multiplied by per
	// decode token (cpu.Backend.WeightBytesRead over the rounds' decode
	// steps): ModelBytes for a dense model; for a mixture of experts, its
	// chosen experts' share.
	DecodeReadBytes int64 `json:"decode_read_bytes"`
}

type llamaCppSpeed struct {
	PrefillTPS   float64   `json:"prefill_tps"`
	DecodeTPS    float64   `json:"decode_tps"`
	PrefillRuns  []float64 `json:"prefill_runs"`
	DecodeRuns   []float64 `json:"decode_runs"`
	PeakRSSBytes int64     `json:"peak_rss_bytes"`
	Backend      string    `json:"cpu_backend"`
}

// addMeasure makes bench itself, with --model, measure one backend: the
// CPU's by default, even where a GPU is, or a GPU backend's with --gpu
// (CUDA; --gpu=vulkan: Vulkan's) or the FOLIO_GPU=cuda|vulkan setting.
func addMeasure(bench *cobra.Command) {
	var (
		onGPU    string
		model    string
		prompt   int
		gen      int
		threads  int
		repeat   int
		depth    int
		kvType   string
		vs       bool
		asJSON   bool
		llamaref string
		profile  string
	)
	bench.Long = "bench with --model measures the CPU backend: prefill of --prompt tokens in one\n" +
		"forward pass and --gen single-token decode steps of one sequence, from an empty\n" +
		"K/V cache (llama-bench's pp and tg), after one unmeasured round; tokens/s are\n" +
		"medians over --repeat rounds. --depth D puts D tokens in the cache first (untimed),\n" +
		"as llama-bench's -d, so that attention reads a long context; --kv-type picks the\n" +
		"cache's type (f16, q8_0, f32). With --vs-llamacpp it first runs `llamaref cbench` on the\n" +
		"same file with the same threads, depth and cache type and prints the ratios. The machine's read\n" +
		"bandwidth is measured too: decode reads every weight once per token, so\n" +
		"bandwidth ÷ model bytes is decode's ceiling.\n\n" +
		"Its subcommands drive the serving engine under load."
	bench.Args = cobra.NoArgs
	bench.RunE = func(cmd *cobra.Command, args []string) error {
		if set := gpuSetting(); onGPU == "" && (set == "cuda" || set == "vulkan") {
			onGPU = set
		}
		if onGPU != "" {
			if model == "" {
				return fmt.Errorf("bench: --gpu needs --model FILE")
			}
			return runBenchGPU(cmd, onGPU, model, prompt, gen, repeat, asJSON)
		}
		if model == "" {
			return cmd.Help()
		}
		if prompt < 1 || gen < 1 || repeat < 1 || depth < 0 {
			return fmt.Errorf("bench: --prompt %d, --gen %d, --repeat %d, --depth %d: each must be at least 1 (--depth 0)", prompt, gen, repeat, depth)
		}
		if _, err := runner.ParseKVType(kvType); err != nil {
			return fmt.Errorf("bench: --kv-type %q: use f16, q8_0 or f32", kvType)
		}
		stop, err := startProfile(profile)
		if err != nil {
			return err
		}
		defer stop()
		// llama.cpp runs first, while this process is idle: its threads
		// wait for each other spinning, and after folio's rounds this
		// process's garbage collector sweeps what the model left. Under
		// SCHED_FIFO (bench/cpu.sh RT=1) that sweep, which yields only to
		// goroutines, held a core for minutes and llama.cpp ran at half
		// speed or stalled.
		var ref *llamaCppSpeed
		if vs {
			if ref, err = benchLlamaCpp(cmd.Context(), llamaref, model, prompt, gen, cpu.ThreadCount(threads), repeat, depth, kvType); err != nil {
				return err
			}
		}
		rep, err := benchCPU(model, prompt, gen, threads, repeat, depth, kvType)
		if err != nil {
			return err
		}
		if vs {
			rep.LlamaCpp = ref
			rep.PrefillRatio = rep.PrefillTPS / rep.LlamaCpp.PrefillTPS
			rep.DecodeRatio = rep.DecodeTPS / rep.LlamaCpp.DecodeTPS
		}
		if asJSON {
			return printJSON(cmd.OutOrStdout(), rep)
		}
		printCPU(cmd.OutOrStdout(), rep)
		return nil
	}
	f := bench.Flags()
	f.StringVar(&onGPU, "gpu", "", "measure a GPU backend (with --model): --gpu for CUDA, --gpu=vulkan for Vulkan")
	f.Lookup("gpu").NoOptDefVal = "cuda"
	f.StringVar(&model, "model", "", "GGUF file to measure")
	f.IntVar(&prompt, "prompt", 512, "prompt tokens, prefilled in one forward pass")
	f.IntVar(&gen, "gen", 128, "tokens decoded one at a time")
	f.IntVar(&threads, "threads", 0, "CPU threads (default all)")
	f.IntVar(&repeat, "repeat", 3, "measured rounds; tokens/s are medians")
	f.IntVar(&depth, "depth", 0, "tokens in the K/V cache before each prefill and decode (llama-bench's -d)")
	f.StringVar(&kvType, "kv-type", "f16", "K/V cache type: f16, q8_0 or f32")
	f.BoolVar(&vs, "vs-llamacpp", false, "measure llama.cpp on the same file (llamaref cbench) and print ratios")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of folio's rounds to this file")
	f.StringVar(&llamaref, "llamaref", "", "the llamaref command (default: ../shared/tools/llamaref/llamaref, or $LLAMAREF)")
}

// benchCPU loads model and times prefill and decode on it.
func benchCPU(model string, prompt, gen, threads, repeat, depth int, kvType string) (*cpuReport, error) {
	m, err := loadForBench(model, "cpu", prompt, gen, threads, depth, kvType)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	be := m.Arch.Backend().(*cpu.Backend)
	rep := &cpuReport{Model: model, Threads: be.Threads(), Prompt: prompt, Gen: gen, Depth: depth, KVType: kvType,
		Repeat: repeat, SIMD: cpu.SIMDLevel()}
	var total int64
	for _, t := range m.File.Tensors {
		total += t.Bytes
	}
	rep.ModelBytes = decodeBytes(m, total)
	var decoded int64 // the weight bytes of the rounds' decode steps
	count := func(step func() error) error {
		before := be.WeightBytesRead()
		err := step()
		decoded += be.WeightBytesRead() - before
		return err
	}
	if rep.PrefillRuns, rep.DecodeRuns, err = timeRounds(m, prompt, gen, repeat, depth, 0, nil, count); err != nil {
		return nil, err
	}
	rep.DecodeReadBytes = decoded / int64((repeat+1)*gen)
	rep.PrefillTPS, rep.DecodeTPS = loadgen.Median(rep.PrefillRuns), loadgen.Median(rep.DecodeRuns)
	rep.PeakRSSBytes = peakRSS()
	rep.BandwidthGBs = cpu.ReadBandwidth(be.Threads(), 512<<20) / 1e9
	rep.DecodeOfCeiling = rep.DecodeTPS * float64(rep.ModelBytes) / (rep.BandwidthGBs * 1e9)
	return rep, nil
}

// benchBlock is the K/V block size of the speed measurements.
const benchBlock = 16

// loadForBench loads model on device (cpu, cuda or vulkan) for one sequence of
// depth + prompt + gen tokens, with a K/V cache of kvType of exactly that
// context, as llama-bench's.
func loadForBench(model, device string, prompt, gen, threads, depth int, kvType string) (*runner.Model, error) {
	perToken, windowed, err := kvBytesPerToken(model, kvType)
	if err != nil {
		return nil, err
	}
	ctx := depth + prompt + gen
	kvMemory := int64(ceilDivInt(ctx, benchBlock)*benchBlock) * perToken
	if windowed {
		// The runner sizes sliding-window layer groups for a window and a
		// batch, which may outgrow a cache sized for ctx tokens of every
		// layer: let it size the cache itself.
		kvMemory = 0
	}
	return runner.Load(model, runner.LoadOptions{
		NumCtx: ctx, NumBatch: prompt, BlockSize: benchBlock, MaxSeqs: 1, Threads: threads, KVType: kvType,
		KVMemory: kvMemory, Device: device, CUDA: cudaOptions(), Vulkan: vulkanOptions(), Vet: deviceChecker().Check,
	})
}

// decodeBytes is the weight bytes one decode step reads of total: all of
// them but the token embeddings when the output matrix is separate (one
// row of those is read per token).
func decodeBytes(m *runner.Model, total int64) int64 {
	if c := m.Arch.Config; c.Experts > 0 {
		// a token reads ExpertsUsed of each layer's Experts experts
		for _, t := range m.File.Tensors {
			if strings.HasSuffix(t.Name, "_exps.weight") {
				total -= t.Bytes - t.Bytes*int64(c.ExpertsUsed)/int64(c.Experts)
			}
		}
	}
	if emb, ok := m.File.Tensor("token_embd.weight"); ok {
		if _, untied := m.File.Tensor("output.weight"); untied {
			total -= emb.Bytes
		}
	}
	return total
}

// timeRounds times repeat rounds, after one that warms up, of a prefill of
// prompt random tokens after depth (the last row's logits) and gen
// single-token decode steps from position depth + decodeAt, and returns the
// tokens/s of each. The first depth positions are computed once, untimed:
// the rounds write only later ones. done, when set, gets each pass's logits
// (a device backend downloads them, as serving does, which also waits for
// it). decodeStep, when set, runs each decode step (step) and may measure
// it.
func timeRounds(m *runner.Model, prompt, gen, repeat, depth, decodeAt int, done func(gpu.Tensor), decodeStep func(func() error) error) (pp, tg []float64, err error) {
	if decodeStep == nil {
		decodeStep = func(step func() error) error { return step() }
	}
	decodeAt += depth
	blocks := make([]int32, ceilDivInt(max(depth+prompt, decodeAt+gen), benchBlock))
	for i := range blocks {
		blocks[i] = int32(i)
	}
	r := rand.New(rand.NewPCG(42, 1))
	tokens := make([]int32, max(depth+prompt, decodeAt+gen))
	for i := range tokens {
		tokens[i] = int32(r.IntN(m.Arch.Vocab))
	}
	tables, err := m.RingTables(len(blocks), prompt)
	if err != nil {
		return nil, nil, err
	}
	tables[0] = blocks
	forward := func(pos, n int) error {
		b := gpu.Batch{BlockSize: benchBlock, Seqs: []gpu.Seq{{Start: 0, Len: n, Pos: pos, Blocks: blocks}}}
		out, err := m.Forward(&b, tables, tokens[pos:pos+n], []int32{int32(n - 1)})
		if err == nil && done != nil {
			done(out)
		}
		return err
	}
	for pos := 0; pos < depth; pos += prompt {
		if err := forward(pos, min(prompt, depth-pos)); err != nil {
			return nil, nil, err
		}
	}
	for i := range repeat + 1 {
		t0 := time.Now()
		if err := forward(depth, prompt); err != nil {
			return nil, nil, err
		}
		p := float64(prompt) / time.Since(t0).Seconds()
		t0 = time.Now()
		for pos := decodeAt; pos < decodeAt+gen; pos++ {
			if err := decodeStep(func() error { return forward(pos, 1) }); err != nil {
				return nil, nil, err
			}
		}
		g := float64(gen) / time.Since(t0).Seconds()
		if i > 0 { // the first round warms up
			pp, tg = append(pp, p), append(tg, g)
		}
	}
	return pp, tg, nil
}

// kvBytesPerToken is the bytes per token of a K/V cache of kvType for
// model, so that the cache holds exactly the measured context, as
// llama-bench's; windowed reports sliding-window layers.
func kvBytesPerToken(model, kvType string) (perToken int64, windowed bool, err error) {
	typ, err := runner.ParseKVType(kvType)
	if err != nil {
		return 0, false, err
	}
	f, err := gguf.Open(model)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	c, err := arch.ReadConfig(f)
	if err != nil {
		return 0, false, err
	}
	spec := gpu.KVSpec{Layers: c.Layers, KVHeads: c.KVHeads, HeadDim: c.HeadDim, Type: typ, SharedKV: c.SharedKV()}
	return spec.BytesPerToken(), c.Windows != nil, nil
}

func ceilDivInt(a, b int) int { return (a + b - 1) / b }

// benchLlamaCpp runs `llamaref cbench` on model.
func benchLlamaCpp(ctx context.Context, llamaref, model string, prompt, gen, threads, repeat, depth int, kvType string) (*llamaCppSpeed, error) {
	if llamaref == "" {
		llamaref = envconfig.Get("LLAMAREF")
	}
	if llamaref == "" {
		llamaref = filepath.Join("..", "shared", "tools", "llamaref", "llamaref")
	}
	libDir, done, err := llamaCppLibDir(ctx, llamaref, llamaCppVariant(cpu.SIMDLevel()))
	if err != nil {
		return nil, err
	}
	defer done()
	c := exec.CommandContext(ctx, llamaref, "cbench", model, "--threads", strconv.Itoa(threads),
		"--pp", strconv.Itoa(prompt), "--tg", strconv.Itoa(gen), "--reps", strconv.Itoa(repeat),
		"--depth", strconv.Itoa(depth), "--kv", strings.ToLower(kvType))
	c.Stderr = io.Discard
	if libDir != "" {
		c.Env = append(c.Environ(), "LLAMABENCH_LIBDIR="+libDir)
	}
	out, err := c.Output()
	if err != nil {
		return nil, fmt.Errorf("bench: %s cbench: %w (set --llamaref or $LLAMAREF to the llamaref command)", llamaref, err)
	}
	var res struct {
		PP, TG struct {
			Median float64   `json:"median"`
			Runs   []float64 `json:"runs"`
		}
		PeakRSS  int64 `json:"peak_rss_bytes"`
		Versions struct {
			CPUBackend string `json:"cpu_backend"`
		} `json:"versions"`
	}
	var raw map[string]json.RawMessage // the first JSON value: llamabench may print more after it
	if err := json.NewDecoder(bytes.NewReader(out)).Decode(&raw); err != nil {
		return nil, fmt.Errorf("bench: llamaref cbench printed no JSON: %w", err)
	}
	for key, dst := range map[string]any{"pp_tokens_per_s": &res.PP, "tg_tokens_per_s": &res.TG,
		"peak_rss_bytes": &res.PeakRSS, "versions": &res.Versions} {
		if v, ok := raw[key]; ok {
			if err := json.Unmarshal(v, dst); err != nil {
				return nil, fmt.Errorf("bench: llamaref cbench %s: %w", key, err)
			}
		}
	}
	if res.PP.Median == 0 || res.TG.Median == 0 {
		return nil, fmt.Errorf("bench: llamaref cbench reported no speed: %s", out)
	}
	return &llamaCppSpeed{PrefillTPS: res.PP.Median, DecodeTPS: res.TG.Median, PrefillRuns: res.PP.Runs,
		DecodeRuns: res.TG.Runs, PeakRSSBytes: res.PeakRSS, Backend: res.Versions.CPUBackend}, nil
}

func printCPU(w io.Writer, r *cpuReport) {
	fmt.Fprintf(w, "model:     %s (%.1f MB of weights read per token), %d threads, SIMD %s, %s K/V cache\n",
		r.Model, float64(r.ModelBytes)/1e6, r.Threads, r.SIMD, r.KVType)
	if r.Depth > 0 {
		fmt.Fprintf(w, "depth:     %d tokens in the cache before each prefill and decode\n", r.Depth)
	}
	fmt.Fprintf(w, "folio:     prefill %d: %8.2f tok/s   decode %d: %7.2f tok/s   (medians of %d; peak RSS %.0f MB)\n",
		r.Prompt, r.PrefillTPS, r.Gen, r.DecodeTPS, r.Repeat, float64(r.PeakRSSBytes)/1e6)
	if l := r.LlamaCpp; l != nil {
		fmt.Fprintf(w, "llama.cpp: prefill %d: %8.2f tok/s   decode %d: %7.2f tok/s   (%s; peak RSS %.0f MB)\n",
			r.Prompt, l.PrefillTPS, r.Gen, l.DecodeTPS, l.Backend, float64(l.PeakRSSBytes)/1e6)
		fmt.Fprintf(w, "ratio:     prefill %.2fx   decode %.2fx\n", r.PrefillRatio, r.DecodeRatio)
	}
	if r.DecodeReadBytes > 0 {
		fmt.Fprintf(w, "reads:     %.1f MB of weights per decode token (kernel counters), %.1f%% of the %.1f MB above\n",
			float64(r.DecodeReadBytes)/1e6, 100*float64(r.DecodeReadBytes)/float64(r.ModelBytes), float64(r.ModelBytes)/1e6)
	}
	fmt.Fprintf(w, "bandwidth: %.1f GB/s read; decode at %.0f%% of its ceiling (%.1f tok/s)\n",
		r.BandwidthGBs, 100*r.DecodeOfCeiling, r.BandwidthGBs*1e9/float64(r.ModelBytes))
}

// startProfile writes a CPU profile to path until stop is called; with
// an empty path it does nothing.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
