package loadgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"

	"folio/models"
	"folio/runner"
	"folio/store"
)

// RestartConfig is a two-turn conversation across a restart: turn 1 is a
// History-token prompt of random tokens (Seed) answered greedily with
// Answer tokens on an engine persisting its prefixes in the store at Home;
// turn 2 adds the answer and a FollowUp-token message.
type RestartConfig struct {
	Home                      string
	History, Answer, FollowUp int
	Seed                      uint64
}

// RestartReport compares turn 2's time to first token with nothing cached
// (cold) and with the prefixes restored from the reopened store.
type RestartReport struct {
	History           int     `json:"history"`
	Turn2Prompt       int     `json:"turn2_prompt"`
	ColdTTFTms        float64 `json:"cold_ttft_ms"`
	RestoredTTFTms    float64 `json:"restored_ttft_ms"`
	Speedup           float64 `json:"speedup"`
	PromptEvalCount   int     `json:"prompt_eval_count"`
	PromptCachedCount int     `json:"prompt_cached_count"`
	SameTokens        bool    `json:"same_tokens"` // the restored turn 2 generated what the cold one did (greedy)
}

// Restart runs turn 1 on an engine over the store in cfg.Home, closes
// both, then turn 2 twice: on a fresh engine without a cache (cold) and on
// a fresh engine over the reopened store (restored).
func Restart(ctx context.Context, m *runner.Model, cfg RestartConfig) (RestartReport, error) {
	if cfg.History < 1 || cfg.Home == "" {
		return RestartReport{}, errors.New("loadgen: restart needs a positive history and a home folder")
	}
	fp, err := fingerprint(m)
	if err != nil {
		return RestartReport{}, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 11))
	turn1 := randomPrompt(r, m, cfg.History)
	if bos := m.Tok.Vocab().BOS; bos >= 0 {
		turn1[0] = bos
	}
	// turn 1, persisted
	tr1, err := runStored(ctx, m, cfg.Home, fp, turn1, cfg.Answer)
	if err != nil {
		return RestartReport{}, err
	}
	turn2 := append(append(slices.Clone(turn1), tr1.IDs...), randomPrompt(r, m, cfg.FollowUp)...)
	// cold: nothing cached anywhere
	cold, err := runCold(ctx, m, turn2, cfg.Answer)
	if err != nil {
		return RestartReport{}, err
	}
	// restored: a new engine over the reopened store
	warm, err := runStored(ctx, m, cfg.Home, fp, turn2, cfg.Answer)
	if err != nil {
		return RestartReport{}, err
	}
	rep := RestartReport{History: cfg.History, Turn2Prompt: len(turn2),
		ColdTTFTms: cold.TTFT().Seconds() * 1e3, RestoredTTFTms: warm.TTFT().Seconds() * 1e3,
		PromptEvalCount: warm.Computed, PromptCachedCount: warm.Cached, SameTokens: slices.Equal(cold.IDs, warm.IDs)}
	rep.Speedup = rep.ColdTTFTms / max(rep.RestoredTTFTms, 1e-3)
	return rep, nil
}

// runCold runs prompt on a new engine without a prefix cache.
func runCold(ctx context.Context, m *runner.Model, prompt []int32, answer int) (Trace, error) {
	e, err := runner.NewEngine(m, runner.EngineOptions{NoPrefixCache: true})
	if err != nil {
		return Trace{}, err
	}
	defer e.Close()
	return RunTokens(ctx, e, prompt, answer, 0, 1)
}

// runStored runs prompt on a new engine over the store in home, then
// closes the engine and the store.
func runStored(ctx context.Context, m *runner.Model, home, fp string, prompt []int32, answer int) (Trace, error) {
	e, done, err := openStored(m, home, fp)
	if err != nil {
		return Trace{}, err
	}
	defer done()
	return RunTokens(ctx, e, prompt, answer, 0, 1)
}

// fingerprint names m's K/V in a prefix store.
func fingerprint(m *runner.Model) (string, error) {
	digest, _, err := models.FileDigest(m.File.Path)
	if err != nil {
		return "", err
	}
	return runner.Fingerprint(digest, m), nil
}

// openStored opens the prefix store in home and a new engine over it, as
// a server starting does; done closes the engine, then the store (which
// writes what it has queued).
func openStored(m *runner.Model, home, fp string) (e *runner.Engine, done func(), err error) {
	st, err := store.OpenKV(home, store.KVOptions{})
	if err != nil {
		return nil, nil, err
	}
	e, err = runner.NewEngine(m, runner.EngineOptions{Store: st, Fingerprint: fp})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return e, func() { e.Close(); st.Close() }, nil
}
