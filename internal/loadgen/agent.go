package loadgen

import (
	"context"
	"fmt"
	"slices"
	"time"

	"folio/runner"
)

// AgentTurn is one request of an agent run.
type AgentTurn struct {
	Agent    int `json:"agent"` // from 1
	Turn     int `json:"turn"`  // from 1
	Prompt   int `json:"prompt_tokens"`
	Cached   int `json:"cached_tokens"`   // reused from the prefix cache (restored ones included)
	Restored int `json:"restored_tokens"` // of those, loaded from the prefix store
	// Shared is how many of the prompt's first tokens are the agent's
	// previous prompt and reply as they were computed: the most a prefix
	// cache can serve (0 on turn 1).
	Shared int     `json:"shared_tokens"`
	TTFTms float64 `json:"ttft_ms"` // submission to the first token
	Output int     `json:"output_tokens"`
}

// AgentPass is the run of every turn of every agent in one mode.
type AgentPass struct {
	Turns  []AgentTurn `json:"turns"`
	TotalS float64     `json:"total_s"`
	// MedianTTFTms is over turns 2 and later, all agents.
	MedianTTFTms float64 `json:"median_ttft_ms"`
}

// AgentReport compares the passes: with the prefix cache (Cache), without
// it (NoCache: every prompt computed in full), and with the prefix cache
// persisted in a store and a restart after RestartAfter turns (Restart:
// the engine and the store closed and opened again, as a server restarts).
type AgentReport struct {
	SystemTokens int `json:"system_tokens"` // the first prompt less the task's tokens: system prompt, tools, the template's framing
	Tools        int `json:"tools"`
	Turns        int `json:"turns"`
	Agents       int `json:"agents"`
	NumCtx       int `json:"num_ctx"`
	// CachedFraction is the median over turns 2 and later (all agents) of
	// cached ÷ prompt tokens with the prefix cache; MinCachedFraction the
	// smallest. SharedFraction is the same median of shared ÷ prompt: what
	// a cache could serve at most, the rest being the turn's new reply and
	// tool result.
	CachedFraction    float64 `json:"cached_fraction"`
	MinCachedFraction float64 `json:"min_cached_fraction"`
	SharedFraction    float64 `json:"shared_fraction"`
	// TTFTRatio is the median TTFT without the cache ÷ the median with
	// it, over the turns (2 and later) both passes ran.
	TTFTRatio float64 `json:"ttft_ratio"`
	// RestartRatio is, over the agents (median), the TTFT of the turn
	// after the restart computed in full (the pass without the cache) ÷
	// its TTFT after the restart.
	RestartRatio float64   `json:"restart_ratio"`
	RestartTurn  int       `json:"restart_turn"`
	Cache        AgentPass `json:"cache"`
	NoCache      AgentPass `json:"no_cache"`
	Restart      AgentPass `json:"restart"`
}

// Agent runs s on m in three passes, each on engines of its own: with the
// prefix cache (which records the replies the others send again), without
// it, and with a prefix store and a restart.
func Agent(ctx context.Context, m *runner.Model, s *AgentScript) (AgentReport, error) {
	cfg := s.cfg
	numCtx, err := s.NumCtx()
	if err != nil {
		return AgentReport{}, err
	}
	if numCtx > m.Opt.NumCtx {
		return AgentReport{}, fmt.Errorf("loadgen: agent: the turns need a context of %d tokens and the model was loaded with num_ctx %d: raise num_ctx", numCtx, m.Opt.NumCtx)
	}
	fp, err := fingerprint(m)
	if err != nil {
		return AgentReport{}, err
	}
	rep := AgentReport{SystemTokens: s.systemTokens, Tools: cfg.Tools, Turns: cfg.Turns, Agents: cfg.Agents,
		NumCtx: numCtx, RestartTurn: cfg.RestartAfter + 1}
	if err := warmUp(ctx, m); err != nil {
		return AgentReport{}, err
	}
	every := max(cfg.NoCacheEvery, 1)
	passes := []struct {
		name string
		out  *AgentPass
		opt  runner.EngineOptions
		run  func(turn int) bool
	}{
		{"cache", &rep.Cache, runner.EngineOptions{}, nil},
		{"no cache", &rep.NoCache, runner.EngineOptions{NoPrefixCache: true},
			func(t int) bool { return (t-1)%every == 0 || t == rep.RestartTurn }},
		{"restart", &rep.Restart, runner.EngineOptions{}, nil},
	}
	for i, p := range passes {
		e, done, err := openPass(m, p.opt, i == 2, cfg.Home, fp)
		if err != nil {
			return rep, err
		}
		start := time.Now()
		for t := 1; t <= cfg.Turns && err == nil; t++ {
			if p.run != nil && !p.run(t) {
				continue
			}
			if i == 2 && t == rep.RestartTurn {
				done()
				if e, done, err = openPass(m, p.opt, true, cfg.Home, fp); err != nil {
					return rep, err
				}
			}
			for a := range cfg.Agents {
				var row AgentTurn
				if row, err = s.turn(ctx, e, a, t, i == 0); err != nil {
					err = fmt.Errorf("loadgen: agent %d, turn %d (%s): %w", a+1, t, p.name, err)
					break
				}
				p.out.Turns = append(p.out.Turns, row)
				if cfg.Progress != nil {
					cfg.Progress(p.name, row)
				}
			}
		}
		done()
		p.out.TotalS = time.Since(start).Seconds()
		if err != nil {
			return rep, err
		}
		p.out.MedianTTFTms = Median(later(p.out.Turns, nil, func(r AgentTurn) float64 { return r.TTFTms }))
	}
	rep.summarize()
	return rep, nil
}

