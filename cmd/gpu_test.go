package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu/cuda"
	"folio/gpu/vulkan"
	"folio/models/gguf"
	"folio/models/synth"
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

// vulkanHere skips the test where no Vulkan device is (CI installs
// lavapipe, so there it fails instead).
func vulkanHere(t *testing.T) {
	t.Helper()
	if _, err := vulkan.Probe(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs libvulkan1 and mesa-vulkan-drivers, yet: %v", err)
		}
		t.Skipf("no Vulkan: %v", err)
	}
}

// `folio gpu selftest --vulkan` checks every op and the generations on
// the Vulkan device (lavapipe here) and passes.
func TestGPUSelftestVulkan(t *testing.T) {
	vulkanHere(t)
	out, err := execute(t, "gpu", "selftest", "--vulkan", "--tokens", "6")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"device: ", "ops: 120 of 120 pass", "generation llama-Q4_K.gguf: 6 tokens", "  vulkan: [", "selftest: pass"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// `folio bench --gpu=vulkan` measures the model on the Vulkan device; a
// kind bench does not know is refused.
func TestBenchOnVulkan(t *testing.T) {
	vulkanHere(t)
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := synth.WriteTiny(path, "llama", gguf.TypeQ4_K, 1); err != nil {
		t.Fatal(err)
	}
	out, err := execute(t, "bench", "--gpu=vulkan", "--model", path, "--prompt", "16", "--gen", "4", "--repeat", "1", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rep gpuReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Backend != "vulkan" || rep.Device == "" || rep.DeviceBytes <= 0 || rep.PrefillTPS <= 0 || rep.DecodeTPS <= 0 || rep.BLASCalls != 0 {
		t.Errorf("%+v", rep)
	}
	if _, err := execute(t, "bench", "--gpu=metal", "--model", path); err == nil || !strings.Contains(err.Error(), "use cuda or vulkan") {
		t.Errorf("--gpu=metal: %v", err)
	}
}
