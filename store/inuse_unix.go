//go:build unix && !linux

package store

import (
	"os"
	"syscall"
)

// writeLockedBy reports whether a write lock on [start, start+n) of f
// would conflict with another process's lock, and by which process.
// F_GETLK does not see this process's own locks.
func writeLockedBy(f *os.File, start, n int64) (bool, int, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: start, Len: n}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false, 0, err
	}
	if lk.Type == syscall.F_UNLCK {
		return false, 0, nil
	}
	return true, int(lk.Pid), nil
}
