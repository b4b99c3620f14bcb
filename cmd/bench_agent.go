package cmd

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"folio/internal/loadgen"
	"folio/models/gguf"
	"folio/models/tokenizer"
)

func newBenchAgentCmd() *cobra.Command {
	var (
		mf                   modelFlags
		model, tmplPath, png string
		result, reply        string
		asJSON, verbose      bool
		cfg                  = loadgen.AgentConfig{SystemTokens: 12000, Tools: 20, TaskTokens: 40, Turns: 20, Agents: 2, NoCacheEvery: 1, Seed: 1}
	)
	agent := &cobra.Command{
		Use:   "agent --model FILE",
		Short: "Time an agent loop's turns: a long system prompt with tools, tool results appended turn after turn",
		Long: "agent plays --agents coding agents on one model, taking turns (agent 1's turn 1,\n" +
			"agent 2's turn 1, agent 1's turn 2, …), one request at a time. Each sends the same\n" +
			"system prompt with --tools tool definitions, --system-tokens tokens as the chat\n" +
			"template renders them, and a task of its own; every turn after the first appends\n" +
			"the model's last reply and a tool result of --result-tokens tokens (a seeded draw\n" +
			"of words), and asks for --reply-tokens tokens (greedy). Prompts are rendered with\n" +
			"the model's chat template (or --template) and tokenized as the server does.\n\n" +
			"Three passes, each on engines of its own: with the prefix cache (its replies are\n" +
			"sent again by the other passes, so that all send the same prompts); without it,\n" +
			"every prompt computed in full (--no-cache-every K runs only turns 1, 1+K, … and\n" +
			"the turn after the restart: without a cache a turn's time does not depend on the\n" +
			"turns before it); and with the prefix cache persisted in a store (--home, default\n" +
			"a temporary folder), the engine and the store closed and opened again after\n" +
			"--restart-after turns, as a server restarts.\n\n" +
			"TTFT is the time from submission to the first token. cached_fraction is the\n" +
			"median over turns 2 and later of cached ÷ prompt tokens; shared_fraction the\n" +
			"same of the tokens the agent's previous prompt and reply give (what a cache can\n" +
			"serve at most); ttft_ratio the median TTFT without the cache ÷ with it;\n" +
			"restart_ratio the turn after the restart's TTFT computed in full ÷ restored.\n" +
			"--num-ctx defaults to what the longest turn needs.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" {
				return fmt.Errorf("bench agent: no model; pass --model FILE")
			}
			var err error
			if cfg.Result, err = loadgen.ParseRange(result); err != nil {
				return fmt.Errorf("bench agent: --result-tokens: %w", err)
			}
			if cfg.Reply, err = loadgen.ParseRange(reply); err != nil {
				return fmt.Errorf("bench agent: --reply-tokens: %w", err)
			}
			if cfg.Home == "" {
				if cfg.Home, err = os.MkdirTemp("", "folio-bench-agent-"); err != nil {
					return err
				}
				defer os.RemoveAll(cfg.Home)
			}
			if verbose {
				cfg.Progress = func(pass string, t loadgen.AgentTurn) {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: agent %d, turn %d: %d prompt tokens, %d cached, TTFT %.0f ms\n",
						pass, t.Agent, t.Turn, t.Prompt, t.Cached, t.TTFTms)
				}
			}
			script, err := agentScript(model, tmplPath, cfg)
			if err != nil {
				return err
			}
			need, err := script.NumCtx()
			if err != nil {
				return err
			}
			fitNumCtx(cmd, &mf, need)
			m, err := mf.load(model)
			if err != nil {
				return err
			}
			defer m.Close()
			rep, err := loadgen.Agent(cmd.Context(), m, script)
			if err != nil {
				return err
			}
			if png != "" {
				if err := writePNG(png, func(w io.Writer) error { return loadgen.WriteAgentChart(w, rep) }); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			printAgent(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	mf.register(agent)
	f := agent.Flags()
	f.StringVar(&model, "model", "", "GGUF file")
	f.StringVar(&tmplPath, "template", "", "Jinja chat template file (default: the model's)")
	f.IntVar(&cfg.SystemTokens, "system-tokens", cfg.SystemTokens, "tokens of the system prompt and tool definitions, rendered")
	f.IntVar(&cfg.Tools, "tools", cfg.Tools, "tool definitions")
	f.IntVar(&cfg.TaskTokens, "task-tokens", cfg.TaskTokens, "tokens of each agent's task (its first user message)")
	f.IntVar(&cfg.Turns, "turns", cfg.Turns, "turns of each agent")
	f.IntVar(&cfg.Agents, "agents", cfg.Agents, "agents taking turns on the model")
	f.StringVar(&result, "result-tokens", "300-1500", "tokens of each tool result: N or MIN-MAX (drawn uniformly)")
	f.StringVar(&reply, "reply-tokens", "16-32", "num_predict of each reply: N or MIN-MAX")
	f.IntVar(&cfg.RestartAfter, "restart-after", 0, "turns before the restart in the restart pass (default turns/2)")
	f.IntVar(&cfg.NoCacheEvery, "no-cache-every", cfg.NoCacheEvery, "run every K-th turn without the prefix cache (and the one after the restart)")
	f.StringVar(&cfg.Home, "home", "", "folder of the restart pass's prefix store (default: a temporary one, removed after)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the texts and lengths")
	f.BoolVarP(&verbose, "verbose", "v", false, "print each turn on stderr as it ends")
	f.StringVar(&png, "png", "", "also draw TTFT by turn for each pass into this PNG file")
	f.BoolVar(&asJSON, "json", false, `print the report as JSON: {"cached_fraction", "ttft_ratio", "restart_ratio", ..., "cache": {"turns": [...]}, ...}`)
	return agent
}

// agentScript draws cfg's conversations for model's tokenizer, rendered
// by the template in tmplPath or else the model's own.
func agentScript(model, tmplPath string, cfg loadgen.AgentConfig) (*loadgen.AgentScript, error) {
	path, err := locate(model)
	if err != nil {
		return nil, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tok, err := tokenizer.New(f)
	if err != nil {
		return nil, err
	}
	src := f.String("tokenizer.chat_template")
	if tmplPath != "" {
		b, err := os.ReadFile(tmplPath)
		if err != nil {
			return nil, fmt.Errorf("bench agent: --template: %w", err)
		}
		src = string(b)
	}
	if src == "" {
		return nil, fmt.Errorf("bench agent: %s has no chat template: pass --template FILE.jinja, one that renders tools (Qwen 2.5's, for one)", path)
	}
	return loadgen.NewAgentScript(tok, src, cfg)
}

func printAgent(w io.Writer, r loadgen.AgentReport) {
	fmt.Fprintf(w, "%d agents, %d turns each; system prompt and %d tools: %d tokens; num_ctx %d\n",
		r.Agents, r.Turns, r.Tools, r.SystemTokens, r.NumCtx)
	fmt.Fprintf(w, "%-6s %-5s %7s | %-21s | %-10s | %-27s\n", "agent", "turn", "prompt", "cache: cached  TTFT", "no cache", "restart: cached restored TTFT")
	for _, c := range r.Cache.Turns {
		line := fmt.Sprintf("%-6d %-5d %7d | %7d %10.0f ms | ", c.Agent, c.Turn, c.Prompt, c.Cached, c.TTFTms)
		if n := r.NoCache.Find(c.Agent, c.Turn); n != nil {
			line += fmt.Sprintf("%7.0f ms | ", n.TTFTms)
		} else {
			line += fmt.Sprintf("%10s | ", "")
		}
		if s := r.Restart.Find(c.Agent, c.Turn); s != nil {
			line += fmt.Sprintf("%7d %8d %7.0f ms", s.Cached, s.Restored, s.TTFTms)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "total:        cache %.1f s, no cache %.1f s, restart %.1f s\n", r.Cache.TotalS, r.NoCache.TotalS, r.Restart.TotalS)
	fmt.Fprintf(w, "cached:       median %.1f%% of the prompt from turn 2 (least %.1f%%; the previous prompt and reply are %.1f%%)\n",
		100*r.CachedFraction, 100*r.MinCachedFraction, 100*r.SharedFraction)
	fmt.Fprintf(w, "TTFT:         median %.0f ms with the cache, %.0f ms without: %.1fx\n", r.Cache.MedianTTFTms, r.NoCache.MedianTTFTms, r.TTFTRatio)
	fmt.Fprintf(w, "restart:      turn %d restored from the store %.1fx faster than computed in full\n", r.RestartTurn, r.RestartRatio)
}
