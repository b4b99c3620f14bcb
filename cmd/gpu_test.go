package cmd

import (
	"bytes"
	"errors"
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

// Without a driver (CI), `folio gpu preflight` says so, lists the paths
// it tried and fails; with a GPU it must pass.
func TestGPUPreflight(t *testing.T) {
	t.Setenv("FOLIO_HOME", t.TempDir())
	out, err := execute(t, "gpu", "preflight")
	if err == nil {
		if !strings.Contains(out, "preflight: pass") {
			t.Errorf("passed without saying so:\n%s", out)
		}
		return
	}
	if !errors.Is(err, cuda.ErrNoDriver) {
		t.Fatalf("a driver loads but preflight fails: %v\n%s", err, out)
	}
	for _, want := range []string{"driver: dlopen libcuda.so.1: ", "driver: no NVIDIA driver", "preflight: FAIL at driver"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
