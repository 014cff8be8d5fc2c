// Package freeport hands out loopback TCP ports for tests that must name a
// port before anything listens on it: a server binary, redis-server or
// etcd started as a child process. A port is one that was free a moment
// ago and that this process has not handed out before, so two servers of
// one test never get the same port; another process may still take it in
// between. A test that listens itself should listen on 127.0.0.1:0 and
// keep the listener instead.
package freeport

import (
	"errors"
	"net"
	"sync"
)

var (
	mu   sync.Mutex
	used = map[int]bool{}
)

// Get returns a TCP port on 127.0.0.1 that was free a moment ago and that
// this process has not handed out before. It fails if it cannot listen, or
// if 20 tries find only ports already handed out.
func Get() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		_ = ln.Close()
		if !used[port] {
			used[port] = true
			return port, nil
		}
	}
	return 0, errors.New("freeport: no free port found in 20 tries")
}
