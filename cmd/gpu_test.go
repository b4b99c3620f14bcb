package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu/cpu"
	"folio/gpu/cuda"
	"folio/models/gguf"
)

// The generation check, with the CPU on both sides, agrees exactly; it is
// what `folio gpu selftest` runs against the GPU.
func TestGenerationCheckCPUAgainstItself(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := writeSynth(path, "qwen3", gguf.TypeQ4_K, 3); err != nil {
		t.Fatal(err)
	}
	a, b := cpu.New(1), cpu.New(2)
	defer a.Close()
	defer b.Close()
	g, err := cuda.CheckGeneration(path, a, b, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !g.Pass() || g.Steps != 5 || g.Differ != 0 || g.Worst != 0 || len(g.Ref) != 5 {
		t.Errorf("result %+v", g)
	}
}

func TestGPUInfoWithoutDriver(t *testing.T) {
	var out bytes.Buffer
	if err := printGPUInfo(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "cuda:0") && !strings.Contains(s, "no NVIDIA GPU") {
		t.Errorf("output %q names neither a device nor the absence of one", s)
	}
}
