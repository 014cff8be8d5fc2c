package redistest

import "syscall"

// sysProcAttr has the kernel kill redis-server when the test binary dies
// without running its cleanups (a panic, a -timeout, kill -9), so no
// orphan keeps its port.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
