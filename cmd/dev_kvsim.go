package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"folio/paged/kvsim"
)

func newKVSimCmd() *cobra.Command {
	var (
		traces, budget, png string
		seed                uint64
		asJSON              bool
		sliding             int
	)
	cmd := &cobra.Command{
		Use:   "kvsim",
		Short: "Replay request traces through KV-cache allocation policies",
		Long: "kvsim replays request traces through three ways of allocating the KV cache, with no\n" +
			"model: static (every sequence reserves the whole context up front), doubling (a\n" +
			"contiguous buffer per sequence that moves to one twice as large when full) and paged\n" +
			"(blocks of 8, 16 or 32 tokens through folio's own allocator, package paged), each with\n" +
			"every request sampled n = 1, 2, 4 and 8 times. It reports the memory waste, the most\n" +
			"sequences resident at once in the budget, and the blocks parallel sampling holds\n" +
			"against n independent copies.\n\n" +
			"Traces (--trace, comma-separated):\n" +
			"  chat        2,000 ShareGPT-like requests: prompt ~ lognormal(4.5, 1.0) tokens\n" +
			"              (median 90, mean 148), answer ~ lognormal(5.5, 0.8) (median 245,\n" +
			"              mean 337), 2,048-token context, Poisson arrivals at 100/s\n" +
			"  extraction  200 long-document requests: prompts uniform in 4,096-16,384 tokens,\n" +
			"              answers in 50-300, 16,896-token context, Poisson arrivals at 10/s\n" +
			"  FILE        rows of: arrival_seconds prompt_len output_len\n\n" +
			"Tokens are 128 KiB of K/V each (a Llama-3-8B-class model at F16); a decode step\n" +
			"takes 20 ms of trace time. Static and doubling rows count 16-token units as blocks.\n\n" +
			"--sliding N replays instead one request of N tokens under the paged-swa policy (a\n" +
			"full-attention and a sliding-window layer group, each its own pool and block table) for\n" +
			"Gemma 3 1B and 4B, and reports the K/V it holds against a full-attention cache.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if sliding > 0 {
				rows, err := kvsim.RunSlidingAll(sliding)
				if err != nil {
					return err
				}
				if asJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(rows)
				}
				return kvsim.WriteSlidingTable(cmd.OutOrStdout(), rows)
			}
			cfg := kvsim.DefaultConfig
			var err error
			if cfg.Budget, err = parseBytes(budget); err != nil {
				return err
			}
			var ts []kvsim.Trace
			for _, name := range strings.Split(traces, ",") {
				t, err := loadTrace(strings.TrimSpace(name), seed)
				if err != nil {
					return err
				}
				ts = append(ts, t)
			}
			rows, err := kvsim.RunAll(ts, cfg)
			if err != nil {
				return err
			}
			if png != "" {
				if err := writePNG(png, func(w io.Writer) error { return kvsim.WriteChart(w, rows) }); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			return kvsim.WriteTable(out, rows)
		},
	}
	f := cmd.Flags()
	f.StringVar(&traces, "trace", "chat,extraction", "traces to replay: chat, extraction or a FILE, comma-separated")
	f.Uint64Var(&seed, "seed", 1, "seed of the built-in traces")
	f.StringVar(&budget, "budget", "24GiB", "KV cache memory in bytes (suffixes KiB MiB GiB TiB, or KB MB GB TB)")
	f.StringVar(&png, "png", "", "also draw the results into this PNG file")
	f.BoolVar(&asJSON, "json", false, "print the rows as JSON")
	f.IntVar(&sliding, "sliding", 0, "replay one context of this many tokens under paged-swa (Gemma 3 shapes) instead")
	return cmd
}

func loadTrace(name string, seed uint64) (kvsim.Trace, error) {
	if t, ok := kvsim.BuiltIn(name, seed); ok {
		return t, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return kvsim.Trace{}, fmt.Errorf("kvsim: trace %q is neither chat, extraction nor a readable file: %w", name, err)
	}
	defer f.Close()
	return kvsim.ReadTrace(f, name)
}

// writePNG writes the chart that draw makes to path.
func writePNG(path string, draw func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := draw(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// parseBytes reads a size such as 24GiB, 8GB or 1048576.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		scale  int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	num, scale := strings.TrimSpace(s), int64(1)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			num, scale = strings.TrimSpace(strings.TrimSuffix(num, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v*float64(scale) > 1<<62 {
		return 0, fmt.Errorf("kvsim: budget %q is not a size in bytes (e.g. 24GiB)", s)
	}
	return int64(v * float64(scale)), nil
}
