//go:build !(linux || darwin)

package vulkan

import "fmt"

func openLib() (*lib, error) {
	return nil, fmt.Errorf("%w (folio loads Vulkan on Linux and macOS only)", ErrNoLoader)
}

func callRaw(uintptr, ...uintptr) uintptr { panic("vulkan: no loader on this platform") }
