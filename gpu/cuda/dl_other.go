//go:build !(linux || darwin)

package cuda

import "fmt"

func loadDriver() (*driver, error) {
	return nil, fmt.Errorf("%w (folio loads the driver on Linux only)", ErrNoDriver)
}

func loadNVRTC() (*compiler, error) {
	return nil, fmt.Errorf("%w (folio loads NVRTC on Linux only)", ErrNoDriver)
}

func loadBLAS(uintptr) (*blas, error) {
	return nil, fmt.Errorf("%w (folio loads cuBLAS on Linux only)", ErrNoDriver)
}
