//go:build unix && !linux

package client

import "syscall"

// childAttr: only Linux has Pdeathsig; elsewhere the cleanup kills children.
func childAttr() *syscall.SysProcAttr { return nil }
