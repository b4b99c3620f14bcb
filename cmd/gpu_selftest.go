package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/gpu/cuda"
	"folio/models/gguf"
	"folio/models/synth"
)

func newSelftestCmd() *cobra.Command {
	var (
		seed    uint64
		tokens  int
		model   string
		noCache bool
	)
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Check every CUDA kernel against the CPU backend, then a greedy generation",
		Long: "selftest runs every op of the CUDA backend and of the CPU backend on the same\n" +
			"random inputs of awkward sizes and prints the normalized mean squared error of\n" +
			"each (as llama.cpp's test-backend-ops does) against its tolerance. Then it\n" +
			"decodes greedily on synthetic models (or --model) on both backends, the CPU's\n" +
			"tokens fed to both, and compares the logits and the chosen tokens. It exits\n" +
			"non-zero on any failure, or when there is no GPU.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return gpuSelftest(cmd.OutOrStdout(), seed, tokens, model, noCache)
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&seed, "seed", 1, "seed of the random inputs")
	f.IntVar(&tokens, "tokens", 16, "greedy tokens of the generation check")
	f.StringVar(&model, "model", "", "GGUF file for the generation check (default: synthetic llama Q4_K and qwen3 Q8_0)")
	f.BoolVar(&noCache, "no-cache", false, "compile the kernels even when the disk cache holds them")
	return cmd
}

func gpuSelftest(w io.Writer, seed uint64, tokens int, model string, noCache bool) error {
	dev, err := cuda.Open(withCUDA(cuda.Options{NoCache: noCache, Sync: true})) // a fault names its kernel
	if err != nil {
		return fmt.Errorf("gpu selftest: %w", err)
	}
	defer dev.Close()
	ref := cpu.New(0)
	defer ref.Close()
	d := dev.Device()
	fmt.Fprintf(w, "device: %s (compute %d.%d), kernels %s\n", d.Name, d.Major, d.Minor,
		map[bool]string{true: "from the cache", false: "compiled now"}[dev.Cached])

	fmt.Fprintf(w, "prefill matmuls: %s\n", dev.BLAS())
	failed := 0
	checks := conformance.CheckOps(ref, dev, seed)
	if dev.SetBLAS(true) { // the tiled kernel too, when cuBLAS took the prefill cases
		dev.SetBLAS(false)
		for _, c := range conformance.CheckMatMuls(ref, dev, seed+1) {
			c.Op += " (tiled)"
			checks = append(checks, c)
		}
	}
	dev.SetBLAS(true)
	fmt.Fprintf(w, "%-60s %12s %10s  %s\n", "op", "NMSE", "tolerance", "result")
	for _, c := range checks {
		verdict := "pass"
		if !c.Pass() {
			verdict, failed = "FAIL "+c.Err, failed+1
		}
		fmt.Fprintf(w, "%-60s %12.3g %10.0e  %s\n", c.Op, c.NMSE, c.Tol, verdict)
	}
	fmt.Fprintf(w, "ops: %d of %d pass\n", len(checks)-failed, len(checks))

	models := []string{model}
	if model == "" {
		dir, err := os.MkdirTemp("", "folio-selftest")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		models = nil
		for _, m := range []struct {
			arch string
			typ  gguf.TensorType
		}{{"llama", gguf.TypeQ4_K}, {"qwen3", gguf.TypeQ8_0}} {
			path := filepath.Join(dir, fmt.Sprintf("%s-%v.gguf", m.arch, m.typ))
			if err := synth.WriteTiny(path, m.arch, m.typ, seed); err != nil {
				return err
			}
			models = append(models, path)
		}
	}
	genFailed := 0
	for _, path := range models {
		g, err := conformance.CheckGeneration(path, ref, dev, tokens)
		if err != nil {
			return fmt.Errorf("gpu selftest: generation on %s: %w", path, err)
		}
		verdict := "pass"
		if !g.Pass() {
			verdict, genFailed = "FAIL", genFailed+1
		}
		fmt.Fprintf(w, "generation %s: %d tokens, %d differ (%d beyond near-ties), worst logits NMSE %.3g (tolerance %.0e): %s\n",
			filepath.Base(path), g.Steps, g.Differ, g.Mismatches, g.Worst, conformance.GenTolerance, verdict)
		fmt.Fprintf(w, "  cpu:  %v\n  cuda: %v\n", g.Ref, g.Dev)
	}
	// The generation again with decode steps replayed as CUDA graphs.
	gdev, err := cuda.Open(withCUDA(cuda.Options{Graphs: true}))
	if err != nil {
		return fmt.Errorf("gpu selftest: %w", err)
	}
	g, err := conformance.CheckGeneration(models[0], ref, gdev, tokens)
	launches := gdev.GraphLaunches()
	gdev.Close()
	if err != nil {
		return fmt.Errorf("gpu selftest: generation with graphs: %w", err)
	}
	verdict := "pass"
	if !g.Pass() || launches == 0 && tokens > 4 {
		verdict, genFailed = "FAIL", genFailed+1
	}
	fmt.Fprintf(w, "generation %s with CUDA graphs (%d steps as graphs): worst logits NMSE %.3g: %s\n",
		filepath.Base(models[0]), launches, g.Worst, verdict)
	gens := len(models) + 1
	if failed > 0 || genFailed > 0 {
		return fmt.Errorf("gpu selftest: %d of %d ops and %d of %d generations fail", failed, len(checks), genFailed, gens)
	}
	fmt.Fprintln(w, "selftest: pass")
	return nil
}
