//go:build !(linux || darwin)

package cuda

import "fmt"

func loadDriver() (*driver, error) {
	d, _, err := loadDriverTried()
	return d, err
}

func loadDriverTried() (*driver, []dlAttempt, error) {
	return nil, nil, fmt.Errorf("%w (folio loads the driver on Linux only)", ErrNoDriver)
}

func loadNVRTC([]string) (*compiler, error) {
	c, _, err := loadNVRTCTried(nil)
	return c, err
}

func loadNVRTCTried([]string) (*compiler, []dlAttempt, error) {
	return nil, nil, fmt.Errorf("%w (folio loads NVRTC on Linux only)", ErrNoDriver)
}

func loadBLAS(uintptr, []string) (*blas, error) {
	return nil, fmt.Errorf("%w (folio loads cuBLAS on Linux only)", ErrNoDriver)
}

func loadBLASTried(uintptr, []string) (*blas, []dlAttempt, error) {
	return nil, nil, fmt.Errorf("%w (folio loads cuBLAS on Linux only)", ErrNoDriver)
}

func libcVersion() string { return "" }
