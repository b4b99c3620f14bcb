//go:build linux || darwin

package vulkan

import (
	"errors"
	"strings"
	"testing"
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
