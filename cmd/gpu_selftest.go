package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"folio/gpu"
	"folio/gpu/conformance"
	"folio/gpu/cpu"
	"folio/gpu/cuda"
	"folio/gpu/vulkan"
	"folio/models/gguf"
	"folio/models/synth"
)

func newSelftestCmd() *cobra.Command {
	var (
		seed    uint64
		tokens  int
		model   string
		noCache bool
		vk      bool
	)
	cmd := &cobra.Command{
		Use:   "selftest",
		Short: "Check every CUDA (or Vulkan) kernel against the CPU backend, then a greedy generation",
		Long: "selftest runs every op of the CUDA backend (--vulkan: of the Vulkan device\n" +
			"FOLIO_VULKAN_DEVICE names, else the first GPU) and of the CPU backend on the same\n" +
			"random inputs of awkward sizes and prints the normalized mean squared error of\n" +
			"each (as llama.cpp's test-backend-ops does) against its tolerance. Then it\n" +
			"decodes greedily on synthetic models (or --model) on both backends, the CPU's\n" +
			"tokens fed to both, and compares the logits and the chosen tokens. It exits\n" +
			"non-zero on any failure, or when there is no GPU.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if vk {
				return vulkanSelftest(cmd.OutOrStdout(), seed, tokens, model)
			}
			return gpuSelftest(cmd.OutOrStdout(), seed, tokens, model, noCache)
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&seed, "seed", 1, "seed of the random inputs")
	f.IntVar(&tokens, "tokens", 16, "greedy tokens of the generation check")
	f.StringVar(&model, "model", "", "GGUF file for the generation check (default: synthetic llama Q4_K and qwen3 Q8_0)")
	f.BoolVar(&noCache, "no-cache", false, "compile the kernels even when the disk cache holds them")
	f.BoolVar(&vk, "vulkan", false, "check the Vulkan backend instead of CUDA's")
	return cmd
}

func gpuSelftest(w io.Writer, seed uint64, tokens int, model string, noCache bool) error {
	dev, err := cuda.Open(withCUDA(cuda.Options{NoCache: noCache, Sync: true})) // a fault names its kernel
	if err != nil {
		return fmt.Errorf("gpu selftest: %w", err)
	}
	defer dev.Close()
	ref := cpu.NewReference(0)
	defer ref.Close()
	d := dev.Device()
	fmt.Fprintf(w, "device: %s (compute %d.%d), kernels %s\n", d.Name, d.Major, d.Minor,
		map[bool]string{true: "from the cache", false: "compiled now"}[dev.Cached])

	fmt.Fprintf(w, "prefill matmuls: %s\n", dev.BLAS())
	checks := conformance.CheckOps(ref, dev, seed)
	if dev.SetBLAS(true) { // the tiled kernel too, when cuBLAS took the prefill cases
		dev.SetBLAS(false)
		for _, c := range conformance.CheckMatMuls(ref, dev, seed+1) {
			c.Op += " (tiled)"
			checks = append(checks, c)
		}
	}
	dev.SetBLAS(true)
	// The first model's generation again with decode steps replayed as CUDA graphs.
	graphs := func(models []string) (int, error) {
		gdev, err := cuda.Open(withCUDA(cuda.Options{Graphs: true}))
		if err != nil {
			return 0, fmt.Errorf("gpu selftest: %w", err)
		}
		g, err := conformance.CheckGeneration(models[0], ref, gdev, tokens)
		launches := gdev.GraphLaunches()
		gdev.Close()
		if err != nil {
			return 0, fmt.Errorf("gpu selftest: generation with graphs: %w", err)
		}
		verdict, failed := "pass", 0
		if !g.Pass() || launches == 0 && tokens > 4 {
			verdict, failed = "FAIL", 1
		}
		fmt.Fprintf(w, "generation %s with CUDA graphs (%d steps as graphs): worst logits NMSE %.3g: %s\n",
			filepath.Base(models[0]), launches, g.Worst, verdict)
		return failed, nil
	}
	return selftestRun(w, ref, dev, "cuda", checks, model, seed, tokens, graphs)
}

