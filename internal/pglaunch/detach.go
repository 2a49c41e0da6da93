package pglaunch

import "syscall"

// A detached server (Options.Detach) outlives the process that started it, for `probectl demo
// --keep`: it gets no parent-death signal, and a session of its own, so that neither our exit
// nor a Ctrl-C in the terminal (SIGINT to the whole foreground process group) stops it. Whoever
// keeps it tells the user how to stop it (PID) and what to remove then (Dir); Stop still works
// while we run.

// detachedProcAttr switches users like sysProcAttr but leaves the child to itself.
func detachedProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Setsid: true}
}

// PID is the postmaster's process id: `kill -INT PID` is a fast shutdown.
func (c *Cluster) PID() int {
	if c.proc == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// Dir is the cluster's private temporary directory (data, socket, log): Stop deletes it, and
// whoever stops a detached server by hand should too.
func (c *Cluster) Dir() string { return c.root }
