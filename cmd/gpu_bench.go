package cmd

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"folio/gpu"
	"folio/gpu/cuda"
	"folio/gpu/place"
	"folio/internal/loadgen"
)

// hbmBandwidth is the H200's HBM3e bandwidth, the ceiling `folio bench
// --gpu` measures decode against.
const hbmBandwidth = 4.8e12

// gpuReport is what `folio bench --gpu --model FILE` measures.
type gpuReport struct {
	Model       string    `json:"model"`
	Backend     string    `json:"backend"` // cuda or vulkan
	Device      string    `json:"device"`
	ModelBytes  int64     `json:"model_bytes"` // weight bytes one decode step reads
	Prompt      int       `json:"prompt"`
	Gen         int       `json:"gen"`
	Repeat      int       `json:"repeat"`
	PrefillTPS  float64   `json:"prefill_tps"` // medians over the repeats
	DecodeTPS   float64   `json:"decode_tps"`
	PrefillRuns []float64 `json:"prefill_runs"`
	DecodeRuns  []float64 `json:"decode_runs"`
	// DecodeOfCeiling is decode_tps × model_bytes ÷ 4.8 TB/s.
	DecodeOfCeiling float64 `json:"decode_of_ceiling"`
	DeviceBytes     int64   `json:"device_bytes"`    // device memory folio allocated
	Split           string  `json:"split,omitempty"` // how the layers are split, when the model did not fit
	// What actually ran: prefill's matmuls on cuBLAS (BLASCalls SGEMMs over
	// the warm-up and the rounds; 0: it did not run, BLAS says why), and
	// decode steps replayed as CUDA graphs (GraphSteps; 0: none, though
	// Graphs says they were on).
	BLAS       string `json:"blas"`
	BLASCalls  int    `json:"blas_calls"`
	Graphs     bool   `json:"graphs"`
	GraphSteps int    `json:"graph_steps"`
}

// runBenchGPU is `folio bench --gpu[=kind]`: the CPU measurement's prefill
// and decode rounds on the CUDA or the Vulkan backend.
func runBenchGPU(cmd *cobra.Command, kind, model string, prompt, gen, repeat int, asJSON bool) error {
	if prompt < 1 || gen < 1 || repeat < 1 {
		return fmt.Errorf("bench: --prompt %d, --gen %d, --repeat %d: each must be at least 1", prompt, gen, repeat)
	}
	if kind != "cuda" && kind != "vulkan" {
		return fmt.Errorf("bench: --gpu=%s: use cuda or vulkan", kind)
	}
	rep, err := benchGPU(kind, model, prompt, gen, repeat)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), rep)
	}
	printGPU(cmd.OutOrStdout(), rep)
	return nil
}

// benchGPU loads model on the GPU of kind (cuda, vulkan) and times a
// prefill of prompt tokens and gen decode steps, repeat times after a
// warm-up; each step's logits are downloaded, as serving does, which also
// waits for the GPU.
func benchGPU(kind, model string, prompt, gen, repeat int) (*gpuReport, error) {
	m, err := loadForBench(model, kind, prompt, gen, 0, 0, "f16")
	if err != nil {
		return nil, err
	}
	defer m.Close()
	be := m.Arch.Backend()
	dev, ok := be.(place.Device)
	rep := &gpuReport{Model: model, Backend: kind, Prompt: prompt, Gen: gen, Repeat: repeat, ModelBytes: decodeBytes(m, m.Bytes.Weights)}
	if s, split := be.(*place.Split); split {
		dev, ok = s.Device().(place.Device)
		rep.Split = fmt.Sprintf("%d of %d layers on the GPU, the rest on the CPU", s.OnDevice(), m.Arch.Layers)
	}
	if !ok {
		return nil, fmt.Errorf("bench: the model loaded on %s, not the GPU", be.Name())
	}
	rep.Device, rep.DeviceBytes = dev.DeviceName(), dev.Used()
	logits := make([]float32, m.Arch.Vocab)
	download := func(out gpu.Tensor) { be.Download(logits, out) }
	if rep.PrefillRuns, rep.DecodeRuns, err = timeRounds(m, prompt, gen, repeat, 0, prompt, download, nil); err != nil {
		return nil, err
	}
	rep.DeviceBytes = dev.Used() // with the scratch cuBLAS grew
	if c, ok := dev.(*cuda.Backend); ok {
		rep.BLAS, rep.BLASCalls = c.BLAS(), c.BLASCalls()
		rep.Graphs, rep.GraphSteps = c.GraphsOn(), c.GraphLaunches()
	}
	rep.PrefillTPS, rep.DecodeTPS = loadgen.Median(rep.PrefillRuns), loadgen.Median(rep.DecodeRuns)
	rep.DecodeOfCeiling = rep.DecodeTPS * float64(rep.ModelBytes) / hbmBandwidth
	return rep, nil
}

func printGPU(w io.Writer, r *gpuReport) {
	fmt.Fprintf(w, "model:   %s (%.1f MB of weights read per token) on %s (%.2f GiB allocated)\n",
		r.Model, float64(r.ModelBytes)/1e6, r.Device, float64(r.DeviceBytes)/(1<<30))
	if r.Split != "" {
		fmt.Fprintf(w, "split:   %s\n", r.Split)
	}
	fmt.Fprintf(w, "%-8s prefill %d: %9.1f tok/s   decode %d (after %d): %8.1f tok/s   (medians of %d)\n",
		r.Backend+":", r.Prompt, r.PrefillTPS, r.Gen, r.Prompt, r.DecodeTPS, r.Repeat)
	if r.Backend == "cuda" {
		fmt.Fprintf(w, "ran:     prefill matmuls on %s (%d SGEMMs); CUDA graphs %s (%d steps as graphs)\n",
			r.BLAS, r.BLASCalls, map[bool]string{true: "on", false: "off"}[r.Graphs], r.GraphSteps)
	}
	fmt.Fprintf(w, "ceiling: decode at %.0f%% of 4.8 TB/s ÷ weight bytes (%.0f tok/s)\n",
		100*r.DecodeOfCeiling, hbmBandwidth/float64(r.ModelBytes))
}
