package cmd

import "syscall"

// peakRSS is this process's peak resident memory (the mapped weights it
// touched included), as llamaref reports llama.cpp's.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss // bytes on macOS
}
