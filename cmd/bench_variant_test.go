package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu/cpu"
)

// fakeLlamaref writes a llamaref stand-in whose cversion names libDir and
// whose cbench reports, as its CPU backend, the one library in
// $LLAMABENCH_LIBDIR (llamabench loads what that folder holds), or
// libggml-cpu-best.so without it.
func fakeLlamaref(t *testing.T, libDir string) string {
	t.Helper()
	script := `#!/bin/sh
case "$1" in
cversion) echo '{"mode": "version", "versions": {"lib_dir": "` + libDir + `"}}' ;;
cbench)
	be=libggml-cpu-best.so
	[ -n "$LLAMABENCH_LIBDIR" ] && be=$(ls "$LLAMABENCH_LIBDIR")
	echo '{"pp_tokens_per_s": {"median": 100, "runs": [100]}, "tg_tokens_per_s": {"median": 10, "runs": [10]}, "versions": {"cpu_backend": "'$be'"}}' ;;
*) exit 2 ;;
esac
`
	path := filepath.Join(t.TempDir(), "llamaref")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// With FOLIO_CPU_LEVEL below the machine's best, bench --vs-llamacpp
// runs llama.cpp's build for the same instructions, and the report names
// both.
func TestBenchLevelRunsMatchingLlamaCpp(t *testing.T) {
	libDir := t.TempDir()
	for _, v := range []string{"x64", "haswell", "zen4"} {
		if err := os.WriteFile(filepath.Join(libDir, "libggml-cpu-"+v+".so"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	llamaref := fakeLlamaref(t, libDir)
	model := tinySynth(t)
	t.Cleanup(func() { cpu.SetLevel("") })
	args := []string{"bench", "--model", model, "--prompt", "8", "--gen", "2", "--repeat", "1", "--vs-llamacpp", "--llamaref", llamaref}

	t.Setenv("FOLIO_CPU_LEVEL", "scalar")
	var r cpuReport
	benchJSON(t, &r, args...)
	if r.SIMD != "scalar" || r.LlamaCpp == nil || r.LlamaCpp.Backend != "libggml-cpu-x64.so" {
		t.Errorf("at scalar: simd %q, llama.cpp %+v; want scalar against libggml-cpu-x64.so", r.SIMD, r.LlamaCpp)
	}

	if levels := cpu.Levels(); levels[len(levels)-1] == "avx2" {
		t.Setenv("FOLIO_CPU_LEVEL", "")
		r = cpuReport{}
		benchJSON(t, &r, args...)
		if r.SIMD != "avx2" || r.LlamaCpp.Backend != "libggml-cpu-haswell.so" {
			t.Errorf("at this machine's best: simd %q against %q; want avx2 against haswell", r.SIMD, r.LlamaCpp.Backend)
		}
	}

	os.Remove(filepath.Join(libDir, "libggml-cpu-x64.so"))
	t.Setenv("FOLIO_CPU_LEVEL", "scalar")
	if _, err := execute(t, args...); err == nil || !strings.Contains(err.Error(), "no x64 variant") {
		t.Errorf("llama.cpp without its x64 build: %v, want an error naming the variant", err)
	}
}

func TestCPULevelSetting(t *testing.T) {
	t.Cleanup(func() { cpu.SetLevel("") })
	t.Setenv("FOLIO_CPU_LEVEL", "avx1024")
	_, err := execute(t, "version")
	if err == nil || !strings.Contains(err.Error(), "FOLIO_CPU_LEVEL") || !strings.Contains(err.Error(), "scalar") {
		t.Fatalf("FOLIO_CPU_LEVEL=avx1024: %v, want an error naming the setting and the levels this machine runs", err)
	}
	t.Setenv("FOLIO_CPU_LEVEL", "scalar")
	if _, err := execute(t, "version"); err != nil || cpu.SIMDLevel() != "scalar" {
		t.Fatalf("FOLIO_CPU_LEVEL=scalar: %v, level %s", err, cpu.SIMDLevel())
	}
}
