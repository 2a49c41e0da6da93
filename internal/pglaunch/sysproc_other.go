//go:build unix && !linux

package pglaunch

import "syscall"

// sysProcAttr only switches users: outside Linux there is no parent-death
// signal, so a killed parent leaves the server running until Stop or reboot.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
