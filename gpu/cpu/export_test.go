package cpu

// For the external tests (package cpu_test), which import packages that
// import cpu.

// NewAtLevel is New with its kernels at the named level (one of Levels).
func NewAtLevel(threads int, level string) *Backend {
	b := New(threads)
	for _, l := range supportedLevels() {
		if l.String() == level {
			b.k = kernelsAt(l)
			return b
		}
	}
	panic("cpu: level " + level + " is not supported here")
}
