package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"folio/gpu/cpu"
)

// llamaCppVariants maps folio's CPU levels (cpu.Levels) to the
// libggml-cpu variant of llama.cpp built for the same instructions, so
// that bench --vs-llamacpp compares like with like when FOLIO_CPU_LEVEL
// holds folio below the machine's best: x64 is its build without SIMD
// beyond SSE2, haswell AVX2 with FMA and F16C, alderlake that with
// AVX-VNNI, icelake AVX-512 with VNNI, zen4 that with BF16 (and VBMI,
// which folio's avx512bf16 does not use). At folio's best level llama.cpp
// runs its own best (zen4, icelake, sapphirerapids with AMX: whatever this
// CPU takes), as at neon and i8mm, arm64's levels.
var llamaCppVariants = map[string]string{
	"scalar":     "x64",
	"avx2":       "haswell",
	"avxvnni":    "alderlake",
	"avx512":     "icelake",
	"avx512bf16": "zen4",
	"amx":        "",
	"neon":       "",
	"i8mm":       "",
}

// llamaCppVariant is the variant for folio's level on this machine:
// none (llama.cpp's best) at the machine's best level, whose variant may
// not run here (icelake's instructions on an AVX-512 CPU without them).
func llamaCppVariant(level string) string {
	if levels := cpu.Levels(); levels[len(levels)-1] == level {
		return ""
	}
	return llamaCppVariants[level]
}

// llamaCppLibDir makes a folder holding only llama.cpp's CPU library of
// variant, for llamabench's LLAMABENCH_LIBDIR (it loads every
// libggml-cpu-*.so of its folder and runs the best the CPU takes), and
// returns it with the function that removes it. An empty variant needs no
// folder.
func llamaCppLibDir(ctx context.Context, llamaref, variant string) (dir string, done func(), err error) {
	if variant == "" {
		return "", func() {}, nil
	}
	c := exec.CommandContext(ctx, llamaref, "cversion")
	c.Stderr = io.Discard
	out, err := c.Output()
	if err != nil {
		return "", nil, fmt.Errorf("bench: %s cversion: %w", llamaref, err)
	}
	var v struct {
		Versions struct {
			LibDir string `json:"lib_dir"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Versions.LibDir == "" {
		return "", nil, fmt.Errorf("bench: %s cversion named no library folder (%v): %s", llamaref, err, out)
	}
	lib := filepath.Join(v.Versions.LibDir, "libggml-cpu-"+variant+".so")
	if _, err := os.Stat(lib); err != nil {
		return "", nil, fmt.Errorf("bench: llama.cpp has no %s variant to compare with: %w", variant, err)
	}
	dir, err = os.MkdirTemp("", "folio-llamacpp-")
	if err != nil {
		return "", nil, err
	}
	done = func() { os.RemoveAll(dir) }
	if err := os.Symlink(lib, filepath.Join(dir, filepath.Base(lib))); err != nil {
		done()
		return "", nil, err
	}
	return dir, done, nil
}
