package pglaunch

import "syscall"

// sysProcAttr asks the kernel to kill the child when its parent dies, so a
// killed test binary does not leave a server running. Go applies the
// credential before the death signal, which a credential change would reset.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
