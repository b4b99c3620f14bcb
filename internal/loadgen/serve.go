package loadgen

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// ServeConfig is a `folio bench serve` run.
type ServeConfig struct {
	Shape       Shape
	Requests    int     // M
	Concurrency int     // N: requests in flight at once (a closed loop)
	Seed        uint64  // lengths, prompt contents and sampling seeds
	Temperature float32 // 0: greedy; otherwise seeded by each request's seed
	SingleReps  int     // runs of the single request before the concurrent phase, and as many after (the median counts); ≤ 1: one each
}

// ServeReport is what a serve run measured. Times are in milliseconds.
type ServeReport struct {
	ThroughputTPS float64 `json:"throughput_tps"` // output tokens / wall time, all requests
	SingleTPS     float64 `json:"single_tps"`     // output tokens / wall time of one request alone: the median run
	TTFTP50       float64 `json:"ttft_p50_ms"`
	TTFTP99       float64 `json:"ttft_p99_ms"`
	ITLP50        float64 `json:"itl_p50_ms"` // gaps between a request's successive tokens, all requests
	// PrefixHitRate is cached prompt tokens / all prompt tokens; null when
	// the target does not report cached tokens.
	PrefixHitRate *float64 `json:"prefix_hit_rate"`
	PeakBlocks    int      `json:"peak_blocks"` // 0 when the target does not say

	// SteadyTPS is output tokens / time while all N requests were in
	// flight: from the start to the last request's submission, before
	// the run drains through its longest requests with fewer in flight.
	SteadyTPS     float64 `json:"steady_tps"`
	SteadySpeedup float64 `json:"steady_speedup"` // steady / single
	SteadyS       float64 `json:"steady_s"`       // the steady window

	Speedup           float64   `json:"speedup"`           // throughput / single
	SingleDecodeTPS   float64   `json:"single_decode_tps"` // the single request's tokens after the first / their time
	SingleTTFT        float64   `json:"single_ttft_ms"`    // the single request's time to first token
	SinglePrompt      int       `json:"single_prompt"`     // its prompt tokens
	SingleOutput      int       `json:"single_output"`     // its tokens generated
	SingleRunsTPS     []float64 `json:"single_runs_tps"`   // every single run's, slowest first
	Requests          int       `json:"requests"`          // M
	Concurrency       int       `json:"concurrency"`       // N
	WallS             float64   `json:"wall_s"`            // the concurrent phase
	PromptTokens      int       `json:"prompt_tokens"`     // all prompts, computed and cached
	OutputTokens      int       `json:"output_tokens"`     // generated
	RequestedTokens   int       `json:"requested_tokens"`  // the sum of num_predict: more than output when end tokens came early
	ShortRequests     int       `json:"short_requests"`    // requests that ended before num_predict
	ITLP99            float64   `json:"itl_p99_ms"`
	TTFTMean          float64   `json:"ttft_mean_ms"`
	RequestLatencyP50 float64   `json:"request_latency_p50_ms"` // submission to end
	// Tokens through the model per second: prompt tokens computed plus
	// tokens generated, for all requests and for the single one.
	ProcessedTPS       float64 `json:"processed_tps"`
	SingleProcessedTPS float64 `json:"single_processed_tps"`
}