// vulkanSelftest is selftest on the Vulkan device: every op, then the
// generations.
func vulkanSelftest(w io.Writer, seed uint64, tokens int, model string) error {
	dev, err := vulkan.Open(vulkanOptions())
	if err != nil {
		return fmt.Errorf("gpu selftest: %w", err)
	}
	defer dev.Close()
	ref := cpu.NewReference(0)
	defer ref.Close()
	d := dev.Device()
	fmt.Fprintf(w, "device: %s (%s, Vulkan %s, %s)\n", d.Name, d.Type, d.API, d.Driver)
	return selftestRun(w, ref, dev, "vulkan", conformance.CheckOps(ref, dev, seed), model, seed, tokens, nil)
}

// selftestRun prints the op checks, then runs the greedy generations of
// --model (else synthetic ones) on dev, named name, against ref, and one
// more on the first model when more is set (CUDA's graphs: it returns 1
// when that failed); an error says how many of each failed.
func selftestRun(w io.Writer, ref, dev gpu.Backend, name string, checks []conformance.OpCheck, model string, seed uint64, tokens int,
	more func(models []string) (int, error)) error {
	failed := printOps(w, checks)
	models, cleanup, err := selftestModels(model, seed)
	if err != nil {
		return err
	}
	defer cleanup()
	genFailed, gens := checkGenerations(w, ref, dev, name, models, tokens), len(models)
	if more != nil {
		f, err := more(models)
		if err != nil {
			return err
		}
		genFailed, gens = genFailed+f, gens+1
	}
	if failed > 0 || genFailed > 0 {
		return fmt.Errorf("gpu selftest: %d of %d ops and %d of %d generations fail", failed, len(checks), genFailed, gens)
	}
	fmt.Fprintln(w, "selftest: pass")
	return nil
}

// printOps prints the op checks and returns how many failed.
func printOps(w io.Writer, checks []conformance.OpCheck) (failed int) {
	fmt.Fprintf(w, "%-60s %12s %10s  %s\n", "op", "NMSE", "tolerance", "result")
	for _, c := range checks {
		verdict := "pass"
		if !c.Pass() {
			verdict, failed = "FAIL "+c.Err, failed+1
		}
		fmt.Fprintf(w, "%-60s %12.3g %10.0e  %s\n", c.Op, c.NMSE, c.Tol, verdict)
	}
	fmt.Fprintf(w, "ops: %d of %d pass\n", len(checks)-failed, len(checks))
	return failed
}

// selftestModels is model, or synthetic llama Q4_K and qwen3 Q8_0 files
// of seed in a folder cleanup removes.
func selftestModels(model string, seed uint64) (models []string, cleanup func(), err error) {
	if model != "" {
		return []string{model}, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "folio-selftest")
	if err != nil {
		return nil, nil, err
	}
	for _, m := range []struct {
		arch string
		typ  gguf.TensorType
	}{{"llama", gguf.TypeQ4_K}, {"qwen3", gguf.TypeQ8_0}} {
		path := filepath.Join(dir, fmt.Sprintf("%s-%v.gguf", m.arch, m.typ))
		if err := synth.WriteTiny(path, m.arch, m.typ, seed); err != nil {
			os.RemoveAll(dir)
			return nil, nil, err
		}
		models = append(models, path)
	}
	return models, func() { os.RemoveAll(dir) }, nil
}

// checkGenerations runs the greedy generation of each model on ref and
// dev (named name), prints each and returns how many failed.
func checkGenerations(w io.Writer, ref, dev gpu.Backend, name string, models []string, tokens int) (failed int) {
	for _, path := range models {
		g, err := conformance.CheckGeneration(path, ref, dev, tokens)
		if err != nil {
			fmt.Fprintf(w, "generation %s: FAIL %v\n", filepath.Base(path), err)
			failed++
			continue
		}
		verdict := "pass"
		if !g.Pass() {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(w, "generation %s: %d tokens, %d differ (%d beyond near-ties), worst logits NMSE %.3g (tolerance %.0e): %s\n",
			filepath.Base(path), g.Steps, g.Differ, g.Mismatches, g.Worst, conformance.GenTolerance, verdict)
		fmt.Fprintf(w, "  cpu:  %v\n  %-5s %v\n", g.Ref, name+":", g.Dev)
	}
	return failed
}
