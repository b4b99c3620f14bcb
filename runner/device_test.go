package runner

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"folio/gpu/cpu"
	"folio/gpu/vulkan"
	"folio/models/gguf"
	"folio/models/synth"
)

// FOLIO_GPU=vulkan puts the model on the Vulkan device (lavapipe under CI)
// and the engine's greedy tokens, three requests batched, are the CPU's;
// FOLIO_GPU=auto leaves a model on the CPU where the only Vulkan device is
// the CPU itself, saying so.
func TestLoadOnVulkan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "qwen3.gguf")
	if err := synth.WriteTiny(path, "qwen3", gguf.TypeF32, 5); err != nil {
		t.Fatal(err)
	}
	opt := LoadOptions{NumCtx: 256, Device: "vulkan"}
	m := loadOnVulkan(t, path, opt)
	opt.Device = "cpu"
	ref, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	greedy := func(m *Model) [][]int32 {
		e := newEngine(t, m, EngineOptions{})
		var sts []*Stream
		for i := range 3 {
			st, err := e.Submit(t.Context(), Request{Prompt: promptOf(10+9*i, uint64(i)), Sample: SampleOptions{RepeatPenalty: 1}, NumPredict: 12})
			if err != nil {
				t.Fatal(err)
			}
			sts = append(sts, st)
		}
		var out [][]int32
		for _, st := range sts {
			r := collect(t, st, 1)
			if r.err != nil {
				t.Fatal(r.err)
			}
			out = append(out, r.tokens[0])
		}
		return out
	}
	got, want := greedy(m), greedy(ref)
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("request %d: Vulkan %v, CPU %v", i, got[i], want[i])
		}
	}

	opt.Device = "auto"
	am, err := Load(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	if _, onCPU := am.Arch.Backend().(*cpu.Backend); onCPU && !strings.Contains(am.Notice, "vulkan:") {
		t.Errorf("auto on the CPU with notice %q: want Vulkan's reason", am.Notice)
	}
	t.Logf("auto: %s, notice %q", am.Arch.Backend().Name(), am.Notice)
}

// On Vulkan (a gpu.KVGrower whose memory is the device's) a request with a
// num_ctx past the pool grows it between steps, as on the CPU, and gets
// the tokens a pool large enough from the start gives; its budget is half
// the device's memory free after the model.
func TestVulkanGrowsPool(t *testing.T) {
	path := filepath.Join(t.TempDir(), "llama.gguf")
	if err := synth.WriteTiny(path, "llama", gguf.TypeF32, 6); err != nil {
		t.Fatal(err)
	}
	load := func(numCtx int) *Model { return loadOnVulkan(t, path, LoadOptions{NumCtx: numCtx, Device: "vulkan"}) }
	greedy := SampleOptions{RepeatPenalty: 1}
	req := Request{Prompt: promptOf(300, 21), Sample: greedy, NumPredict: 6, NumCtx: 512}
	want := run(t, newEngine(t, load(512), EngineOptions{}), req)
	m := load(32) // room for 4 × 32 tokens
	dev := m.Arch.Backend().(*vulkan.Backend)
	free, _ := dev.Free()
	if m.KVBudget < (free+m.KV.Spec().Bytes())/2 || m.KVBudget > free+m.KV.Spec().Bytes() {
		t.Errorf("budget %d with %d free on the device", m.KVBudget, free)
	}
	e := newEngine(t, m, EngineOptions{})
	before := m.KV.Spec().Tokens()
	got := run(t, e, req)
	if want.err != nil || got.err != nil || !slices.Equal(got.tokens[0], want.tokens[0]) {
		t.Errorf("after growing: %v %v; a large pool: %v %v", got.err, got.tokens[0], want.err, want.tokens[0])
	}
	if st := e.Stats(); st.Growths == 0 || m.KV.Spec().Tokens() < 306 {
		t.Errorf("pool of %d tokens, then %d after %d growths", before, m.KV.Spec().Tokens(), st.Growths)
	}
}

// loadOnVulkan loads path with opt (Device "vulkan") and checks that it
// runs there, closing it when t ends; without a Vulkan device it skips t,
// or fails it under CI, which installs lavapipe.
func loadOnVulkan(t *testing.T, path string, opt LoadOptions) *Model {
	t.Helper()
	m, err := Load(path, opt)
	if errors.Is(err, vulkan.ErrNoLoader) || errors.Is(err, vulkan.ErrNoDevice) {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI installs libvulkan1 and mesa-vulkan-drivers, yet: %v", err)
		}
		t.Skipf("no Vulkan device: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if _, ok := m.Arch.Backend().(*vulkan.Backend); !ok {
		t.Fatalf("Device vulkan loaded on %s", m.Arch.Backend().Name())
	}
	return m
}
