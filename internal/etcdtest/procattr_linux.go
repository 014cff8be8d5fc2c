package etcdtest

import "syscall"

// sysProcAttr has the kernel kill etcd when the test binary dies without
// running its cleanups (a panic, a -timeout, kill -9), so no orphan keeps
// its ports. Pdeathsig follows the thread that started the child; Go
// retires a thread only when a goroutine locked to it exits, which the
// goroutines that start servers here never are.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
