package cmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"folio/gpu/cuda"
)

// newGPUCmd groups the NVIDIA GPU's commands.
func newGPUCmd() *cobra.Command {
	g := &cobra.Command{
		Use:   "gpu",
		Short: "The NVIDIA GPU: its devices, and a check of folio's kernels on it",
		Long: "folio runs on an NVIDIA GPU when the driver (libcuda.so.1) and the CUDA toolkit's\n" +
			"NVRTC load at run time; FOLIO_GPU=cpu|cuda|auto chooses (auto, the default, uses the\n" +
			"GPU when it can and says, with each load, why not otherwise).",
	}
	g.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "List the GPUs: name, memory, compute capability, driver",
		Long: "info lists the GPUs the NVIDIA driver sees. Without a driver it says why and\n" +
			"exits with status 0: folio then computes on the CPU.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printGPUInfo(cmd.OutOrStdout())
		},
	}, newPreflightCmd(), newSelftestCmd())
	return g
}

func printGPUInfo(w io.Writer) error {
	info, err := cuda.Probe()
	if errors.Is(err, cuda.ErrNoDriver) {
		fmt.Fprintf(w, "no NVIDIA GPU: %v\nfolio computes on the CPU.\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "driver: CUDA %s (%d)\n", info.DriverString(), info.DriverVersion)
	if v, err := cuda.CompilerVersion(cudaOptions().Toolkit); err != nil {
		fmt.Fprintf(w, "nvrtc:  %v\n", err)
	} else {
		fmt.Fprintf(w, "nvrtc:  %s\n", v)
	}
	if len(info.Devices) == 0 {
		fmt.Fprintln(w, "no devices")
	}
	for _, d := range info.Devices {
		fmt.Fprintf(w, "cuda:%d  %s  compute %d.%d  %d SMs  memory %.1f GiB (%.1f GiB free)",
			d.Ordinal, d.Name, d.Major, d.Minor, d.SMs, float64(d.TotalBytes)/(1<<30), float64(d.FreeBytes)/(1<<30))
		if d.MemBandwidth > 0 {
			fmt.Fprintf(w, "  %.2f TB/s", d.MemBandwidth/1e12)
		}
		fmt.Fprintln(w)
	}
	return nil
}
