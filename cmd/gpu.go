package cmd

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"folio/gpu/cuda"
	"folio/gpu/vulkan"
)

// newGPUCmd groups the NVIDIA GPU's commands.
func newGPUCmd() *cobra.Command {
	g := &cobra.Command{
		Use:   "gpu",
		Short: "The GPUs: their devices, and a check of folio's kernels on them",
		Long: "folio runs on an NVIDIA GPU when the driver (libcuda.so.1) and the CUDA toolkit's\n" +
			"NVRTC load at run time, and on any GPU with a Vulkan driver (libvulkan.so.1).\n" +
			"FOLIO_GPU=cpu|cuda|vulkan|auto chooses (auto, the default, uses CUDA, else a Vulkan\n" +
			"GPU, when it can and says, with each load, why not otherwise; a Vulkan device that is\n" +
			"the CPU itself, such as Mesa's lavapipe, only when FOLIO_GPU=vulkan or\n" +
			"FOLIO_VULKAN_DEVICE names it). A GPU is checked against the CPU on its first load.",
	}
	g.AddCommand(&cobra.Command{
		Use:   "info",
		Short: "List the GPUs: name, memory, compute capability, driver; then the Vulkan devices",
		Long: "info lists the GPUs the NVIDIA driver sees, then the devices the Vulkan loader\n" +
			"sees (FOLIO_VULKAN_DEVICE picks one by index or name). Without a driver or a\n" +
			"loader it says why and exits with status 0: folio then computes on the CPU.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return printGPUInfo(cmd.OutOrStdout())
		},
	}, newPreflightCmd(), newSelftestCmd())
	return g
}

// printGPUInfo lists the CUDA devices, then the Vulkan ones.
func printGPUInfo(w io.Writer) error {
	if err := printCUDAInfo(w); err != nil {
		return err
	}
	return printVulkanInfo(w, vulkanOptions().Device)
}

func printCUDAInfo(w io.Writer) error {
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

// printVulkanInfo lists the Vulkan devices, marking the one sel
// (FOLIO_VULKAN_DEVICE) picks. Without a loader it says so.
func printVulkanInfo(w io.Writer, sel string) error {
	info, err := vulkan.Probe()
	if errors.Is(err, vulkan.ErrNoLoader) {
		fmt.Fprintf(w, "no Vulkan: %v\n", err)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "vulkan: loader %s (FOLIO_GPU=vulkan computes on the device FOLIO_VULKAN_DEVICE names, else the first GPU)\n", info.Loader)
	if len(info.Devices) == 0 {
		fmt.Fprintln(w, "no Vulkan devices")
		return nil
	}
	pick, pickErr := info.Pick(sel)
	for i, d := range info.Devices {
		fmt.Fprintf(w, "vulkan:%d  %s  %s  Vulkan %s  driver %s  memory %.1f GiB", d.Index, d.Name, d.Type, d.API, d.Driver, float64(d.MemoryBytes)/(1<<30))
		if d.SubgroupArithmetic {
			fmt.Fprintf(w, "  subgroups of %d", d.SubgroupSize)
		}
		switch {
		case !d.Compute:
			fmt.Fprint(w, "  (no compute queue)")
		case i == pick:
			fmt.Fprint(w, "  (picked)")
		}
		fmt.Fprintln(w)
	}
	if pickErr != nil {
		fmt.Fprintln(w, pickErr)
	}
	return nil
}
