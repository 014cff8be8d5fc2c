package e2e

import "syscall"

// childAttr makes a child die with the test process, so a test binary killed
// by a timeout leaves no mariadbd or idalloc behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
