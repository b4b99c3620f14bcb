package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/ollama/ollama/api"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"folio/runner"
)

// modelFlags are the load options shared by run and the dev probes.
type modelFlags struct{ opt runner.LoadOptions }

func (m *modelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&m.opt.NumCtx, "num-ctx", 0, "context size in tokens (default min(4096, the model's))")
	f.IntVar(&m.opt.NumBatch, "num-batch", 0, "tokens per forward pass (default 512)")
	f.IntVar(&m.opt.BlockSize, "block-size", 0, "tokens per K/V cache block (default 16)")
	f.StringVar(&m.opt.KVType, "kv-type", "f16", "K/V cache type: f16, q8_0 (half the memory) or f32")
	f.Int64Var(&m.opt.KVMemory, "kv-memory", 0, "bytes of K/V cache (default: sized by num_ctx and memory, grown as needed; FOLIO_KV_MEMORY for serve)")
	f.IntVar(&m.opt.Threads, "threads", 0, "CPU threads (default all)")
}

// load finds MODEL (a path, NAME.gguf in FOLIO_MODELS_PATH, or a catalog
// name) and loads it.
func (m *modelFlags) load(name string) (*runner.Model, error) {
	path, err := locate(name)
	if err != nil {
		return nil, err
	}
	return loadModel(path, m.opt)
}

// localOnlyFlags shape a model loaded in this process; a server loads
// models its own way, so setting one of them runs the model here.
var localOnlyFlags = []string{"num-batch", "block-size", "kv-type", "kv-memory", "threads"}

