package throughput

import "syscall"

// peakRSS is this process's peak resident set size in bytes so far (Linux reports ru_maxrss in
// KiB); 0 when the system does not say.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
