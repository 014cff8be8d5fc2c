//go:build !linux

package python

import "syscall"

// childAttr: only Linux has Pdeathsig; elsewhere the cleanup kills the child.
func childAttr() *syscall.SysProcAttr { return nil }
