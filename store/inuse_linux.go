package store

import (
	"os"
	"syscall"
)

// fOFDGetLK is F_OFD_GETLK (Linux 3.15), which package syscall lacks: the
// question is asked for an open file description, so a POSIX lock of this
// very process conflicts too.
const fOFDGetLK = 36

// writeLockedBy reports whether a write lock on [start, start+n) of f
// would conflict with a lock held on it, and by which process (0 for an
// open file description lock, which has none).
func writeLockedBy(f *os.File, start, n int64) (bool, int, error) {
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: start, Len: n}
	if err := syscall.FcntlFlock(f.Fd(), fOFDGetLK, &lk); err != nil {
		return false, 0, err
	}
	if lk.Type == syscall.F_UNLCK {
		return false, 0, nil
	}
	return true, max(int(lk.Pid), 0), nil
}