// warmUp runs a short request on m, unmeasured, so that the first turn
// does not pay for the first touch of the weights.
func warmUp(ctx context.Context, m *runner.Model) error {
	e, err := runner.NewEngine(m, runner.EngineOptions{NoPrefixCache: true})
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = RunTokens(ctx, e, []int32{max(m.Tok.Vocab().BOS, 0)}, 2, 0, 0)
	return err
}

// openPass opens an engine on m, over the store in home when stored.
func openPass(m *runner.Model, opt runner.EngineOptions, stored bool, home, fp string) (*runner.Engine, func(), error) {
	if stored {
		return openStored(m, home, fp)
	}
	e, err := runner.NewEngine(m, opt)
	if err != nil {
		return nil, nil, err
	}
	return e, e.Close, nil
}

// turn sends agent a's turn t to e; with record, its reply becomes the
// one the later turns send.
func (s *AgentScript) turn(ctx context.Context, e *runner.Engine, a, t int, record bool) (AgentTurn, error) {
	prompt, err := s.Prompt(a, t)
	if err != nil {
		return AgentTurn{}, err
	}
	tr, err := RunTokens(ctx, e, prompt, s.predict[a][t-1], 0, 0)
	if err != nil {
		return AgentTurn{}, err
	}
	if record {
		s.Record(a, t, tr.IDs)
		s.computed[a][t-1] = append(prompt, tr.IDs...)
	}
	row := AgentTurn{Agent: a + 1, Turn: t, Prompt: len(prompt), Cached: tr.Cached, Restored: tr.Restored,
		TTFTms: ms(tr.TTFT()), Output: tr.Output}
	if t > 1 {
		row.Shared = commonPrefix(prompt, s.computed[a][t-2])
	}
	return row, nil
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// summarize computes the report's ratios from its passes' turns.
func (r *AgentReport) summarize() {
	frac := func(num func(AgentTurn) int) func(AgentTurn) float64 {
		return func(t AgentTurn) float64 { return float64(num(t)) / float64(max(t.Prompt, 1)) }
	}
	cached := later(r.Cache.Turns, nil, frac(func(t AgentTurn) int { return t.Cached }))
	r.CachedFraction = Median(cached)
	if len(cached) > 0 {
		r.MinCachedFraction = slices.Min(cached)
	}
	r.SharedFraction = Median(later(r.Cache.Turns, nil, frac(func(t AgentTurn) int { return t.Shared })))
	// the same turns on both sides
	ran := func(t AgentTurn) bool { return r.NoCache.Find(t.Agent, t.Turn) != nil }
	ttft := func(t AgentTurn) float64 { return t.TTFTms }
	if on := Median(later(r.Cache.Turns, ran, ttft)); on > 0 {
		r.TTFTRatio = Median(later(r.NoCache.Turns, nil, ttft)) / on
	}
	var ratios []float64
	for a := 1; a <= r.Agents; a++ {
		full, after := r.NoCache.Find(a, r.RestartTurn), r.Restart.Find(a, r.RestartTurn)
		if full != nil && after != nil && after.TTFTms > 0 {
			ratios = append(ratios, full.TTFTms/after.TTFTms)
		}
	}
	r.RestartRatio = Median(ratios)
}

// later is f of the turns from 2 on that keep accepts (nil: all).
func later(turns []AgentTurn, keep func(AgentTurn) bool, f func(AgentTurn) float64) []float64 {
	var out []float64
	for _, t := range turns {
		if t.Turn >= 2 && (keep == nil || keep(t)) {
			out = append(out, f(t))
		}
	}
	return out
}

// Find is agent's turn in p, nil when p did not run it.
func (p AgentPass) Find(agent, turn int) *AgentTurn {
	for i := range p.Turns {
		if p.Turns[i].Agent == agent && p.Turns[i].Turn == turn {
			return &p.Turns[i]
		}
	}
	return nil
}

// Median is the middle of xs (the mean of the middle two for an even
// count; 0 for none).
func Median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