// Serve measures t: first a warm-up request, then one request alone
// (prompt and output of the shape's mean lengths, cfg.SingleReps times),
// then cfg.Requests requests, cfg.Concurrency at a
// time. A request that fails ends the run with its error.
func Serve(ctx context.Context, t Target, cfg ServeConfig) (ServeReport, error) {
	if cfg.Requests < 1 || cfg.Concurrency < 1 {
		return ServeReport{}, fmt.Errorf("loadgen: %d requests, %d at a time: use at least one of each", cfg.Requests, cfg.Concurrency)
	}
	specs, err := cfg.Shape.Specs(cfg.Requests, cfg.Seed)
	if err != nil {
		return ServeReport{}, err
	}
	rep := ServeReport{Requests: cfg.Requests, Concurrency: cfg.Concurrency}

	// A warm-up request, not measured: the first forward pass pays for
	// page faults on the weights and scratch.
	if _, err := t.Do(ctx, Spec{Unique: 8, Output: 2, Seed: cfg.Seed ^ 0x3a7}, cfg.Temperature); err != nil {
		return rep, fmt.Errorf("loadgen: the warm-up request: %w", err)
	}
	// One request alone, SingleReps times before the concurrent phase
	// and as many after it; the run of median speed counts.
	singles, err := singleRuns(ctx, t, cfg, 0)
	if err != nil {
		return rep, err
	}

	traces := make([]Trace, len(specs))
	starts := make([]time.Duration, len(specs)) // submissions, since start
	start := time.Now()
	err = runPool(ctx, len(specs), cfg.Concurrency, func(ctx context.Context, i int) (err error) {
		starts[i] = time.Since(start)
		traces[i], err = t.Do(ctx, specs[i], cfg.Temperature)
		return err
	})
	wall := time.Since(start)
	if err != nil {
		return rep, err
	}
	after, err := singleRuns(ctx, t, cfg, max(cfg.SingleReps, 1))
	if err != nil {
		return rep, err
	}
	singles = append(singles, after...)
	slices.SortFunc(singles, func(a, b singleRun) int { return cmp.Compare(a.tps, b.tps) })
	st := singles[len(singles)/2].tr
	rep.SingleTPS = singles[len(singles)/2].tps
	rep.SingleTTFT = ms(st.TTFT())
	rep.SingleProcessedTPS = float64(st.Computed+st.Output) / st.Done.Seconds()
	rep.SingleOutput = st.Output
	rep.SinglePrompt = singles[len(singles)/2].prompt
	if n := len(st.Tokens); n > 1 {
		rep.SingleDecodeTPS = float64(n-1) / (st.Tokens[n-1] - st.Tokens[0]).Seconds()
	}
	for _, r := range singles {
		rep.SingleRunsTPS = append(rep.SingleRunsTPS, r.tps)
	}

	rep.WallS = wall.Seconds()
	var ttft, itl, lat []time.Duration
	cached, all, known, computed := 0, 0, true, 0
	for i, tr := range traces {
		rep.OutputTokens += tr.Output
		rep.RequestedTokens += specs[i].Output
		rep.PromptTokens += specs[i].PromptLen()
		if tr.Output < specs[i].Output {
			rep.ShortRequests++
		}
		ttft = append(ttft, tr.TTFT())
		lat = append(lat, tr.Done)
		for j := 1; j < len(tr.Tokens); j++ {
			itl = append(itl, tr.Tokens[j]-tr.Tokens[j-1])
		}
		if tr.Cached < 0 {
			known = false
		}
		cached += tr.Cached
		computed += tr.Computed
		all += tr.Cached + tr.Computed
	}
	rep.ThroughputTPS = float64(rep.OutputTokens) / wall.Seconds()
	rep.Speedup = rep.ThroughputTPS / rep.SingleTPS
	if n, d := steadyTokens(traces, starts, cfg.Concurrency); d > 0 {
		rep.SteadyS = d.Seconds()
		rep.SteadyTPS = float64(n) / d.Seconds()
		rep.SteadySpeedup = rep.SteadyTPS / rep.SingleTPS
	}
	rep.ProcessedTPS = float64(computed+rep.OutputTokens) / wall.Seconds()
	rep.TTFTP50, rep.TTFTP99 = ms(percentile(ttft, 50)), ms(percentile(ttft, 99))
	rep.ITLP50, rep.ITLP99 = ms(percentile(itl, 50)), ms(percentile(itl, 99))
	rep.RequestLatencyP50 = ms(percentile(lat, 50))
	var sum time.Duration
	for _, d := range ttft {
		sum += d
	}
	rep.TTFTMean = ms(sum / time.Duration(len(ttft)))
	if known && all > 0 {
		rate := float64(cached) / float64(all)
		rep.PrefixHitRate = &rate
	}
	if bc, ok := t.(BlockCounter); ok {
		rep.PeakBlocks = bc.PeakBlocks()
	}
	return rep, nil
}

// singleRun is one request sent alone, its output tokens a second and
// its prompt's length.
type singleRun struct {
	tr     Trace
	tps    float64
	prompt int // tokens
}

// singleRuns sends cfg.SingleReps (at least one) requests of the shape's
// mean lengths one after another, each with a prompt of its own (sharing
// only the common part): the first has seed index first.
func singleRuns(ctx context.Context, t Target, cfg ServeConfig, first int) ([]singleRun, error) {
	var runs []singleRun
	for i := first; i < first+max(cfg.SingleReps, 1); i++ {
		spec := Spec{Shared: cfg.Shape.Shared, Output: int(math.Round(cfg.Shape.OutputMean)), Seed: cfg.Seed ^ 0xa11ce + uint64(i)}
		spec.Unique = max(int(math.Round(cfg.Shape.PromptMean))-spec.Shared, 1)
		tr, err := t.Do(ctx, spec, cfg.Temperature)
		if err != nil {
			return nil, fmt.Errorf("loadgen: the single request: %w", err)
		}
		runs = append(runs, singleRun{tr, float64(tr.Output) / tr.Done.Seconds(), spec.PromptLen()})
	}
	return runs, nil
}

// steadyTokens returns the window in which every one of concurrency slots
// held a request (the run's start to the last submission: until then a
// request that ends is replaced at once) and the output tokens that
// arrived in it; 0 when there were no more requests than slots. A
// streamed chunk counts as one token, as Trace's times do.
func steadyTokens(traces []Trace, starts []time.Duration, concurrency int) (n int, window time.Duration) {
	if len(starts) <= concurrency {
		return 0, 0
	}
	window = slices.Max(starts)
	for i, tr := range traces {
		for _, at := range tr.Tokens {
			if starts[i]+at <= window {
				n++
			}
		}
	}
	return n, window
}

// runPool calls do(ctx, i) for i in [0, n), concurrency calls at a time,
// in order of i. The first error cancels the calls still running and is
// returned, naming the index.
func runPool(ctx context.Context, n, concurrency int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency, n) {
		wg.Go(func() {
			for i := range next {
				if err := do(ctx, i); err != nil {
					cancel(fmt.Errorf("loadgen: request %d: %w", i, err))
				}
			}
		})
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// percentile is the nearest-rank p-th percentile of ds (0 for none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[min(max(k, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
