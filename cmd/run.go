package cmd

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"folio/models"
	"folio/models/tokenizer"
	"folio/runner"
)

// modelFlags are the load options shared by run and the dev probes.
type modelFlags struct{ opt runner.LoadOptions }

func (m *modelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&m.opt.NumCtx, "num-ctx", 0, "context size in tokens (default min(4096, the model's))")
	f.IntVar(&m.opt.NumBatch, "num-batch", 0, "tokens per forward pass (default 512)")
	f.IntVar(&m.opt.BlockSize, "block-size", 0, "tokens per K/V cache block (default 16)")
	f.StringVar(&m.opt.KVType, "kv-type", "f16", "K/V cache type: f16 or f32")
	f.IntVar(&m.opt.Threads, "threads", 0, "CPU threads (default all)")
}

// load finds MODEL (a path, NAME.gguf in FOLIO_MODELS_PATH, or a catalog
// name) and loads it.
func (m *modelFlags) load(name string) (*runner.Model, error) {
	path, err := models.Locate(name)
	if err != nil {
		return nil, err
	}
	return runner.Load(path, m.opt)
}

func init() {
	var (
		mf      modelFlags
		opt     = runner.DefaultSampleOptions()
		predict int
		verbose bool
	)
	cmd := &cobra.Command{
		Use:   "run MODEL [PROMPT]",
		Short: "Generate text from a prompt",
		Long: "run loads MODEL in this process and streams the text it generates after PROMPT\n" +
			"(- reads the prompt from stdin; no prompt starts from BOS alone). MODEL is a\n" +
			"path to a .gguf file, NAME for NAME.gguf in a folder of FOLIO_MODELS_PATH, or\n" +
			"the catalog name stories260k (put stories260K.gguf from Hugging Face's\n" +
			"ggml-org/models, tinyllamas/, into a folder of FOLIO_MODELS_PATH).\n" +
			"The prompt is raw text: chat templates come with the server.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt := ""
			if len(args) == 2 {
				prompt = args[1]
			}
			if prompt == "-" {
				data, err := readAll(bufio.NewReader(os.Stdin))
				if err != nil {
					return err
				}
				prompt = data
			}
			m, err := mf.load(args[0])
			if err != nil {
				return err
			}
			defer m.Close()
			var ids []int32
			if prompt != "" {
				ids = m.Tok.Encode(prompt, tokenizer.EncodeOptions{AddSpecial: true})
			}
			out := bufio.NewWriter(cmd.OutOrStdout())
			st, err := m.Generate(cmd.Context(), ids, runner.GenerateOptions{Sample: opt, NumPredict: predict},
				func(text string) error {
					if _, err := out.WriteString(text); err != nil {
						return err
					}
					return out.Flush()
				})
			fmt.Fprintln(out)
			out.Flush()
			if err != nil {
				return err
			}
			if verbose {
				rate := func(n int, d float64) string {
					return fmt.Sprintf("%d tokens, %.2f tokens/s", n, float64(n)/max(d, 1e-9))
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "prompt eval: %s\neval:        %s\ndone:        %s\n",
					rate(st.PromptTokens, st.PromptDuration.Seconds()), rate(st.EvalTokens, st.EvalDuration.Seconds()), st.DoneReason)
			}
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.Float32Var(&opt.Temperature, "temperature", opt.Temperature, "sampling temperature; 0 is greedy")
	f.IntVar(&opt.TopK, "top-k", opt.TopK, "keep the k most likely tokens (0: all)")
	f.Float32Var(&opt.TopP, "top-p", opt.TopP, "keep the most likely tokens up to this probability (1: all)")
	f.Float32Var(&opt.MinP, "min-p", opt.MinP, "drop tokens less likely than min-p × the most likely")
	f.Float32Var(&opt.RepeatPenalty, "repeat-penalty", opt.RepeatPenalty, "penalty for recent tokens (1: off)")
	f.IntVar(&opt.RepeatLastN, "repeat-last-n", opt.RepeatLastN, "how many recent tokens the penalties look at (-1: all)")
	f.Int64Var(&opt.Seed, "seed", opt.Seed, "random seed (-1: random)")
	f.IntVar(&predict, "num-predict", -1, "tokens to generate at most (-1: until the model stops or the context is full)")
	f.BoolVar(&verbose, "verbose", false, "print token counts and speeds to stderr")
	rootCmd.AddCommand(cmd)
}

func readAll(r *bufio.Reader) (string, error) {
	var b strings.Builder
	_, err := r.WriteTo(&b)
	return b.String(), err
}
