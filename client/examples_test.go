//go:build unix

package client

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExamples builds the programs under examples/ and runs them against a
// live idalloc, as docs/clients.md says: segment prints IDs; snowflake leases a
// worker ID, prints IDs, and releases it on Ctrl-C (SIGINT).
func TestExamples(t *testing.T) {
	srv := startServer(t, "examples", serverConfig(t.TempDir(), map[string]any{
		"snowflake": map[string]any{"enabled": true, "worker_bits": 2}}))
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	// The Go running the test: go test puts its bin first in PATH.
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "./examples/...")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}

	t.Run("segment", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "segment"), "-url", srv.URL, "-n", "5").CombinedOutput()
		if err != nil {
			t.Fatalf("segment: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != 6 || lines[0] != "1" || lines[4] != "5" || !strings.HasPrefix(lines[5], "5 IDs of test_business (1 … 5)") {
			t.Errorf("segment printed:\n%s\nwant the IDs 1 to 5 and a summary", out)
		}
	})

	t.Run("snowflake", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "snowflake"), "-url", srv.URL, "-worker-bits", "2", "-every", "50ms")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var lines []string
		for ids := 0; ids < 3 && sc.Scan(); {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), " worker ") {
				ids++
			}
		}
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		err = cmd.Wait()
		out := strings.Join(lines, "\n")
		if err != nil {
			t.Fatalf("snowflake after Ctrl-C: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
		}
		if !strings.HasPrefix(out, "leased worker ID ") || !strings.Contains(out, "released worker ID ") {
			t.Errorf("snowflake printed:\n%s\nwant a lease, IDs, and its release", out)
		}
		// Released: with the server holding one of the four worker IDs,
		// the other three are free again.
		g := newTestClient(t, Config{URLs: []string{srv.URL}}).Generator()
		for i := range 3 {
			if _, _, err := g.GetID(); err != nil {
				t.Fatalf("GetID #%d after the example exited: %v (its worker ID was not released)", i+1, err)
			}
		}
	})
}
