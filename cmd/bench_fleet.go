package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"folio/internal/envconfig"
	"folio/internal/loadgen"
)

func newBenchFleetCmd() *cobra.Command {
	var (
		mf       modelFlags
		model    string
		url      string
		history  int
		followUp int
		answer   int
		seed     uint64
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "fleet --model FILE --redis URL --history N",
		Short: "Time turn 2 of a conversation on the server that ran turn 1, on another one sharing Redis, and recomputed",
		Long: "fleet runs turn 1 (an N-token history of random tokens and a greedy answer) on engine A,\n" +
			"whose store writes its blocks behind to the Redis at --redis (FOLIO_KV_REMOTE_KEY seals\n" +
			"them; a fixed bench key when unset), then sends turn 2 (history, answer, a --follow-up-token\n" +
			"message) to A again (local hit), to engine B over an empty store of its own and the same\n" +
			"Redis (remote hit), and to an engine without a cache (recompute). TTFT is the time from\n" +
			"submission to the first token.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" || url == "" {
				return fmt.Errorf("bench fleet: pass --model FILE and --redis redis://127.0.0.1:6379/0 (start redis-server first)")
			}
			if history < 1 {
				return fmt.Errorf("bench fleet: --history %d: use a positive token count", history)
			}
			if mf.opt.NumCtx == 0 {
				mf.opt.NumCtx = history + answer + followUp + 2*answer + 16
			}
			m, err := mf.load(model)
			if err != nil {
				return err
			}
			defer m.Close()
			key := envconfig.Get("FOLIO_KV_REMOTE_KEY")
			if key == "" {
				key = "folio bench fleet's fixed key"
			}
			rep, err := loadgen.Fleet(cmd.Context(), m, loadgen.FleetConfig{URL: url, Key: key, History: history,
				Answer: answer, FollowUp: followUp, Seed: seed})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "turn 2 (%d tokens) TTFT: local hit %.0f ms (%d cached); remote hit %.0f ms (%d cached, %d blocks from Redis); recompute %.0f ms: remote hit %.1fx sooner; same tokens: %v\n",
				rep.Turn2Prompt, rep.LocalTTFTms, rep.LocalCached, rep.RemoteTTFTms, rep.RemoteCached, rep.RemoteBlocks,
				rep.RecomputeTTFTms, rep.RemoteSpeedup, rep.SameTokens)
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "GGUF file")
	f.StringVar(&url, "redis", "", "redis://host:port/db that the two engines share")
	f.IntVar(&history, "history", 4000, "tokens of turn 1's prompt")
	f.IntVar(&answer, "answer", 16, "tokens of each answer")
	f.IntVar(&followUp, "follow-up", 20, "tokens of the second user message")
	f.Uint64Var(&seed, "seed", 1, "seed of the prompt tokens")
	f.BoolVar(&asJSON, "json", false, `print {"local_hit_ttft_ms", "remote_hit_ttft_ms", "recompute_ttft_ms", "remote_speedup", ...}`)
	return cmd
}
