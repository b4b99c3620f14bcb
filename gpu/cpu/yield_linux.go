package cpu

import "syscall"

// osYield gives the core to another thread that is ready to run, such as
// a pool thread the OS descheduled while this one spins waiting for it.
func osYield() { syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
