// Package cputime reads the process's CPU time, for benchmarks: on a
// shared, loaded machine CPU time per operation is a steadier figure than
// wall time, and it counts an embedded server's work too.
package cputime

import (
	"syscall"
	"time"
)

// Now is the process's user+system CPU time so far.
func Now() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
