package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"folio/internal/loadgen"
	"folio/runner"
)

func newBenchMultiturnCmd() *cobra.Command {
	var (
		mf     modelFlags
		model  string
		asJSON bool
		cfg    = loadgen.TurnsConfig{History: 2000, Answer: 16, FollowUp: 20, Seed: 1}
	)
	multiturn := &cobra.Command{
		Use:   "multiturn --model FILE",
		Short: "Time the first token of a conversation's first and second turns",
		Long: "multiturn sends a --history-token prompt (random tokens), takes a greedy answer of\n" +
			"--answer tokens, then sends the prompt, the answer and a --follow-up-token message.\n" +
			"The second turn's prompt begins with the first's, so the prefix cache should spare\n" +
			"all but its last tokens. TTFT is the time from submission to the first token.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return fmt.Errorf("bench multiturn: no model; pass --model FILE")
			}
			e, done, err := benchEngine(&mf, model, runner.EngineOptions{})
			if err != nil {
				return err
			}
			defer done()
			rep, err := loadgen.Multiturn(cmd.Context(), e, cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "turn 1: %d prompt tokens, %d computed: TTFT %.0f ms\n", cfg.History, rep.Turn1Computed, rep.Turn1TTFT)
			fmt.Fprintf(w, "turn 2: %d prompt tokens, %d computed, %d cached: TTFT %.0f ms\n", rep.Turn2Prompt, rep.Turn2Computed, rep.Turn2Cached, rep.Turn2TTFT)
			fmt.Fprintf(w, "turn 1 / turn 2: %.1fx\n", rep.Ratio)
			return nil
		},
	}
	mf.register(multiturn)
	f := multiturn.Flags()
	f.StringVar(&model, "model", "", "GGUF file")
	f.IntVar(&cfg.History, "history", cfg.History, "tokens of the first turn's prompt")
	f.IntVar(&cfg.Answer, "answer", cfg.Answer, "tokens of each answer")
	f.IntVar(&cfg.FollowUp, "follow-up", cfg.FollowUp, "tokens of the second user message")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the prompt tokens")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return multiturn
}

func newBenchExtractionCmd() *cobra.Command {
	var (
		emf    modelFlags
		emodel string
		ejson  bool
		ecfg   = loadgen.ExtractionConfig{DocTokens: 8000, Questions: 20, QuestionTokens: 20, Answer: 16, Concurrency: 4, Seed: 1}
	)
	extraction := &cobra.Command{
		Use:   "extraction --model FILE",
		Short: "Time one document asked many questions, with and without the prefix cache",
		Long: "extraction sends one --doc-tokens document (random tokens) with --questions\n" +
			"different questions appended, each a separate request, --concurrency at a time,\n" +
			"answers of --answer tokens (greedy). It runs three passes, each on a new engine:\n" +
			"with the prefix cache (total_s); with it, the first question sent alone before\n" +
			"the others (warm_total_s); and without it (no_cache_total_s). --num-ctx must hold\n" +
			"the document, a question and an answer; when they need more than run's default\n" +
			"(4096), it defaults to what they need, rounded up to 256.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if emodel == "" {
				return fmt.Errorf("bench extraction: no model; pass --model FILE")
			}
			fitNumCtx(cmd, &emf, ecfg.DocTokens+ecfg.QuestionTokens+ecfg.Answer)
			m, err := emf.load(emodel)
			if err != nil {
				return err
			}
			defer m.Close()
			rep, err := loadgen.Extraction(cmd.Context(), m, ecfg)
			if err != nil {
				return err
			}
			if ejson {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			for _, r := range []struct {
				name string
				run  loadgen.ExtractionRun
			}{{"prefix cache", rep.Cache}, {"cache, first alone", rep.Warm}, {"no prefix cache", rep.NoCache}} {
				fmt.Fprintf(w, "%-19s %7.2f s: %d prompt tokens computed, %d cached (%d in the first %d requests), peak %d blocks\n",
					r.name+":", r.run.TotalS, r.run.Computed, r.run.Cached, r.run.FirstWaveCached, ecfg.Concurrency, r.run.PeakBlocks)
			}
			fmt.Fprintf(w, "speedup: %.1fx (%.1fx with the first question alone)\n", rep.Speedup, rep.WarmSpeedup)
			return nil
		},
	}
	emf.register(extraction)
	f := extraction.Flags()
	f.StringVar(&emodel, "model", "", "GGUF file")
	f.IntVar(&ecfg.DocTokens, "doc-tokens", ecfg.DocTokens, "tokens of the document")
	f.IntVar(&ecfg.Questions, "questions", ecfg.Questions, "questions, one request each")
	f.IntVar(&ecfg.QuestionTokens, "question-tokens", ecfg.QuestionTokens, "tokens of each question")
	f.IntVar(&ecfg.Answer, "answer", ecfg.Answer, "tokens of each answer (num_predict)")
	f.IntVarP(&ecfg.Concurrency, "concurrency", "c", ecfg.Concurrency, "requests in flight at once")
	f.Uint64Var(&ecfg.Seed, "seed", ecfg.Seed, "seed of the document and questions")
	f.BoolVar(&ejson, "json", false, "print the report as JSON")
	return extraction
}

// fitNumCtx makes mf's num_ctx hold need tokens, rounded up to 256, when
// they are more than run's default and --num-ctx was not given.
func fitNumCtx(cmd *cobra.Command, mf *modelFlags, need int) {
	if !cmd.Flags().Changed("num-ctx") && need > runner.DefaultNumCtx {
		mf.opt.NumCtx = (need + 255) &^ 255
	}
}
