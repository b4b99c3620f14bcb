//go:build !linux && !darwin

package cmd

// peakRSS is 0, not measured: bench runs on Linux and macOS only.
func peakRSS() int64 { return 0 }
