package cmd

import (
	"github.com/spf13/cobra"

	"folio/gpu/cuda"
)

func newPreflightCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "preflight",
		Short: "Check, step by step, what folio needs of the GPU; stop at the first failure",
		Long: "preflight checks what folio needs of the NVIDIA GPU in about 30 seconds, one step at a\n" +
			"time, and exits non-zero at the first step that fails, naming it: glibc and the libraries\n" +
			"mapped into the process; the driver (every path dlopen was given and its error), its\n" +
			"version and devices; NVRTC; a compile of the kernels (its time and NVRTC's whole log,\n" +
			"stored in the kernel cache for the commands that follow); the module and each kernel's\n" +
			"registers, local and shared memory and most threads a block against the threads folio\n" +
			"launches it with; one tiny synchronized launch of every kernel; cuBLAS and a 16×16 SGEMM\n" +
			"against the CPU; a two-node CUDA graph. Each line is written before the work it names.\n" +
			"Without a driver it says so, with every path it tried, and exits with status 1.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cuda.Preflight(cmd.OutOrStdout(), cudaOptions())
		},
	}
}
