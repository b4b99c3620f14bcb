// Command soak holds an in-process folio server on loopback under load:
// concurrent streaming clients on /api/generate and /api/chat (greedy,
// seeded prompts of varied lengths, many sharing a prefix), with
// cancellations, disconnects mid-stream, prompts longer than num_ctx
// (truncated, and refused with truncate:false), malformed requests and
// model unloads in between. At quiet points (all
// clients paused) and at the end it checks that the block pool is back to
// its full free count, that goroutines are back to their baseline and that
// the heap did not grow, and it compares every completed request's output
// with a solo run of the same prompt.
//
//	go run ./bench/soak -duration 10m -clients 64
//
// It prints the figures and exits with status 1 when a check fails.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	var cfg Config
	flag.DurationVar(&cfg.Duration, "duration", time.Minute, "how long the clients run")
	flag.IntVar(&cfg.Clients, "clients", 64, "concurrent clients")
	flag.IntVar(&cfg.Epochs, "epochs", 0, "quiet points (leak checks, then an unload); 0: one per 30 s, at least 2")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seeds the model, the prompts and every client's choices")
	flag.IntVar(&cfg.NumCtx, "num-ctx", 256, "the model's context (prompts are up to ~200 tokens)")
	flag.IntVar(&cfg.KVTokens, "kv-tokens", 4096, "tokens the K/V pool holds (fewer: more preemption)")
	flag.IntVar(&cfg.Prompts, "prompts", 48, "distinct prompts")
	flag.StringVar(&cfg.Preset, "preset", "tiny", "the synthetic model's shape: tiny (2 layers) or smollm-135m (30 layers, 49,152 tokens)")
	flag.Parse()
	cfg.Progress = os.Stderr
	rep, err := Run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	rep.Print(os.Stdout)
	if fails := rep.Failures(); len(fails) > 0 {
		fmt.Println("\nFAILED:")
		for _, f := range fails {
			fmt.Println("  -", f)
		}
		os.Exit(1)
	}
	fmt.Println("\nPASS")
}
