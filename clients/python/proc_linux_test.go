package python

import "syscall"

// childAttr makes the idalloc child die with the test process, so a test
// binary killed by a timeout leaves none behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
