package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"folio/gpu/cuda"
	"folio/internal/envconfig"
	"folio/runner"
)

// TestServeHelpListsEverySetting: `folio serve --help` shows each setting
// of the table with its default and help.
func TestServeHelpListsEverySetting(t *testing.T) {
	out, err := execute(t, "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range envconfig.Settings {
		i := strings.Index(out, "  "+s.Name+" ")
		if i < 0 {
			t.Errorf("serve --help does not list %s", s.Name)
			continue
		}
		line, _, _ := strings.Cut(out[i:], "\n")
		def := s.Default
		if def == "" {
			def = "unset"
		}
		if !strings.Contains(line, "("+def+")") || !strings.Contains(line, s.Help) {
			t.Errorf("serve --help lists %s as %q, want its default %q and help", s.Name, line, def)
		}
	}
}

// TestCUDAOptionsFromSettings: the GPU backend's options come from the
// settings, which the cuda package no longer reads.
func TestCUDAOptionsFromSettings(t *testing.T) {
	t.Setenv("FOLIO_HOME", "/srv/folio")
	t.Setenv("FOLIO_CUDA_SYNC", "1")
	t.Setenv("FOLIO_CUDA_GRAPHS", "")
	t.Setenv("FOLIO_CUDA_PATH", "/opt/cuda")
	t.Setenv("FOLIO_GPU", "cpu")
	opt := withDevice(runner.LoadOptions{NumCtx: 64})
	if opt.Device != "cpu" || opt.CUDA.CacheDir != filepath.Join("/srv/folio", "cache", "cuda") || !opt.CUDA.Sync ||
		opt.CUDA.Graphs || opt.CUDA.Toolkit[0] != "/opt/cuda" {
		t.Errorf("%+v", opt)
	}
	if o := withCUDA(cuda.Options{Graphs: true}); !o.Graphs || !o.Sync {
		t.Errorf("selftest's graphs backend: %+v", o)
	}
}
