//go:build linux || darwin

package vulkan

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"
)

// loaderNames are where the Vulkan loader is looked for, through the
// dynamic loader's search path.
var loaderNames = func() []string {
	if runtime.GOOS == "darwin" {
		return []string{"libvulkan.1.dylib", "libvulkan.dylib", "libMoltenVK.dylib"}
	}
	return []string{"libvulkan.so.1", "libvulkan.so"}
}()

// openLib opens the Vulkan loader and resolves every entry point of lib.
// Failure wraps ErrNoLoader, naming each library tried and why it failed.
func openLib() (*lib, error) {
	var tried []string
	var h uintptr
	for _, n := range loaderNames {
		var err error
		if h, err = purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
			break
		}
		tried = append(tried, fmt.Sprintf("%s: %v", n, err))
	}
	if h == 0 {
		return nil, fmt.Errorf("%w (%s); install the GPU's Vulkan driver, or libvulkan1 with mesa-vulkan-drivers for the CPU's lavapipe",
			ErrNoLoader, strings.Join(tried, "; "))
	}
	l := new(lib)
	for name, dst := range l.symbols() {
		p, err := purego.Dlsym(h, name)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("%w: the loader has no %s: it is older than Vulkan 1.1", ErrNoLoader, name)
		}
		*dst = p
	}
	return l, nil
}

// callRaw calls fn and returns its result whole.
func callRaw(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
