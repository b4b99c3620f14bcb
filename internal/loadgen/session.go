package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"folio/runner"
)

// TurnsConfig is a two-turn conversation: a History-token prompt answered
// with Answer tokens, then the same prompt, the answer and a FollowUp-token
// user message. Both turns are greedy.
type TurnsConfig struct {
	History, Answer, FollowUp int
	Seed                      uint64
}

// TurnsReport compares the turns' times to first token (submission to the
// first token event), in milliseconds.
type TurnsReport struct {
	Turn1TTFT     float64 `json:"turn1_ttft_ms"`
	Turn2TTFT     float64 `json:"turn2_ttft_ms"`
	Ratio         float64 `json:"ratio"` // turn 1 / turn 2
	History       int     `json:"history"`
	Turn1Computed int     `json:"turn1_computed"` // prompt tokens computed
	Turn2Prompt   int     `json:"turn2_prompt"`   // prompt tokens in all
	Turn2Computed int     `json:"turn2_computed"`
	Turn2Cached   int     `json:"turn2_cached"` // reused from the prefix cache
}

// Multiturn plays cfg on e, which should start with an empty prefix cache.
func Multiturn(ctx context.Context, e *runner.Engine, cfg TurnsConfig) (TurnsReport, error) {
	tok, err := NewTokens(e.Model().Tok.Vocab())
	if err != nil {
		return TurnsReport{}, err
	}
	if cfg.History < 1 || cfg.Answer < 1 || cfg.FollowUp < 1 {
		return TurnsReport{}, fmt.Errorf("loadgen: history %d, answer %d, follow-up %d: use at least one token each", cfg.History, cfg.Answer, cfg.FollowUp)
	}
	p1 := tok.Prompt(Spec{Unique: cfg.History, Seed: cfg.Seed})
	t1, err := RunTokens(ctx, e, p1, cfg.Answer, 0, 0)
	if err != nil {
		return TurnsReport{}, fmt.Errorf("loadgen: turn 1: %w", err)
	}
	p2 := append(append(p1[:len(p1):len(p1)], t1.IDs...), tok.Draw(nil, rand.New(rand.NewPCG(cfg.Seed, 2)), cfg.FollowUp)...)
	t2, err := RunTokens(ctx, e, p2, cfg.Answer, 0, 0)
	if err != nil {
		return TurnsReport{}, fmt.Errorf("loadgen: turn 2: %w", err)
	}
	return TurnsReport{Turn1TTFT: ms(t1.TTFT()), Turn2TTFT: ms(t2.TTFT()), Ratio: float64(t1.TTFT()) / float64(t2.TTFT()),
		History: cfg.History, Turn1Computed: t1.Computed, Turn2Prompt: len(p2), Turn2Computed: t2.Computed, Turn2Cached: t2.Cached}, nil
}

// ExtractionConfig is one document asked Questions different questions,
// each a separate request of the document followed by QuestionTokens
// tokens, Concurrency at a time, Answer tokens each (greedy).
type ExtractionConfig struct {
	DocTokens, Questions, QuestionTokens, Answer, Concurrency int
	Seed                                                      uint64
	Engine                                                    runner.EngineOptions // NoPrefixCache is set per run
}

// ExtractionRun is one pass over the questions.
type ExtractionRun struct {
	TotalS   float64 `json:"total_s"`
	Computed int     `json:"computed"` // prompt tokens computed, all requests
	Cached   int     `json:"cached"`   // prompt tokens reused
	// FirstWaveCached is the prompt tokens reused by the first
	// Concurrency requests (submitted together).
	FirstWaveCached int `json:"first_wave_cached"`
	PeakBlocks      int `json:"peak_blocks"`
}

// ExtractionReport compares the passes: with the prefix cache, the
// questions sent Concurrency at a time from the start (Total) and with the
// first question sent alone before the others (Warm), and without it.
type ExtractionReport struct {
	TotalS        float64       `json:"total_s"`
	NoCacheTotalS float64       `json:"no_cache_total_s"`
	Speedup       float64       `json:"speedup"` // no cache / cache
	WarmTotalS    float64       `json:"warm_total_s"`
	WarmSpeedup   float64       `json:"warm_speedup"`
	Cache         ExtractionRun `json:"cache"`
	Warm          ExtractionRun `json:"warm"`
	NoCache       ExtractionRun `json:"no_cache"`
}

// Extraction runs the three passes on m, each on an engine of its own.
func Extraction(ctx context.Context, m *runner.Model, cfg ExtractionConfig) (ExtractionReport, error) {
	if cfg.DocTokens < 1 || cfg.Questions < 1 || cfg.QuestionTokens < 1 || cfg.Answer < 1 || cfg.Concurrency < 1 {
		return ExtractionReport{}, fmt.Errorf("loadgen: extraction needs a document, questions, answers and concurrency of at least 1 each (got %+v)", cfg)
	}
	tok, err := NewTokens(m.Tok.Vocab())
	if err != nil {
		return ExtractionReport{}, err
	}
	doc := tok.Prompt(Spec{Unique: cfg.DocTokens, Seed: cfg.Seed})
	prompts := make([][]int32, cfg.Questions)
	for i := range prompts {
		q := tok.Draw(nil, rand.New(rand.NewPCG(cfg.Seed, uint64(100+i))), cfg.QuestionTokens)
		prompts[i] = append(doc[:len(doc):len(doc)], q...)
	}
	var rep ExtractionReport
	for _, pass := range []struct {
		out           *ExtractionRun
		noCache, warm bool
	}{{&rep.Cache, false, false}, {&rep.Warm, false, true}, {&rep.NoCache, true, false}} {
		opt := cfg.Engine
		opt.NoPrefixCache = pass.noCache
		if *pass.out, err = extractionPass(ctx, m, opt, prompts, cfg, pass.warm); err != nil {
			return rep, err
		}
	}
	rep.TotalS, rep.WarmTotalS, rep.NoCacheTotalS = rep.Cache.TotalS, rep.Warm.TotalS, rep.NoCache.TotalS
	rep.Speedup, rep.WarmSpeedup = rep.NoCacheTotalS/rep.TotalS, rep.NoCacheTotalS/rep.WarmTotalS
	return rep, nil
}

// extractionPass asks every prompt on a new engine; with warm, the first
// alone before the others.
func extractionPass(ctx context.Context, m *runner.Model, opt runner.EngineOptions, prompts [][]int32, cfg ExtractionConfig, warm bool) (ExtractionRun, error) {
	e, err := runner.NewEngine(m, opt)
	if err != nil {
		return ExtractionRun{}, err
	}
	defer e.Close()
	traces := make([]Trace, len(prompts))
	ask := func(ctx context.Context, i int) (err error) {
		traces[i], err = RunTokens(ctx, e, prompts[i], cfg.Answer, 0, 0)
		return err
	}
	start := time.Now()
	first := 0
	if warm {
		if err := ask(ctx, 0); err != nil {
			return ExtractionRun{}, err
		}
		first = 1
	}
	err = runPool(ctx, len(prompts)-first, cfg.Concurrency, func(ctx context.Context, i int) error { return ask(ctx, first+i) })
	run := ExtractionRun{TotalS: time.Since(start).Seconds(), PeakBlocks: e.Stats().PeakBlocks}
	if err != nil {
		return run, err
	}
	for i, tr := range traces {
		run.Computed += tr.Computed
		run.Cached += tr.Cached
		if i < cfg.Concurrency {
			run.FirstWaveCached += tr.Cached
		}
	}
	return run, nil
}
