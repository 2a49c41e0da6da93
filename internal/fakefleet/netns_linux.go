package fakefleet

import "syscall"

// childAttr has a namespace's child killed when the test binary that started it dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
