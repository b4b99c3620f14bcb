package cpu

// For the external tests (package cpu_test), which import packages that
// import cpu.

// Levels names the SIMD levels this machine runs, scalar first.
func Levels() []string {
	var names []string
	for _, l := range supportedLevels() {
		names = append(names, l.String())
	}
	return names
}

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
