// Package memlimit gives a process that runs checks a soft memory limit: GOMEMLIMIT when it is
// set, else a share of its container's memory limit, so that the Go runtime collects garbage
// harder as the limit nears instead of growing past it into the kernel's OOM killer (a worker
// killed mid-round loses every result it had claimed). See docs/deploy.md, "Memory".
package memlimit

import (
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Share is the part of the container's limit given to the Go runtime; the rest is for what the
// runtime does not count (thread stacks outside the heap, the kernel's page cache of the spool).
const Share = 0.85

// cgroupFiles hold the container's memory limit: cgroup v2's, then cgroup v1's.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// unlimited: cgroup v1 writes "no limit" as a number near MaxInt64 rounded to a page.
const unlimited = 1 << 62

// Set applies the soft memory limit and says where it came from ("" when there is none): an
// explicit GOMEMLIMIT is the runtime's own and is left as it is, "off" included (an operator who
// asked for no limit gets none, not the container's).
func Set() (limit int64, source string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	}
	for _, f := range cgroupFiles {
		if l, ok := fromCgroup(f); ok {
			debug.SetMemoryLimit(l)
			return l, fmt.Sprintf("%.0f%% of the container's limit (%s)", Share*100, f)
		}
	}
	return math.MaxInt64, ""
}

// fromCgroup reads a cgroup memory limit file and returns Share of it; false when the file is
// absent, unreadable or says there is no limit.
func fromCgroup(path string) (int64, bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v := strings.TrimSpace(string(raw))
	if v == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n >= unlimited {
		return 0, false
	}
	return int64(float64(n) * Share), true
}
