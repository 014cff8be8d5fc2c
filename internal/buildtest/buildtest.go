// Package buildtest builds the idalloc binary for tests that run it as a
// real process (the client's tests, the end-to-end suite), once per test
// process and without -race: the processes under test are the binary users
// run, and a race-instrumented server would be several times slower than
// the load the tests put on it.
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		buildtest.Cleanup()
//		os.Exit(code)
//	}
//	...
//	bin, err := buildtest.Idalloc()
//
// It is imported by tests only.
package buildtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// buildTimeout bounds the build: a cold module cache on a slow machine.
const buildTimeout = 5 * time.Minute

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// Idalloc returns the path of the module's main package built into a
// temporary directory, building it on the first call.
func Idalloc() (string, error) {
	build.once.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			build.err = err
			return
		}
		if build.dir, err = os.MkdirTemp("", "idalloc-bin-"); err != nil {
			build.err = err
			return
		}
		build.bin = filepath.Join(build.dir, "idalloc")
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, goCommand, "build", "-o", build.bin, ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build idalloc: %v\n%s", err, out)
		}
	})
	return build.bin, build.err
}

// Cleanup removes the built binary, if any; call it from TestMain after
// m.Run.
func Cleanup() {
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
}

// moduleRoot is the nearest directory at or above the working directory
// (a test runs in its package's) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("buildtest: no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// goCommand is the go command of the toolchain running the tests, so the
// binary is built by the same Go: go test puts that toolchain's bin first
// in the tests' PATH.
const goCommand = "go"
