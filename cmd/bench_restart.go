package cmd

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"folio/bench/loadgen"
	"folio/models"
	"folio/runner"
	"folio/store"
)

// restartReport is what `folio bench restart` measures.
type restartReport struct {
	History           int     `json:"history"`
	ColdTTFTms        float64 `json:"cold_ttft_ms"`
	RestoredTTFTms    float64 `json:"restored_ttft_ms"`
	Speedup           float64 `json:"speedup"`
	PromptEvalCount   int     `json:"prompt_eval_count"`
	PromptCachedCount int     `json:"prompt_cached_count"`
	SameTokens        bool    `json:"same_tokens"` // the restored turn 2 generated what the cold one did (greedy)
}

func init() {
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
			dir := home
			if dir == "" {
				if dir, err = os.MkdirTemp("", "folio-bench-restart-"); err != nil {
					return err
				}
				defer os.RemoveAll(dir)
			}
			digest, _, err := models.FileDigest(m.File.Path)
			if err != nil {
				return err
			}
			fp := runner.Fingerprint(digest, m)
			ctx := cmd.Context()
			r := rand.New(rand.NewPCG(seed, 11))
			vocab := m.Tok.Vocab()
			randomTokens := func(n int) []int32 {
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
			turn1 := append([]int32{}, randomTokens(history)...)
			if vocab.BOS >= 0 {
				turn1[0] = vocab.BOS
			}
			// turn 1, persisted
			st, err := store.Open(dir, store.Options{})
			if err != nil {
				return err
			}
			e, err := runner.NewEngine(m, runner.EngineOptions{Store: st, Fingerprint: fp})
			if err != nil {
				st.Close()
				return err
			}
			tr1, err := loadgen.RunTokens(ctx, e, turn1, answer, 0, 1)
			e.Close()
			st.Close()
			if err != nil {
				return err
			}
			turn2 := append(append(append([]int32{}, turn1...), tr1.IDs...), randomTokens(followUp)...)
			// cold: nothing cached anywhere
			e, err = runner.NewEngine(m, runner.EngineOptions{NoPrefixCache: true})
			if err != nil {
				return err
			}
			cold, err := loadgen.RunTokens(ctx, e, turn2, answer, 0, 1)
			e.Close()
			if err != nil {
				return err
			}
			// restored: a new engine over the reopened store
			if st, err = store.Open(dir, store.Options{}); err != nil {
				return err
			}
			defer st.Close()
			e, err = runner.NewEngine(m, runner.EngineOptions{Store: st, Fingerprint: fp})
			if err != nil {
				return err
			}
			defer e.Close()
			warm, err := loadgen.RunTokens(ctx, e, turn2, answer, 0, 1)
			if err != nil {
				return err
			}
			rep := restartReport{History: history, ColdTTFTms: cold.TTFT().Seconds() * 1e3, RestoredTTFTms: warm.TTFT().Seconds() * 1e3,
				PromptEvalCount: warm.Computed, PromptCachedCount: warm.Cached, SameTokens: slices.Equal(cold.IDs, warm.IDs)}
			rep.Speedup = rep.ColdTTFTms / max(rep.RestoredTTFTms, 1e-3)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "turn 2 (%d tokens) cold: TTFT %.0f ms; restored from the store: TTFT %.0f ms (%d computed, %d cached): %.1fx; same tokens: %v\n",
				len(turn2), rep.ColdTTFTms, rep.RestoredTTFTms, rep.PromptEvalCount, rep.PromptCachedCount, rep.Speedup, rep.SameTokens)
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
	benchCmd.AddCommand(cmd)
}
