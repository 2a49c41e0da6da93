package throughput

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cpuUse is CPU time in seconds: this process's (the rounds, the floor's invocations or River's
// client, and the fleet's HTTP server, which runs in it too) and the whole machine's (the same,
// PostgreSQL's backends and anything else that ran). machine is 0 where /proc/stat cannot be read.
//
// On a machine whose cores are all busy, throughput is the cores over the CPU a check costs: the
// figure that says what a rate is made of, and what a change can still win.
type cpuUse struct{ process, machine float64 }

// cpuNow reads the CPU used so far, by this process and by the machine since it booted.
func cpuNow() cpuUse {
	var u cpuUse
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.process = (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Seconds()
	}
	u.machine = machineBusy()
	return u
}

// machineBusy is the machine's busy time in seconds: /proc/stat's first line, user, nice, system,
// irq and softirq (not idle, iowait, steal, the time this machine's host gave others, nor guest
// time, counted in user already), in USER_HZ (100 a second on Linux whatever the kernel's own
// tick); 0 when unreadable.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0
	}
	var ticks float64
	for i, f := range fields[1:min(len(fields), 8)] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0
		}
		ticks += v
	}
	return ticks / 100
}

// since is the CPU used from start to u.
func (u cpuUse) since(start cpuUse) cpuUse {
	return cpuUse{process: u.process - start.process, machine: u.machine - start.machine}
}

func (u cpuUse) add(v cpuUse) cpuUse {
	return cpuUse{process: u.process + v.process, machine: u.machine + v.machine}
}

// measured is one contender's figures: its rate, and the CPU it used over its timed spans for n
// checks or jobs.
type measured struct {
	perSecond float64
	cpu       cpuUse
	n         int
}

// perCheck is the CPU a check cost, in milliseconds: the machine's, and this process's.
func (m measured) perCheck() (machine, process float64) {
	if m.n == 0 {
		return 0, 0
	}
	return m.cpu.machine * 1000 / float64(m.n), m.cpu.process * 1000 / float64(m.n)
}
