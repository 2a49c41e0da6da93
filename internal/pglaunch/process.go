package pglaunch

import (
	"os/exec"
	"runtime"
	"syscall"
)

// process is a started child whose exit is observable through done.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the child has exited
	err  error         // cmd.Wait's result; read it only after done is closed
}

// start starts cmd as cred's user (nil: as ourselves) so that it dies with
// us: on Linux the kernel sends SIGKILL when the thread that forked the child
// exits, not the process, so the goroutine that forks stays locked to its
// thread until the child has exited, and Go cannot retire that thread early.
// A Go process that is killed outright still takes the child with it; only
// its temporary directory is left behind.
// A cmd that already has its SysProcAttr (a detached server) keeps it.
func start(cmd *exec.Cmd, cred *syscall.Credential) (*process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr(cred)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// exited reports whether the child has exited, without blocking.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}
