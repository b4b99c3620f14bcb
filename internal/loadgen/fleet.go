package loadgen

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"

	"folio/runner"
	"folio/store"
)

// FleetConfig is a two-turn conversation on a fleet of two servers that
// share prefixes through Redis (URL, Key): turn 1 (History random tokens,
// Seed, answered greedily with Answer tokens) runs on server A; turn 2
// adds the answer and a FollowUp-token message.
type FleetConfig struct {
	URL, Key                  string
	History, Answer, FollowUp int
	Seed                      uint64
}

// FleetReport is turn 2's time to first token three ways: on server A
// again (its in-memory prefix cache: local hit), on server B, a fresh
// engine over an empty store of its own with the shared tier (remote
// hit), and with nothing cached (recompute).
type FleetReport struct {
	History         int     `json:"history"`
	Turn2Prompt     int     `json:"turn2_prompt"`
	LocalTTFTms     float64 `json:"local_hit_ttft_ms"`
	RemoteTTFTms    float64 `json:"remote_hit_ttft_ms"`
	RecomputeTTFTms float64 `json:"recompute_ttft_ms"`
	// RemoteSpeedup is recompute / remote hit.
	RemoteSpeedup float64 `json:"remote_speedup"`
	LocalCached   int     `json:"local_cached"`
	RemoteCached  int     `json:"remote_cached"` // prompt_cached_count of the remote hit
	RemoteBlocks  int64   `json:"remote_blocks"` // blocks server B restored from Redis
	SameTokens    bool    `json:"same_tokens"`   // the three turn 2s generated the same tokens (greedy)
}

// Fleet runs the conversation: turn 1 on server A (written behind to
// Redis, flushed), then turn 2 on B, on A and cold, in that order.
func Fleet(ctx context.Context, m *runner.Model, cfg FleetConfig) (FleetReport, error) {
	if cfg.History < 1 || cfg.URL == "" {
		return FleetReport{}, errors.New("loadgen: fleet needs a positive history and a Redis URL")
	}
	fp, err := fingerprint(m)
	if err != nil {
		return FleetReport{}, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 13))
	turn1 := randomPrompt(r, m, cfg.History)
	openServer := func() (*store.KVStore, *runner.Engine, func(), error) {
		home, err := os.MkdirTemp("", "folio-bench-fleet-")
		if err != nil {
			return nil, nil, nil, err
		}
		remote, err := store.OpenRemote(store.RemoteOptions{URL: cfg.URL, Key: []byte(cfg.Key)})
		if err != nil {
			os.RemoveAll(home)
			return nil, nil, nil, err
		}
		st, err := store.OpenKV(home, store.KVOptions{Remote: remote})
		if err != nil {
			os.RemoveAll(home)
			return nil, nil, nil, err
		}
		e, err := runner.NewEngine(m, runner.EngineOptions{Store: st, Fingerprint: fp})
		if err != nil {
			st.Close()
			os.RemoveAll(home)
			return nil, nil, nil, err
		}
		return st, e, func() { e.Close(); st.Close(); os.RemoveAll(home) }, nil
	}
	stA, a, closeA, err := openServer()
	if err != nil {
		return FleetReport{}, err
	}
	defer closeA()
	tr1, err := RunTokens(ctx, a, turn1, cfg.Answer, 0, 1)
	if err != nil {
		return FleetReport{}, err
	}
	stA.Flush() // in kvcache.db and in Redis
	turn2 := append(append(slices.Clone(turn1), tr1.IDs...), randomPrompt(r, m, cfg.FollowUp)...)
	stB, b, closeB, err := openServer()
	if err != nil {
		return FleetReport{}, err
	}
	defer closeB()
	remote, err := RunTokens(ctx, b, turn2, cfg.Answer, 0, 1)
	if err != nil {
		return FleetReport{}, err
	}
	// A after B, so that B finds in Redis only what turn 1 wrote (A then
	// may fetch the follow-up's blocks B wrote: at most two)
	local, err := RunTokens(ctx, a, turn2, cfg.Answer, 0, 1)
	if err != nil {
		return FleetReport{}, err
	}
	cold, err := runCold(ctx, m, turn2, cfg.Answer)
	if err != nil {
		return FleetReport{}, err
	}
	rs, _ := stB.RemoteStats()
	rep := FleetReport{History: cfg.History, Turn2Prompt: len(turn2),
		LocalTTFTms: local.TTFT().Seconds() * 1e3, RemoteTTFTms: remote.TTFT().Seconds() * 1e3,
		RecomputeTTFTms: cold.TTFT().Seconds() * 1e3, LocalCached: local.Cached, RemoteCached: remote.Cached,
		RemoteBlocks: rs.Hits, SameTokens: slices.Equal(cold.IDs, remote.IDs) && slices.Equal(cold.IDs, local.IDs)}
	rep.RemoteSpeedup = rep.RecomputeTTFTms / max(rep.RemoteTTFTms, 1e-3)
	return rep, nil
}

// randomPrompt is n random tokens that are neither BOS nor an end token.
func randomPrompt(r *rand.Rand, m *runner.Model, n int) []int32 {
	vocab := m.Tok.Vocab()
	out := make([]int32, n)
	for i := range out {
		for {
			t := int32(r.IntN(vocab.Size()))
			if !vocab.IsEOG(t) && t != vocab.BOS {
				out[i] = t
				break
			}
		}
	}
	return out
}
