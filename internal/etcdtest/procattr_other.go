//go:build !linux

package etcdtest

import "syscall"

// sysProcAttr: elsewhere only the test's cleanup stops etcd.
func sysProcAttr() *syscall.SysProcAttr { return nil }
