//go:build !linux

package cpu

import "runtime"

// osYield lets other goroutines run while a pool thread spins.
func osYield() { runtime.Gosched() }
