//go:build !linux

package redistest

import "syscall"

// sysProcAttr: elsewhere only the test's cleanup stops redis-server.
func sysProcAttr() *syscall.SysProcAttr { return nil }
