package cmd

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"folio/internal/loadgen"
	"folio/runner"
)

// newBenchCmd is `folio bench`: with --model it measures a backend's
// prefill and decode (addMeasure); its subcommands drive the serving
// engine under load.
func newBenchCmd() *cobra.Command {
	bench := &cobra.Command{
		Use:   "bench",
		Short: "Measure the serving engine under load",
	}
	addMeasure(bench)
	bench.AddCommand(newBenchServeCmd(), newBenchRestartCmd(), newBenchFleetCmd(), newBenchMultiturnCmd(), newBenchExtractionCmd(), newBenchAgentCmd())
	return bench
}

func newBenchServeCmd() *cobra.Command {
	var (
		mf      modelFlags
		model   string
		host    string
		asJSON  bool
		noCache bool
		profile string
		cfg     = loadgen.ServeConfig{Concurrency: 16, Requests: 256, Seed: 1, SingleReps: 3}
	)
	cfg.Shape.PromptMean, cfg.Shape.OutputMean = loadgen.DefaultPromptMean, loadgen.DefaultOutputMean
	serve := &cobra.Command{
		Use:   "serve --model FILE",
		Short: "Run M requests, N at a time, and report throughput and latencies",
		Long: "serve sends --requests requests, --concurrency at a time (each client sends its\n" +
			"next request when the last one ends), after one request alone. Prompt and output\n" +
			"lengths are lognormal like ShareGPT's (σ of the logarithms 1.0 for prompts, 0.8\n" +
			"for outputs; the means are flags, by default ShareGPT's 161 and 338 scaled to 40%;\n" +
			"lengths are clamped to 8× the mean), with random prompt\n" +
			"tokens; each request asks num_predict tokens of its own length, and the tokens\n" +
			"actually generated are counted (an end token may come early).\n\n" +
			"Without --host the model is loaded in this process (the load flags apply); with\n" +
			"--host URL requests go to an Ollama-compatible /api/generate (raw, streamed,\n" +
			"prompts of words), --model naming the server's model.\n\n" +
			"single_tps is the same measure for one request of the mean lengths sent alone\n" +
			"(after an unmeasured warm-up request): the median of --single-reps runs before\n" +
			"the concurrent phase and as many after it, the upper one of the middle two, so\n" +
			"that a machine whose speed drifts over the run (a shared VM) weighs on both\n" +
			"figures alike.\n" +
			"steady_tps counts only the tokens of the window in which all --concurrency\n" +
			"requests were in flight (until the last request was sent; after it the run\n" +
			"drains through its longest requests with fewer at a time). --requests defaults\n" +
			"to 256, 16 a slot at the default concurrency: with 4 a slot (64) the drain was a\n" +
			"third of the run on 2 cores, and the figure measured the longest request's tail\n" +
			"more than the engine (vLLM's and SGLang's serving benchmarks send 1,000).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return fmt.Errorf("bench serve: no model; pass --model FILE (or the server's model name with --host)")
			}
			var target loadgen.Target = &loadgen.HTTPTarget{Host: host, Model: model}
			if host == "" {
				e, done, err := benchEngine(&mf, model, runner.EngineOptions{NoPrefixCache: noCache})
				if err != nil {
					return err
				}
				defer done()
				if target, err = loadgen.NewEngineTarget(e); err != nil {
					return err
				}
			}
			stop, err := startProfile(profile)
			if err != nil {
				return err
			}
			rep, err := loadgen.Serve(cmd.Context(), target, cfg)
			stop()
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			printServe(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	mf.register(serve)
	f := serve.Flags()
	f.StringVar(&model, "model", "", "GGUF file (or, with --host, the server's model name)")
	f.StringVar(&host, "host", "", "base URL of a running Ollama-compatible server (default: an in-process engine)")
	f.IntVarP(&cfg.Concurrency, "concurrency", "c", cfg.Concurrency, "requests in flight at once")
	f.IntVarP(&cfg.Requests, "requests", "n", cfg.Requests, "requests in all")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the lengths, prompts and sampling")
	f.Float32Var(&cfg.Temperature, "temperature", 0, "sampling temperature (0: greedy; otherwise seeded per request)")
	f.Float64Var(&cfg.Shape.PromptMean, "prompt-mean", cfg.Shape.PromptMean, "mean prompt length in tokens")
	f.Float64Var(&cfg.Shape.OutputMean, "output-mean", cfg.Shape.OutputMean, "mean num_predict")
	f.IntVar(&cfg.SingleReps, "single-reps", cfg.SingleReps, "runs of the single request before the concurrent phase, and as many after; the median counts")
	f.BoolVar(&cfg.Shape.Fixed, "fixed-lengths", false, "give every request the mean lengths (no spread)")
	f.IntVar(&cfg.Shape.Shared, "shared-prefix", 0, "tokens every prompt begins with (a system prompt)")
	f.BoolVar(&noCache, "no-prefix-cache", false, "compute every prompt in full (in-process only)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the run to this file")
	return serve
}

// benchEngine loads a model and starts an engine on it; done closes both.
func benchEngine(mf *modelFlags, model string, opt runner.EngineOptions) (*runner.Engine, func(), error) {
	m, err := mf.load(model)
	if err != nil {
		return nil, nil, err
	}
	e, err := runner.NewEngine(m, opt)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return e, func() { e.Close(); m.Close() }, nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printServe(w io.Writer, r loadgen.ServeReport) {
	hit := "n/a (the server does not report cached tokens)"
	if r.PrefixHitRate != nil {
		hit = fmt.Sprintf("%.1f%%", 100**r.PrefixHitRate)
	}
	fmt.Fprintf(w, "single request:   %d prompt, %d output tokens: %.2f tok/s (decode %.2f tok/s, TTFT %.0f ms)\n",
		r.SinglePrompt, r.SingleOutput, r.SingleTPS, r.SingleDecodeTPS, r.SingleTTFT)
	if len(r.SingleRunsTPS) > 1 {
		fmt.Fprintf(w, "single runs:      %.1f … %.1f tok/s over %d runs, before and after\n",
			r.SingleRunsTPS[0], r.SingleRunsTPS[len(r.SingleRunsTPS)-1], len(r.SingleRunsTPS))
	}
	fmt.Fprintf(w, "%d requests, %d at a time: %.1f s, %d prompt tokens, %d of %d asked output tokens (%d ended early)\n",
		r.Requests, r.Concurrency, r.WallS, r.PromptTokens, r.OutputTokens, r.RequestedTokens, r.ShortRequests)
	fmt.Fprintf(w, "throughput:       %.2f tok/s (%.2fx the single request)\n", r.ThroughputTPS, r.Speedup)
	if r.SteadyS > 0 {
		fmt.Fprintf(w, "all %d in flight: %.2f tok/s (%.2fx) over the first %.1f s\n", r.Concurrency, r.SteadyTPS, r.SteadySpeedup, r.SteadyS)
	}
	fmt.Fprintf(w, "through the model: %.2f tok/s prompt and output (single request %.2f tok/s)\n", r.ProcessedTPS, r.SingleProcessedTPS)
	fmt.Fprintf(w, "TTFT:             p50 %.0f ms, p99 %.0f ms, mean %.0f ms\n", r.TTFTP50, r.TTFTP99, r.TTFTMean)
	fmt.Fprintf(w, "inter-token:      p50 %.1f ms, p99 %.1f ms\n", r.ITLP50, r.ITLP99)
	fmt.Fprintf(w, "request latency:  p50 %.0f ms\n", r.RequestLatencyP50)
	fmt.Fprintf(w, "prefix hits:      %s\n", hit)
	if r.PeakBlocks > 0 {
		fmt.Fprintf(w, "peak K/V blocks:  %d\n", r.PeakBlocks)
	}
}
