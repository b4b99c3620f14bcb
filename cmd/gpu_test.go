package cmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"folio/gpu/cuda"
)

func TestGPUInfoWithoutDriver(t *testing.T) {
	var out bytes.Buffer
	if err := printGPUInfo(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "cuda:0") && !strings.Contains(s, "no NVIDIA GPU") {
		t.Errorf("output %q names neither a device nor the absence of one", s)
	}
	if !strings.Contains(s, "vulkan:0  ") && !strings.Contains(s, "no Vulkan") {
		t.Errorf("output %q names neither a Vulkan device nor the absence of one", s)
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
