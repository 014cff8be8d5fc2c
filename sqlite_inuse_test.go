package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondInstanceOnASQLiteFile: while an idalloc process serves a
// SQLite file, a second one started on it exits with status 1 before
// serving, its last line naming the first's PID and the file, and the
// first goes on serving. Once the first has ended, by SIGTERM or by kill
// -9 (its locks end with the process), the next one starts on the file.
func TestSecondInstanceOnASQLiteFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no fcntl locks to tell the holder by: a second instance is not refused on Windows")
	}
	for _, c := range []struct {
		name string
		end  syscall.Signal // how the first ends before the last start
	}{
		{"the first stopped", syscall.SIGTERM},
		{"the first killed -9", syscall.SIGKILL},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "idalloc.db")
			first := startInstance(t, path)
			second, served := spawn(t, fmt.Sprintf(`{"driver": "sqlite", "dsn": %q, "http_addr": "127.0.0.1:0"}`, path))
			var err error
			select {
			case err = <-second.done:
			case a := <-served:
				t.Fatalf("a second instance serves the file at %s beside pid %d", a, first.cmd.Process.Pid)
			case <-time.After(30 * time.Second):
				t.Fatal("the second instance neither served nor exited within 30s")
			}
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
				t.Errorf("second instance's exit: %v, want status 1", err)
			}
			lines := strings.Split(strings.TrimSpace(second.log.String()), "\n")
			last := lines[len(lines)-1]
			for _, w := range []string{"idalloc: ", `key "dsn": the sqlite file is in use: `,
				fmt.Sprintf("process %d holds %s open", first.cmd.Process.Pid, path), "one SQLite file serves one instance"} {
				if !strings.Contains(last, w) {
					t.Errorf("last line %q does not say %q", last, w)
				}
			}
			var got struct {
				ID int64 `json:"id"`
			}
			getJSON(t, first.url+"/alloc?app_tag=test_business", &got)
			if got.ID < 1 {
				t.Errorf("the first instance answered id %d after the refusal, want an ID", got.ID)
			}

			first.stop(t, c.end)
			next := startInstance(t, path)
			getJSON(t, next.url+"/alloc?app_tag=test_business", &got)
		})
	}
}
