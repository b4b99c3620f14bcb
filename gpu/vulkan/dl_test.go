//go:build linux || darwin

package vulkan

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"folio/gpu"
	"folio/gpu/place"
)

// Without a loader, openLib's error wraps ErrNoLoader, names what it
// tried and says what to install.
func TestNoLoader(t *testing.T) {
	saved := loaderNames
	defer func() { loaderNames = saved }()
	loaderNames = []string{"libvulkan-folio-missing.so.1"}
	l, err := openLib()
	if l != nil || !errors.Is(err, ErrNoLoader) {
		t.Fatalf("openLib = %v, %v", l, err)
	}
	for _, want := range []string{"libvulkan-folio-missing.so.1: ", "mesa-vulkan-drivers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// Without a loader (libvulkan.so.1 missing), FOLIO_GPU=auto computes on
// the CPU with a notice saying what to install, and FOLIO_GPU=vulkan is an
// error saying so.
func TestKindWithoutLoader(t *testing.T) {
	saved := loaderNames
	savedNodes := gpuNodes
	loaderNames, libOnce = []string{"libvulkan-folio-missing.so.1"}, sync.Once{}
	gpuNodes = func() bool { return true } // a GPU's node, so that auto looks for the loader
	t.Cleanup(func() { loaderNames, libOnce, gpuNodes = saved, sync.Once{}, savedNodes })
	k := Kind(Options{}, nil, gpu.KVSpec{}, 0)
	be, notice, err := place.Choose("auto", []place.Kind{k}, host, nil)
	if be != nil || err != nil || !strings.Contains(notice, "no Vulkan loader") || !strings.Contains(notice, "mesa-vulkan-drivers") ||
		!strings.HasSuffix(notice, "computing on the CPU") {
		t.Errorf("auto: %v, %v, notice %q", be, err, notice)
	}
	if _, _, err := place.Choose("vulkan", []place.Kind{k}, host, nil); !errors.Is(err, ErrNoLoader) || !strings.Contains(err.Error(), "FOLIO_GPU=vulkan") {
		t.Errorf("FOLIO_GPU=vulkan: %v", err)
	}
}
