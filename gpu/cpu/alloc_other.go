//go:build !linux

package cpu

// adviseHuge does nothing off Linux.
func adviseHuge([]byte) {}
