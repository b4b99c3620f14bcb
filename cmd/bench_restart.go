package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"folio/internal/loadgen"
)

func newBenchRestartCmd() *cobra.Command {
	var (
		mf       modelFlags
		model    string
		home     string
		history  int
		followUp int
		answer   int
		seed     uint64
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "restart --model FILE --history N",
		Short: "Time turn 2 of a conversation after a restart, restored from the prefix store vs recomputed",
		Long: "restart runs turn 1 (an N-token history of random tokens and a greedy answer) on an\n" +
			"engine that persists its prefixes in --home (default: a temporary folder), closes it\n" +
			"and the store, then sends turn 2 (history, answer, a --follow-up-token message)\n" +
			"twice: on a fresh engine without a cache (cold) and on a fresh engine over the\n" +
			"reopened store (restored). TTFT is the time from submission to the first token.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return fmt.Errorf("bench restart: no model; pass --model FILE")
			}
			if history < 1 {
				return fmt.Errorf("bench restart: --history %d: use a positive token count", history)
			}
			if mf.opt.NumCtx == 0 {
				mf.opt.NumCtx = history + answer + followUp + 2*answer + 16
			}
			m, err := mf.load(model)
			if err != nil {
				return err
			}
			defer m.Close()
			cfg := loadgen.RestartConfig{Home: home, History: history, Answer: answer, FollowUp: followUp, Seed: seed}
			if cfg.Home == "" {
				if cfg.Home, err = os.MkdirTemp("", "folio-bench-restart-"); err != nil {
					return err
				}
				defer os.RemoveAll(cfg.Home)
			}
			rep, err := loadgen.Restart(cmd.Context(), m, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "turn 2 (%d tokens) cold: TTFT %.0f ms; restored from the store: TTFT %.0f ms (%d computed, %d cached): %.1fx; same tokens: %v\n",
				rep.Turn2Prompt, rep.ColdTTFTms, rep.RestoredTTFTms, rep.PromptEvalCount, rep.PromptCachedCount, rep.Speedup, rep.SameTokens)
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&model, "model", "", "GGUF file")
	f.StringVar(&home, "home", "", "folder for the store (default: a temporary one, removed after)")
	f.IntVar(&history, "history", 1000, "tokens of turn 1's prompt")
	f.IntVar(&answer, "answer", 16, "tokens of each answer")
	f.IntVar(&followUp, "follow-up", 20, "tokens of the second user message")
	f.Uint64Var(&seed, "seed", 1, "seed of the prompt tokens")
	f.BoolVar(&asJSON, "json", false, `print {"cold_ttft_ms", "restored_ttft_ms", "prompt_eval_count", "prompt_cached_count", ...}`)
	return cmd
}