func newRunCmd() *cobra.Command {
	var (
		mf       modelFlags
		opt      = runner.DefaultSampleOptions()
		predict  int
		verbose  bool
		insecure bool
	)
	cmd := &cobra.Command{
		Use:   "run MODEL [PROMPT]",
		Short: "Chat with a model, or generate text from a prompt",
		Long: "run talks to the server at FOLIO_HOST (default 127.0.0.1:11434) when one answers,\n" +
			"and otherwise loads MODEL in this process.\n\n" +
			"With PROMPT (- reads stdin), or with stdin not a terminal (piped stdin is the\n" +
			"prompt), run streams the model's answer to the prompt, put through the model's\n" +
			"template as ollama run does (a model without one gets the prompt as it is; an\n" +
			"empty prompt starts from BOS alone, with no template). Otherwise it\n" +
			"starts a chat: type a message, \"\"\" to begin and end a multi-line one, /? for\n" +
			"help, Ctrl-C to stop a reply, Ctrl-D or /bye to leave.\n\n" +
			"MODEL is a path to a .gguf file, NAME for NAME.gguf in a folder of\n" +
			"FOLIO_MODELS_PATH, or the catalog name stories260k (put stories260K.gguf from\n" +
			"Hugging Face's ggml-org/models, tinyllamas/, into a folder of FOLIO_MODELS_PATH).\n" +
			"--num-batch, --block-size, --kv-type, --kv-memory and --threads shape a model loaded here:\n" +
			"setting one runs the model in this process even when a server answers.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			prompt, oneShot, err := runPrompt(cmd.InOrStdin(), args[1:])
			if err != nil {
				return err
			}
			options := map[string]any{}
			set := func(flag, key string, v any) {
				if cmd.Flags().Changed(flag) {
					options[key] = v
				}
			}
			set("temperature", "temperature", opt.Temperature)
			set("top-k", "top_k", opt.TopK)
			set("top-p", "top_p", opt.TopP)
			set("min-p", "min_p", opt.MinP)
			set("repeat-penalty", "repeat_penalty", opt.RepeatPenalty)
			set("repeat-last-n", "repeat_last_n", opt.RepeatLastN)
			set("seed", "seed", opt.Seed)
			set("num-predict", "num_predict", predict)
			local := false
			for _, f := range localOnlyFlags {
				local = local || cmd.Flags().Changed(f)
			}
			ctx := cmd.Context()
			client, ls, err := runClient(ctx, name, mf.opt, local, insecure)
			if err != nil {
				return err
			}
			if ls != nil {
				defer ls.Close()
			} else {
				set("num-ctx", "num_ctx", mf.opt.NumCtx) // a server's models are loaded already
			}
			if oneShot {
				var stats io.Writer
				if verbose {
					stats = cmd.ErrOrStderr()
				}
				return generateOnce(ctx, client, name, prompt, options, cmd.OutOrStdout(), stats)
			}
			return chatInTerminal(ctx, &repl{client: client, model: name, opts: options, verbose: verbose},
				cmd.InOrStdin().(*os.File), cmd.OutOrStdout())
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
	f.BoolVar(&insecure, "insecure", false, "pull a missing model over plain HTTP (a local registry)")
	f.BoolVar(&verbose, "verbose", false, "print token counts and speeds (one-shot: to stderr)")
	return cmd
}

// runPrompt decides between one prompt and a chat: a PROMPT argument (-
// reads stdin) or stdin that is not a terminal is one prompt.
func runPrompt(stdin io.Reader, args []string) (prompt string, oneShot bool, err error) {
	if len(args) == 1 && args[0] != "-" {
		return args[0], true, nil
	}
	if f, ok := stdin.(*os.File); ok && len(args) == 0 && term.IsTerminal(int(f.Fd())) {
		return "", false, nil
	}
	prompt, err = readAll(stdin)
	return prompt, true, err
}

// runClient is a client for the server at FOLIO_HOST when one answers and
// local is false, else for a server of this process that holds name
// (returned too, to be closed).
func runClient(ctx context.Context, name string, opt runner.LoadOptions, local, insecure bool) (*api.Client, *localServer, error) {
	if !local {
		if c := hostClient(); serverAnswers(ctx, c) {
			return c, nil, pullMissing(ctx, c, name, insecure, os.Stderr) // installer hook (pull.go): pull what the server lacks
		}
	}
	if err := pullMissing(ctx, nil, name, insecure, os.Stderr); err != nil { // installer hook (pull.go)
		return nil, nil, err
	}
	return startLocal(name, opt)
}

// generateOnce streams the answer to prompt to out, and with
// stats != nil the token counts and speeds to it. An empty prompt starts
// from the model's BOS token.
func generateOnce(ctx context.Context, c *api.Client, model, prompt string, options map[string]any, out, stats io.Writer) error {
	// The server applies the model's template, as ollama run does (a model
	// without one gets the prompt as it is); from BOS there is no prompt.
	req := &api.GenerateRequest{Model: model, Prompt: prompt, Raw: prompt == "", Options: options}
	if prompt == "" {
		bos, err := bosToken(ctx, c, model)
		if err != nil {
			return err
		}
		req.Context = []int{bos}
	}
	w := bufio.NewWriter(out)
	var last api.GenerateResponse
	err := c.Generate(ctx, req, func(r api.GenerateResponse) error {
		last = r
		if _, err := w.WriteString(r.Response); err != nil {
			return err
		}
		return w.Flush()
	})
	fmt.Fprintln(w)
	w.Flush()
	if err != nil {
		return serverErr(err)
	}
	if stats != nil {
		m := last.Metrics
		rate := func(n int, d float64) string {
			return fmt.Sprintf("%d tokens, %.2f tokens/s", n, float64(n)/max(d, 1e-9))
		}
		fmt.Fprintf(stats, "prompt eval: %s\neval:        %s\ndone:        %s\n",
			rate(m.PromptEvalCount, m.PromptEvalDuration.Seconds()), rate(m.EvalCount, m.EvalDuration.Seconds()), last.DoneReason)
	}
	return nil
}

// bosToken is the id of model's BOS token, from its metadata.
func bosToken(ctx context.Context, c *api.Client, model string) (int, error) {
	info, err := c.Show(ctx, &api.ShowRequest{Model: model})
	if err != nil {
		return 0, serverErr(err)
	}
	if id, ok := info.ModelInfo["tokenizer.ggml.bos_token_id"].(float64); ok {
		return int(id), nil
	}
	return 0, fmt.Errorf("%s has no BOS token to start from: give a prompt", model)
}

func readAll(r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	return string(b), err
}
